import Foundation
import TestSupport
import Testing

/// `aasad site` against a hostile stand-in of the tenant API (Fixtures/api_hostile.py): what it
/// prints is escaped, what it reads is bounded, it times out, follows no redirect, and sends its
/// token over plain http to a loopback address only.
@Suite("aasad site: the tenant API's client against hostile servers", .serialized)
struct SiteClientTests {
    /// A running api_hostile.py in one mode, stopped when released.
    final class HostileAPI {
        let process = Process()
        let port: Int

        init(_ mode: String) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [Tool.python3, AASAD.testDirectory.appendingPathComponent("Fixtures/api_hostile.py").path, mode]
            let out = Pipe()
            process.standardOutput = out
            try process.run()
            // The port line, a byte at a time with read(2): FileHandle's reads wait for more.
            var line: [UInt8] = []
            var byte: UInt8 = 0
            while line.count < 16, read(out.fileHandleForReading.fileDescriptor, &byte, 1) == 1, byte != 0x0A { line.append(byte) }
            port = Int(String(decoding: line, as: UTF8.self)) ?? 0
        }

        deinit {
            // SIGKILL, not terminate(): the test process blocks SIGTERM for its in-process daemons'
            // signal waits, a child inherits that mask, and the stand-in would never see SIGTERM.
            process.killAndWait()
        }

        var url: String { "http://127.0.0.1:\(port)" }
    }

    /// Runs `aasad ARGS` with AASAD_API_TOKEN set (and AASAD_API_URL unset).
    static func site(_ arguments: [String], token: String? = "t0ken") throws -> AASAD.Output {
        try AASAD.run(["site"] + arguments, environment: ["AASAD_API_URL": nil, "AASAD_API_TOKEN": token])
    }

    static func aasaFile() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "aasad-site")
        try directory.write("aasa.json", Array(#"{"applinks":{"details":[]}}"#.utf8))
        return directory
    }

    @Test(
        "problems with ANSI escapes, CR/LF, C1 and bidi characters are printed escaped, exit 1")
    func escapedProblems() throws {
        let api = try HostileAPI("ansi")
        let files = try Self.aasaFile()
        let out = try Self.site(["put", "a.example", "--aasa", files.path("aasa.json"), "--api", api.url])
        #expect(out.status == 1)
        let all = out.stdout + out.stderr
        #expect(!all.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x0D || $0.value == 0x85 || $0.value == 0x202E })
        #expect(out.stderr.contains(#"bad\x1B[2J"#))
        // One line per problem: the server's CR/LF cannot start a line of its own.
        #expect(out.stderr.split(separator: "\n").count == 1)
    }

    @Test(
        "an answer over the client's bound is cut, exit 3")
    func hugeAnswer() throws {
        let api = try HostileAPI("huge")
        let out = try Self.site(["get", "a.example", "--api", api.url])
        #expect(out.status == 3)
        #expect(out.stderr.contains("over 4194304 bytes"))
    }

    @Test(
        "a server that never answers is given up at --timeout, exit 3")
    func silentServer() throws {
        let api = try HostileAPI("silent")
        let started = ContinuousClock.now
        let out = try Self.site(["get", "a.example", "--timeout", "2", "--api", api.url])
        #expect(out.status == 3)
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(out.stderr.contains("timed out"))
    }

    @Test("a redirect is reported, not followed, exit 1")
    func redirect() throws {
        let api = try HostileAPI("redirect")
        let out = try Self.site(["get", "a.example", "--api", api.url])
        #expect(out.status == 1)
        #expect(out.stderr.contains("not followed"))
        #expect(!out.stderr.contains("could not be reached"))
    }

    @Test(
        "plain http to anything but a loopback literal, user info, a token in a flag: refused before any request, exit 2",
        arguments: [
            "http://10.0.0.1:8444", "http://example.com:8444", "http://127.0.0.1:80@example.com", "http://127.1:8444",
            "http://0x7f.0.0.1:8444", "http://127.0.0.1.example.com", "ftp://127.0.0.1", "http://[::2]:8444",
        ])
    func refusedPlainHTTP(_ url: String) throws {
        let out = try Self.site(["get", "a.example", "--api", url])
        #expect(out.status == 2)
    }

    @Test(
        "host names outside the API's form never reach the path, exit 2",
        arguments: ["../x", "A.example", "a.example.", "a/b", "a%2e", "*", "a..b", "-a.example"])
    func refusedHosts(_ host: String) throws {
        let out = try Self.site(["get", host, "--api", "http://127.0.0.1:1"])
        #expect(out.status == 2)
    }

    @Test("no token: exit 2; a token with a control byte: exit 2; unreachable API: exit 3")
    func tokenAndReachability() throws {
        #expect(try Self.site(["get", "a.example", "--api", "http://127.0.0.1:1"], token: nil).status == 2)
        #expect(try Self.site(["get", "a.example", "--api", "http://127.0.0.1:1"], token: "a\r\nX: 1").status == 2)
        #expect(try Self.site(["get", "a.example", "--api", "http://127.0.0.1:1"]).status == 3)
    }

    @Test(
        "a 2xx is exit 0, the token sent as a Bearer field, the path as given")
    func ok() throws {
        let api = try HostileAPI("ok")
        let out = try Self.site(["get", "*.a.example", "--api", "http://localhost:\(api.port)"])
        #expect(out.status == 0)
        #expect(out.stdout.contains("/v1/sites/*.a.example Bearer t0ken"))
    }
}
