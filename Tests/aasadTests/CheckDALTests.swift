import Foundation
import SafeText
import TestSupport
import Testing

/// `aasad check --dal` (the real binary) against a fake Digital Asset Links API over TLS
/// (Fixtures/fake_origin_cdn.py), which lists what the origin's assetlinks.json says unless a
/// test gives it another answer.
@Suite("aasad check --dal: Google's view of a host's assetlinks.json")
final class CheckDALTests {
    let server: FakeOriginCDN
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    static let other = "AA:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
    /// Hosts the fake's certificate names, each given an assetlinks.json.
    static let hosts = [
        "good.test", "stale.test", "missing.test", "cdnerror.test", "reformatted.test", "html.test", "invalid.test", "app.test",
        "expiring.test", "botblock.test", "redirect.test",
    ]

    static func assetLinks(_ package: String = "com.example.app", _ fingerprint: String = fingerprint) -> [UInt8] {
        Array(
            #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "\#(package)", "sha256_cert_fingerprints": ["\#(fingerprint)"]}}]"#
                .utf8)
    }

    static func listing(_ host: String, _ package: String, _ fingerprint: String = fingerprint) -> [UInt8] {
        Array(
            #"{"statements": [{"source": {"web": {"site": "https://\#(host)."}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": "\#(package)", "certificate": {"sha256Fingerprint": "\#(fingerprint)"}}}}], "maxAge": "12.5s"}"#
                .utf8)
    }

