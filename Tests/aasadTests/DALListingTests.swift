import Check
import Foundation
import StrictJSON
import Testing

/// Reading Google's Digital Asset Links answers (`DALListing`) and comparing them with a served
/// file (`DALComparison`), hostile answers first.
@Suite("check --dal: Google's statements:list answer read and compared")
struct DALListingTests {
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"

    static func statement(site: String = "https://a.test.", package: String = "com.example.app", fingerprint: String = fingerprint)
        -> String
    {
        #"{"source": {"web": {"site": \#(JSONValue.quote(site))}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": \#(JSONValue.quote(package)), "certificate": {"sha256Fingerprint": \#(JSONValue.quote(fingerprint))}}}}"#
    }

    static func answer(_ statements: [String], extra: String = #""maxAge": "599.998s""#) -> [UInt8] {
        Array(#"{"statements": [\#(statements.joined(separator: ","))], \#(extra)}"#.utf8)
    }

    static func read(_ bytes: [UInt8], host: String = "a.test") -> Result<DALListing, DALListing.Refusal> {
        DALListing.read(bytes, host: host)
    }

    static func refusal(_ result: Result<DALListing, DALListing.Refusal>) -> String? {
        if case .failure(let refusal) = result { return refusal.message }
        return nil
    }

    @Test(
        "answers that are no statement list are refused, with nothing of them printed raw",
        arguments: [
            ("not JSON", "<html>502 Bad Gateway</html>", "not JSON"),
            ("deep JSON", String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), "not JSON"),
            ("a list", "[]", "not an object"),
            ("statements not a list", #"{"statements": {}}"#, "not a list"),
            ("maxAge not a duration", #"{"maxAge": "forever"}"#, "not a duration"),
            ("maxAge of many digits", #"{"maxAge": "1234567890123s"}"#, "not a duration"),
            ("debugString a number", #"{"debugString": 1}"#, "not a string"),
            ("a statement without a site", #"{"statements": [{"relation": "x"}]}"#, "no source.web.site"),
        ])
    func hostile(_ name: String, _ body: String, _ expected: String) throws {
        let refused = Self.refusal(Self.read(Array(body.utf8)))
        let message = try #require(refused, "\(name)")
        #expect(message.contains(expected), "\(name): \(message)")
    }

    @Test("statements about another site make the answer an error, never a difference")
    func anotherSite() throws {
        for site in ["https://evil.test.", "https://a.test.evil.test", "http://a.test", "https://a.test:8443", "https://a.test/x"] {
            let refused = Self.refusal(Self.read(Self.answer([Self.statement(), Self.statement(site: site)])))
            let message = try #require(refused, "\(site)")
            #expect(message.hasPrefix("statements[1]: the statement is about"), "\(message)")
        }
        for site in ["https://a.test", "https://a.test.", "https://A.TEST."] {
            #expect(Self.refusal(Self.read(Self.answer([Self.statement(site: site)]))) == nil, "\(site)")
        }
    }

    @Test("a package name with controls, bidi or a space is refused and quoted escaped; a bad fingerprint too")
    func hostileValues() throws {
        for package in ["com.example\u{202E}ppa", "com.example\u{1B}]0;x\u{07}", "com.example\napp", "com example", "", "é.app"] {
            let refused = Self.refusal(Self.read(Self.answer([Self.statement(package: package)])))
            let message = try #require(refused, "\(package)")
            #expect(message.contains("is no Android package name"))
            #expect(!message.unicodeScalars.contains { $0 == "\u{202E}" || $0 == "\u{1B}" || $0 == "\n" }, "\(message.debugDescription)")
        }
        let long = String(repeating: "a", count: DALListing.maximumPackageNameBytes)
        #expect(Self.refusal(Self.read(Self.answer([Self.statement(package: long)]))) == nil, "255 bytes")
        #expect(Self.refusal(Self.read(Self.answer([Self.statement(package: long + "a")]))) != nil, "256 bytes")
        for bad in [
            String(Self.fingerprint.dropLast()), Self.fingerprint + ":00", Self.fingerprint.replacingOccurrences(of: ":", with: "-"),
            "\u{202E}",
        ] {
            #expect(
                Self.refusal(Self.read(Self.answer([Self.statement(fingerprint: bad)])))?.contains("no SHA-256 fingerprint") == true,
                "\(bad)")
        }
    }

    @Test("at most maximumStatements statements are read: N is compared, N+1 refused")
    func statementBound() throws {
        let n = DALListing.maximumStatements
        let many = (0..<n).map { Self.statement(package: "com.example.a\($0)") }
        guard case .success(let listing) = Self.read(Self.answer(many)) else {
            Issue.record("\(n) statements refused")
            return
        }
        #expect(listing.apps.count == n)
        #expect(Self.refusal(Self.read(Self.answer(many + [Self.statement(package: "com.example.more")])))?.contains("more than") == true)
    }

    @Test("maxAge and debugString are kept as given; debugString escaped and cut at maximumDebugBytes")
    func fields() throws {
        let debug = "ERROR\n\u{202E}x\u{1B}[2J" + String(repeating: "y", count: 10_000)
        let body = Self.answer([Self.statement()], extra: #""maxAge": "3.5s", "debugString": \#(JSONValue.quote(debug))"#)
        guard case .success(let listing) = Self.read(body) else {
            Issue.record("refused")
            return
        }
        #expect(listing.maxAge == "3.5s")
        let kept = try #require(listing.debugString)
        #expect(kept.hasPrefix("ERROR\\x0A\\u{202E}x\\x1B[2J"))
        #expect(!kept.unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{202E}" })
        #expect(kept.utf8.count < DALListing.maximumDebugBytes + 64)
        for age in ["0s", "599s", "599.998s", "1.123456789s", "123456789012s"] {
            #expect(Self.refusal(Self.read(Array(#"{"maxAge": "\#(age)"}"#.utf8))) == nil, "\(age)")
        }
        for age in ["s", ".5s", "1.s", "1.1234567890s", "1", "-1s", "1e3s"] {
            #expect(Self.refusal(Self.read(Array(#"{"maxAge": "\#(age)"}"#.utf8))) != nil, "\(age)")
        }
    }

    @Test("other relations and web targets are not apps; repeats count once; fingerprints compare in upper case")
    func apps() throws {
        let web =
            #"{"source": {"web": {"site": "https://a.test."}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"web": {"site": "https://b.test."}}}"#
        let other =
            #"{"source": {"web": {"site": "https://a.test."}}, "relation": "delegate_permission/common.get_login_creds", "target": {"androidApp": {"packageName": "x", "certificate": {"sha256Fingerprint": "no"}}}}"#
        let lower = Self.statement(fingerprint: Self.fingerprint.lowercased())
        guard case .success(let listing) = Self.read(Self.answer([web, other, Self.statement(), lower])) else {
            Issue.record("refused")
            return
        }
        #expect(listing.apps == [AndroidApp(packageName: "com.example.app", fingerprint: Self.fingerprint)])
        #expect(Self.read(Array("{}".utf8)) == .success(DALListing(apps: [])), "no statements: an empty listing")
    }

    @Test("states: current, stale with each side's extra apps, missing, error")
    func states() {
        let a = AndroidApp(packageName: "com.example.a", fingerprint: Self.fingerprint)
        let b = AndroidApp(packageName: "com.example.b", fingerprint: Self.fingerprint)
        func report(_ listed: Set<AndroidApp>, _ served: Set<AndroidApp>) -> DALReport {
            DALComparison(status: 200, result: .success(DALListing(apps: listed)), served: served).report(url: "u")
        }
        #expect(report([a], [a]).state == .current)
        let stale = report([a], [b])
        #expect(stale.state == .stale)
        #expect(stale.onlyAtGoogle == [a])
        #expect(stale.onlyServed == [b])
        #expect(report([], [a]).state == .missing)
        let failed = DALComparison(status: 429, result: .failure(DALListing.Refusal(message: "quota")), served: [a]).report(url: "u")
        #expect(failed.state == .error)
        #expect(failed.error == "quota")
    }

    @Test("the API key's bound: 256 unreserved bytes taken, 257 refused; CR, LF, '&', '%' and space refused")
    func keyBound() {
        #expect(DALProbe.keyProblem(String(repeating: "K", count: DALProbe.maximumKeyBytes)) == nil)
        #expect(DALProbe.keyProblem(String(repeating: "K", count: DALProbe.maximumKeyBytes + 1)) != nil)
        #expect(DALProbe.keyProblem("AIzaSyD-k3y_SECRET.value~0123456789abcd") == nil)
        for key in ["a\rb", "a\nb", "a&b", "a%20", "a b", "a\u{0}", "é"] {
            let problem = DALProbe.keyProblem(key)
            #expect(problem != nil && problem?.contains(key) == false, "\(key.debugDescription)")
        }
    }
}
