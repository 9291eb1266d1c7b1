import Foundation
import Outbound
import TestSupport
import Testing

@testable import ACME

/// The `acme.ask` contract against a stand-in server and stand-in programs: what is sent, what is
/// a yes, what is a no and what is a failure (redirects not followed, 5xx, slow, huge, down).
@Suite("ACME wildcard children: the ask contract")
struct ChildAskTests {
    @Test("the URL: domain= added to the query, percent-encoded; the setting's hostile values refused")
    func url() {
        #expect(ChildAsk.url("https://api.example/ask", name: "a.w.test") == "https://api.example/ask?domain=a.w.test")
        #expect(ChildAsk.url("https://api.example/ask?k=1", name: "a.w.test") == "https://api.example/ask?k=1&domain=a.w.test")
        #expect(ChildAsk.url("https://api.example/ask?", name: "a") == "https://api.example/ask?domain=a")
        #expect(ChildAsk.percentEncoded("a b&domain=x%\r\n\u{0}é") == "a%20b%26domain%3Dx%25%0D%0A%00%C3%A9")
        #expect(ChildAsk.problem("https://api.example/ask") == nil)
        #expect(ChildAsk.problem("http://127.0.0.1:9000/ask") == nil)
        #expect(ChildAsk.problem("http://[::1]/ask") == nil)
        #expect(ChildAsk.problem("/usr/local/bin/ask") == nil)
        for bad in [
            "", "http://api.example/ask", "http://127.0.0.1@evil.example/", "ftp://x/", "https://a.example/ask#frag",
            "https://a.example/a sk", "https://a.example/\r\nX: y", String(repeating: "a", count: ChildAsk.maximumLength + 1),
            "relative/program",
        ] {
            #expect(ChildAsk.problem(bad) != nil, "\(bad.debugDescription)")
        }
        #expect(ChildAsk.problem("https://a.example/" + String(repeating: "a", count: ChildAsk.maximumLength - 19)) == nil)
    }

    @Test("200 is yes and the request is GET path?domain=NAME; 404, 403, 301 (not followed) are no; 500 and 503 are failures")
    func statuses() throws {
        let folder = try TemporaryDirectory()
        let log = folder.path + "/asks"
        let server = try StandInServer(mode: "ask", body: "alice.w.test", log: log)
        let base = "http://127.0.0.1:\(server.port)/ask"
        #expect(ChildAsk.ask(.url(base), name: "alice.w.test").answer == .yes)
        #expect(ChildAsk.ask(.url(base), name: "bob.w.test").answer == .no)
        let asked = try String(contentsOfFile: log, encoding: .utf8)
        #expect(asked == "/ask?domain=alice.w.test\n/ask?domain=bob.w.test\n")
        for (status, answer) in [(403, ChildLedger.Answer.no), (301, .no), (302, .no), (500, .failed), (503, .failed), (204, .no)] {
            let stand = try StandInServer(mode: "status", body: "\(status)")
            #expect(ChildAsk.ask(.url("http://127.0.0.1:\(stand.port)/"), name: "a.w.test").answer == answer, "\(status)")
        }
        // A redirect to a server that would say yes is not followed.
        let yes = try StandInServer(mode: "echo")
        let redirect = try StandInServer(mode: "redirect", body: "http://127.0.0.1:\(yes.port)/")
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(redirect.port)/"), name: "a.w.test").answer == .no)
    }