    init() throws {
        server = try FakeOriginCDN()
        for host in Self.hosts {
            try server.origin(host, FakeOriginCDN.aasa(1))
            try server.origin(host + ".assetlinks", Self.assetLinks())
        }
        // Google still lists last month's signing key.
        try server.dalAnswer("stale.test", Self.listing("stale.test", "com.example.app", Self.other))
        try server.dalAnswer(
            "missing.test", Array(#"{"maxAge": "300s", "debugString": "ERROR: fetch failed: 404 Not Found\n"}"#.utf8))
        try server.dalAnswer(
            "cdnerror.test", Array(#"{"error": {"code": 429, "message": "Quota exceeded\u001b[2J", "status": "RESOURCE_EXHAUSTED"}}"#.utf8),
            status: 429)
        try server.dalAnswer("reformatted.test", Array("<html>Internal error</html>".utf8), status: 500)
        try server.dalAnswer("html.test", Array("<html>not json</html>".utf8))
        try server.dalAnswer("invalid.test", Array((String(repeating: "[", count: 5_000) + String(repeating: "]", count: 5_000)).utf8))
        // A stand-in that ignores the query: statements about another site.
        try server.dalAnswer("app.test", Self.listing("good.test", "com.example.app"))
        // 10 MB, far over the client's 256 KB.
        try server.dalAnswer("expiring.test", Array(repeating: UInt8(ascii: " "), count: 10 << 20))
        // A package name holding a bidi override and an OSC sequence, as JSON escapes (the parser
        // refuses raw controls in a string, which is another refusal).
        try server.dalAnswer("botblock.test", Self.listing("botblock.test", #"com.example\u202Eppa.\u001b]0;pwned\u0007"#))
        try server.dalAnswer("redirect.test", [], status: 301)
    }

    func check(_ hosts: [String], _ extra: [String] = []) throws -> (status: Int32, hosts: [[String: Any]], stdout: String) {
        let out = try AASAD.run(server.arguments(hosts) + ["--cdn", "none", "--format", "json"] + extra)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any], "\(out.stderr)")
        let hosts = try #require(object["hosts"] as? [[String: Any]])
        return (out.status, hosts, out.stdout)
    }

    static func dal(_ report: [String: Any]) -> [String: Any]? { report["dal"] as? [String: Any] }

    static func codes(_ report: [String: Any]) -> [String] {
        ((report["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }.filter { $0.hasPrefix("dal-") }
    }

    @Test("the API lists what the origin serves: current, exit 0, the query and maxAge as given")
    func current() throws {
        let result = try check(["good.test"])
        #expect(result.status == 0, "\(result.stdout)")
        let report = try #require(result.hosts.first)
        let dal = try #require(Self.dal(report))
        #expect(dal["state"] as? String == "current")
        #expect(dal["status"] as? Int == 200)
        #expect(dal["maxAge"] as? String == "599.998s")
        #expect((dal["listed"] as? [[String: String]]) == [["packageName": "com.example.app", "fingerprint": Self.fingerprint]])
        #expect(
            server.dalRequests.last
                == "source.web.site=https%3A%2F%2Fgood.test&relation=delegate_permission%2Fcommon.handle_all_urls")
        let text = try AASAD.run(server.arguments(["good.test"]) + ["--cdn", "none"])
        #expect(text.status == 0)
        #expect(text.stdout.contains("  Google DAL: current (200), maxAge 599.998s\n    listed: com.example.app \(Self.fingerprint)\n"))
    }

    @Test(
        "each state and API failure is reported with its code, a fix, and exit 1",
        arguments: [
            ("stale.test", "stale", "dal-stale", "only at Google: com.example.app AA:6D"),
            ("missing.test", "missing", "dal-missing", "lists no app"),
            ("cdnerror.test", "error", "dal-error", "the API answered 429 (its quota is used up): Quota exceeded\\x1B[2J"),
            ("reformatted.test", "error", "dal-error", "the API answered 500"),
            ("html.test", "error", "dal-error", "not JSON"),
            ("invalid.test", "error", "dal-error", "not JSON"),
            ("app.test", "error", "dal-error", "not https://app.test"),
            ("expiring.test", "error", "dal-error", "could not be used"),
            ("botblock.test", "error", "dal-error", "is no Android package name"),
            ("redirect.test", "error", "dal-error", "the API answered 301"),
        ])
    func states(_ host: String, _ state: String, _ code: String, _ message: String) throws {
        let result = try check([host])
        let report = try #require(result.hosts.first)
        #expect(Self.dal(report)?["state"] as? String == state, "\(result.stdout)")
        #expect(Self.codes(report) == [code])
        #expect(result.status == 1)
        let problem = try #require((report["problems"] as? [[String: Any]])?.first { $0["code"] as? String == code })
        #expect((problem["message"] as? String)?.contains(message) == true, "\(problem)")
        #expect(!((problem["fix"] as? String) ?? "").isEmpty)
        // The text form shows the same, with nothing the API sent reaching the terminal raw.
        let text = try AASAD.run(server.arguments([host]) + ["--cdn", "none"])
        #expect(text.stdout.contains("Google DAL: \(state)"))
        expectClean(text.stdout)
        expectClean(result.stdout)
    }

    @Test("a stale answer names what each side has alone, and the debugString when not current")
    func differences() throws {
        let result = try check(["stale.test", "missing.test"])
        let stale = try #require(Self.dal(result.hosts[0]))
        #expect((stale["onlyAtGoogle"] as? [[String: String]])?.first?["fingerprint"] == Self.other)
        #expect((stale["onlyServed"] as? [[String: String]])?.first?["fingerprint"] == Self.fingerprint)
        #expect(stale["maxAge"] as? String == "12.5s")
        let missing = try #require(Self.dal(result.hosts[1]))
        #expect(missing["debugString"] as? String == "ERROR: fetch failed: 404 Not Found\\x0A")
        let text = try AASAD.run(server.arguments(["missing.test"]) + ["--cdn", "none"])
        #expect(text.stdout.contains("    debugString: ERROR: fetch failed: 404 Not Found\\x0A\n"))
    }

    @Test("a slow API is cut at --timeout: an error, not a hang")
    func slow() throws {
        try server.dalAnswer("good.test", nil, sleep: 4)
        defer { try? server.dalAnswer("good.test", nil) }
        let started = Date()
        let result = try check(["good.test"], ["--timeout", "1"])
        #expect(Date().timeIntervalSince(started) < 4)
        let report = try #require(result.hosts.first)
        #expect(Self.dal(report)?["state"] as? String == "error")
        #expect(result.status == 1)
    }

    @Test("--dal none, or a host without assetlinks.json, asks nothing: dal is null")
    func notAsked() throws {
        try server.origin("notfound.test", FakeOriginCDN.aasa(1))
        let before = server.dalRequests.count
        let result = try check(["good.test", "notfound.test"], ["--dal", "none"])
        #expect(result.hosts.allSatisfy { $0["dal"] is NSNull })
        let without = try check(["notfound.test"])
        #expect(without.hosts.first?["dal"] is NSNull)
        #expect(without.status == 0)
        #expect(server.dalRequests.count == before)
    }

    @Test("--dal takes an https URL without a query, or none", arguments: ["http://dal.test/v1/statements:list", "https://x/?a=1", "x"])
    func usage(_ url: String) throws {
        #expect(try AASAD.run(["check", "--dal", url, "good.test"]).status == 64)
    }

    /// A key shaped as Google's: `AIza` and 35 more.
    static let key = "AIzaSyD-k3y_SECRET.value~0123456789abcd"

    @Test("--dal-key (or AASAD_DAL_KEY) is sent as key=, and never printed: not in the report's url, text or JSON")
    func key() throws {
        let result = try check(["good.test"], ["--dal-key", Self.key])
        #expect(result.status == 0, "\(result.stdout)")
        #expect(server.dalRequests.last?.hasSuffix("&key=\(Self.key)") == true, "\(server.dalRequests)")
        #expect(!result.stdout.contains(Self.key))
        #expect((Self.dal(try #require(result.hosts.first))?["url"] as? String)?.contains("key") == false)
        // From the environment, and in the text form; an API error echoing the key shows it
        // redacted.
        try server.dalAnswer(
            "cdnerror.test", Array(#"{"error": {"code": 400, "message": "API key \#(Self.key) not valid"}}"#.utf8), status: 400)
        defer { try? server.dalAnswer("cdnerror.test", nil) }
        let text = try AASAD.run(
            server.arguments(["good.test", "cdnerror.test"]) + ["--cdn", "none"], environment: ["AASAD_DAL_KEY": Self.key])
        #expect(server.dalRequests.suffix(2).allSatisfy { $0.hasSuffix("&key=\(Self.key)") }, "\(server.dalRequests)")
        #expect(!text.stdout.contains(Self.key) && !text.stderr.contains(Self.key), "\(text.stdout)")
        #expect(text.stdout.contains("API key [key] not valid"), "\(text.stdout)")
        #expect(text.stdout.contains("check the key given with --dal-key"))
    }

    @Test(
        "a key that is not 1 to 256 unreserved bytes is refused (exit 64) without being echoed",
        arguments: ["k\r\nX-Injected: 1", "k&relation=x", "k%0d", "k y", "k\u{202E}", "", String(repeating: "K", count: 257)])
    func badKey(_ key: String) throws {
        let out = try AASAD.run(["check", "--dal-key", key, "good.test"])
        #expect(out.status == 64, "\(out.stderr)")
        #expect(out.stderr.contains("--dal-key must be 1 to 256 bytes"), "\(out.stderr)")
        // Neither the key nor its escaped form (a raw CR LF or U+202E would be escaped on the
        // way out, and the raw form alone would then never be found).
        let forms = key.count > 1 ? [key, TerminalText.escaped(key)] : []
        for form in forms { #expect(!out.stderr.contains(form), "\(out.stderr)") }
        let fromEnvironment = try AASAD.run(server.arguments(["good.test"]) + ["--cdn", "none"], environment: ["AASAD_DAL_KEY": key])
        #expect(fromEnvironment.status == (key.isEmpty ? 0 : 64), "an empty variable is no key: \(fromEnvironment.stderr)")
        for form in forms { #expect(!fromEnvironment.stderr.contains(form), "\(fromEnvironment.stderr)") }
    }

    @Test("without a way to Google the API is a dal-error (exit 1) whose fix names --dal none; with it, exit 0")
    func noEgress() throws {
        // Port 9 on loopback: nothing listens, as on a machine without a route out (no
        // --dal-connect-to, which would send it to the fake API).
        let out = try AASAD.run([
            "check", "--cacert", server.caFile, "--cdn", "none", "--connect-to", server.connectTo, "--dal",
            "https://127.0.0.1:9/v1/statements:list", "--timeout", "10", "good.test",
        ])
        #expect(out.status == 1)
        #expect(out.stdout.contains("error [dal-error]") && out.stdout.contains("give --dal none"), "\(out.stdout)")
        // With a key: the refused connection's message names the URL, the key redacted.
        for format in [["--format", "text"], ["--format", "json"]] {
            let keyed = try AASAD.run(
                [
                    "check", "--cacert", server.caFile, "--cdn", "none", "--connect-to", server.connectTo, "--dal",
                    "https://127.0.0.1:9/v1/statements:list", "--dal-key", Self.key, "--timeout", "10", "good.test",
                ] + format)
            #expect(keyed.status == 1)
            #expect(keyed.stdout.contains("127.0.0.1") && keyed.stdout.contains("[key]"), "\(keyed.stdout)")
            #expect(!keyed.stdout.contains(Self.key) && !keyed.stderr.contains(Self.key), "\(keyed.stdout)\(keyed.stderr)")
            #expect(!keyed.stdout.contains("AIzaSyD") && !keyed.stderr.contains("AIzaSyD"))
        }
        let none = try AASAD.run(server.arguments(["good.test"]) + ["--cdn", "none", "--dal", "none"])
        #expect(none.status == 0, "\(none.stdout)")
    }
}