    @Test("slow, down: failures, none longer than the limit; a huge body after a 200 is a yes (status only)")
    func failures() throws {
        let slow = try StandInServer(mode: "slow", body: "ok")
        let start = Date()
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(slow.port)/"), name: "a.w.test", timeoutMilliseconds: 500).answer == .failed)
        #expect(Date().timeIntervalSince(start) < 3)
        let huge = try StandInServer(mode: "huge", body: "x")
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(huge.port)/"), name: "a.w.test").answer == .yes)
        // The body bound itself, N and N+1.
        let atBound = try StandInServer(mode: "plain", body: String(repeating: "y", count: ChildAsk.maximumBodyBytes))
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(atBound.port)/"), name: "a.w.test").answer == .yes)
        let overBound = try StandInServer(mode: "plain", body: String(repeating: "y", count: ChildAsk.maximumBodyBytes + 1))
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(overBound.port)/"), name: "a.w.test").answer == .yes)
        // Nothing listens: refused at once (the port stays reserved, so no other test's server
        // can take it meanwhile).
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        #expect(ChildAsk.ask(.url("http://127.0.0.1:\(nobody.port)/"), name: "a.w.test").answer == .failed)
    }

    @Test("a program: exit 0 yes, other no; the name is its one argument, no shell; killed at the time limit")
    func program() throws {
        let folder = try TemporaryDirectory()
        func script(_ name: String, _ body: String) throws -> String {
            let path = folder.path + "/" + name
            try ("#!/bin/sh\n" + body + "\n").write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
            return path
        }
        let argv = folder.path + "/argv"
        let allow = try script("allow", "printf '%s|%s' \"$#\" \"$1\" > \(argv); [ \"$1\" = alice.w.test ]")
        #expect(ChildAsk.ask(.program(allow), name: "alice.w.test").answer == .yes)
        #expect(try String(contentsOfFile: argv, encoding: .utf8) == "1|alice.w.test")
        #expect(ChildAsk.ask(.program(allow), name: "bob.w.test").answer == .no)
        // Shell bytes reach the program as one argument, never a shell.
        #expect(ChildAsk.ask(.program(allow), name: "x;touch \(folder.path)/pwned").answer == .no)
        #expect(try String(contentsOfFile: argv, encoding: .utf8) == "1|x;touch \(folder.path)/pwned")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/pwned"))
        let hang = try script("hang", "sleep 30")
        let start = Date()
        #expect(ChildAsk.ask(.program(hang), name: "a.w.test", timeoutMilliseconds: 300).answer == .failed)
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(ChildAsk.ask(.program(folder.path + "/missing"), name: "a.w.test").answer == .failed)
        let chatty = try script("chatty", "head -c 10000000 /dev/zero; exit 0")
        #expect(ChildAsk.ask(.program(chatty), name: "a.w.test").answer == .yes)
        // The server's own variables (its secrets among them: AASAD_API_TOKEN, AASAD_ACME_EAB_*)
        // never reach the program; others do. A name of this test's own, so that no other test
        // sees it.
        let variable = "AASAD_ASK_TEST_SECRET"
        setenv(variable, "s3cret", 1)
        setenv("ASK_TEST_PLAIN", "p", 1)
        defer {
            unsetenv(variable)
            unsetenv("ASK_TEST_PLAIN")
        }
        let env = try script("env", "[ -z \"$\(variable)\" ] && [ \"$ASK_TEST_PLAIN\" = p ]")
        #expect(ChildAsk.ask(.program(env), name: "a.w.test").answer == .yes)
    }

    @Test("libcurl's account of a failure, which may quote the other side's certificate, is escaped for the log and /sites")
    func failureTextEscaped() {
        let quoted = OutboundError(
            .certificate, "SSL: certificate subject name 'a\u{1B}[2J\u{7}\n\u{202E}.test' does not match target host name 'b.test'")
        for text in [ChildAsk.detail(of: quoted), ACMEError.transport(from: quoted).description] {
            #expect(!text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x202E }, "\(text)")
            #expect(text.contains("does not match target host name 'b.test'"), "\(text)")
        }
        let plain = OutboundError(.connect, "Failed to connect to 127.0.0.1 port 1")
        #expect(ChildAsk.detail(of: plain) == "connect: Failed to connect to 127.0.0.1 port 1")
        #expect(ACMEError.transport(from: plain).description == "no answer from the CA: Failed to connect to 127.0.0.1 port 1")
    }
}
