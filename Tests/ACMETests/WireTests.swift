import Foundation
import TestSupport
import Testing

@testable import ACME

/// The parsers of what a CA sends, fed hostile bytes: every refusal is a typed `ACMEError`, every
/// bound holds at N and refuses N+1.
@Suite("ACME wire parsers")
struct WireTests {
    static let directoryJSON = """
        {"newNonce":"https://ca.test/nonce","newAccount":"https://ca.test/acct","newOrder":"https://ca.test/order",
         "revokeCert":"https://ca.test/revoke","keyChange":"https://ca.test/key",
         "meta":{"termsOfService":"https://ca.test/tos","externalAccountRequired":true}}
        """

    @Test("a directory parses; a missing entry, an http URL, a duplicate key or a wrong type is refused")
    func directory() throws {
        let d = try ACMEDirectory(body: Array(Self.directoryJSON.utf8))
        #expect(d.newOrder.text == "https://ca.test/order" && d.externalAccountRequired && d.renewalInfo == nil)
        let bad = [
            #"{"newNonce":"https://a.test/n","newAccount":"https://a.test/a"}"#,
            #"{"newNonce":"http://a.test/n","newAccount":"https://a.test/a","newOrder":"https://a.test/o"}"#,
            #"{"newNonce":"https://a.test/n","newNonce":"https://b.test/n","newAccount":"https://a.test/a","newOrder":"https://a.test/o"}"#,
            #"{"newNonce":"https://a.test/n","newAccount":"https://a.test/a","newOrder":7}"#,
            #"{"newNonce":"https://a.test/ n","newAccount":"https://a.test/a","newOrder":"https://a.test/o"}"#,
            #"{"newNonce":"https://user@a.test/n","newAccount":"https://a.test/a","newOrder":"https://a.test/o"}"#,
            #"[1,2]"#, "", "{", "\u{FEFF}{}",
        ]
        for text in bad {
            #expect(throws: ACMEError.self, "\(text)") { try ACMEDirectory(body: Array(text.utf8)) }
        }
    }

    @Test("a body at the bound parses and one byte more is refused before parsing")
    func bodyBound() throws {
        let prefix = #"{"type":"urn:ietf:params:acme:error:malformed","detail":""#
        let suffix = #""}"#
        let fill = ACMELimits.maximumBodyBytes - prefix.utf8.count - suffix.utf8.count
        let atLimit = Array((prefix + String(repeating: "a", count: fill) + suffix).utf8)
        #expect(atLimit.count == ACMELimits.maximumBodyBytes)
        let problem = try ACMEProblem(body: atLimit)
        #expect(problem.detail.count == ACMELimits.maximumProblemText)
        let over = Array((prefix + String(repeating: "a", count: fill + 1) + suffix).utf8)
        #expect {
            try ACMEProblem(body: over)
        } throws: {
            ($0 as? ACMEError).map { "\($0)".contains("over \(ACMELimits.maximumBodyBytes) bytes") } ?? false
        }
    }

    @Test("a problem document: the type's short name, control and bidi characters replaced, subproblems one level deep")
    func problem() throws {
        let text = """
            {"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"no\\nway\\u0007\\u202Egnp.\\u2028","status":400,
             "subproblems":[{"type":"urn:ietf:params:acme:error:caa","identifier":{"type":"dns","value":"a.test"},
               "subproblems":[{"type":"deeper"}]}]}
            """
        let p = try ACMEProblem(body: Array(text.utf8))
        #expect(p.acmeType == "rejectedIdentifier" && p.detail == "no\u{FFFD}way\u{FFFD}\u{FFFD}gnp.\u{FFFD}" && p.status == 400)
        #expect(p.subproblems.count == 1 && p.subproblems[0].identifier == "a.test" && p.subproblems[0].subproblems.isEmpty)
        #expect(try ACMEProblem(body: Array(#"{"type":"urn:ietf:params:acme:error:badNonce"}"#.utf8)).isBadNonce)
    }

    @Test("a problem type's `urn:` and `ietf` compare without ASCII case (RFC 8141), the rest and any non-ASCII look-alike exactly")
    func problemTypeCase() {
        for type in ["URN:IETF:params:acme:error:caa", "Urn:iEtF:params:acme:error:caa", "urn:ietf:params:acme:error:caa"] {
            #expect(ACMEProblem(type: type).acmeType == "caa", "\(type)")
            #expect(ACMEError.problem(ACMEProblem(type: type), status: 403).isVerdictOnName, "\(type)")
        }
        #expect(ACMEProblem(type: "URN:ietf:params:acme:error:badNonce").isBadNonce)
        let refused = [
            "urn:ietf:PARAMS:acme:error:caa", "urn:ietf:params:ACME:error:caa", "urn:ietf:params:acme:ERROR:caa",
            "urn:\u{130}etf:params:acme:error:caa", "urn:\u{131}etf:params:acme:error:caa", "urn:ietf:params:acme:error",
            "urn;ietf:params:acme:error:caa", "urm:ietf:params:acme:error:caa", "", "urn:ietf:",
        ]
        for type in refused { #expect(ACMEProblem(type: type).acmeType == nil, "\(type)") }
        // The short name is kept as sent: its case is the CA's, and a combining mark stays on it.
        #expect(ACMEProblem(type: "URN:ietf:params:acme:error:CAA").acmeType == "CAA")
        #expect(ACMEProblem(type: "urn:ietf:params:acme:error:\u{301}caa").acmeType == "\u{301}caa")
        for status in [#"-1"#, #"1e3"#, #"4000000000"#, #"400.0"#, #""400""#] {
            #expect(throws: ACMEError.self, "\(status)") { try ACMEProblem(body: Array(#"{"type":"x","status":\#(status)}"#.utf8)) }
        }
    }

    @Test("an order and an authorization parse; a token outside base64url or over the bound is refused")
    func orderAndAuthorization() throws {
        let order = try ACMEOrder(
            body: Array(
                """
                {"status":"pending","expires":"2030-01-01T00:00:00Z","identifiers":[{"type":"dns","value":"A.Test"}],
                 "authorizations":["https://ca.test/authz/1"],"finalize":"https://ca.test/finalize/1"}
                """.utf8))
        #expect(order.status == .pending && order.identifiers == [ACMEIdentifier(dns: "a.test")] && order.authorizations.count == 1)
        #expect(throws: ACMEError.self) {
            try ACMEOrder(body: Array(#"{"status":"done","finalize":"https://ca.test/f"}"#.utf8))
        }
        #expect(throws: ACMEError.self) {
            try ACMEOrder(
                body: Array(#"{"status":"ready","finalize":"https://ca.test/f","identifiers":[{"type":"ip","value":"1.2.3.4"}]}"#.utf8))
        }
        #expect(throws: ACMEError.self) {
            try ACMEOrder(
                body: Array(#"{"status":"ready","finalize":"https://ca.test/f","identifiers":[{"type":"dns","value":"a/../b"}]}"#.utf8))
        }
        func challenge(_ token: String) -> [UInt8] {
            Array(#"{"type":"http-01","url":"https://ca.test/c","status":"pending","token":"\#(token)"}"#.utf8)
        }
        let atBound = String(repeating: "A", count: ACMELimits.maximumTokenLength)
        #expect(try ACMEChallenge(body: challenge(atBound)).token == atBound)
        for token in [atBound + "A", "", "../../etc/passwd", "a/b", "a.b", "YQ==", "a b"] {
            #expect(throws: ACMEError.self, "\(token)") { try ACMEChallenge(body: challenge(token)) }
        }
        let authz = try ACMEAuthorization(
            body: Array(
                """
                {"identifier":{"type":"dns","value":"a.test"},"status":"pending","challenges":[
                  {"type":"http-01","url":"https://ca.test/c/1","status":"pending","token":"abc_-DEF"},
                  {"type":"future-01","url":"https://ca.test/c/2","status":"pending"}]}
                """.utf8))
        #expect(authz.challenges.map(\.type) == ["http-01", "future-01"])
    }

    @Test("an array at the entry bound parses and one more is refused")
    func arrayBound() throws {
        func order(_ n: Int) -> [UInt8] {
            let urls = Array(repeating: #""https://ca.test/a""#, count: n).joined(separator: ",")
            return Array(#"{"status":"pending","finalize":"https://ca.test/f","authorizations":[\#(urls)]}"#.utf8)
        }
        #expect(try ACMEOrder(body: order(ACMELimits.maximumArrayCount)).authorizations.count == ACMELimits.maximumArrayCount)
        #expect(throws: ACMEError.self) { try ACMEOrder(body: order(ACMELimits.maximumArrayCount + 1)) }
    }

    @Test("a URL at the length bound is accepted and one byte more refused")
    func urlBound() throws {
        let base = "https://ca.test/"
        let atBound = base + String(repeating: "a", count: ACMELimits.maximumURLLength - base.utf8.count)
        #expect(try ACMEURL(atBound).text == atBound)
        #expect(throws: ACMEError.self) { try ACMEURL(atBound + "a") }
        for bad in ["https://", "https:///x", "ftp://a.test/", "https://a.test/\u{7F}", "https://a.test/é", "HTTP://a.test"] {
            #expect(throws: ACMEError.self, "\(bad)") { try ACMEURL(bad) }
        }
        #expect(try ACMEURL("HTTPS://a.test").text == "HTTPS://a.test")
    }

    static func headers(_ lines: [String]) -> ACMEHeaders {
        var h = ACMEHeaders()
        for line in lines { _ = h.add(line: Array((line + "\r\n").utf8)) }
        return h
    }

    @Test("Replay-Nonce: base64url and bounded, anything else is no nonce")
    func nonce() {
        #expect(Self.headers(["HTTP/1.1 200 OK", "Replay-Nonce: abc-_DEF"]).replayNonce == "abc-_DEF")
        let atBound = String(repeating: "n", count: ACMELimits.maximumNonceLength)
        #expect(Self.headers(["Replay-Nonce: \(atBound)"]).replayNonce == atBound)
        for bad in [atBound + "n", "", "a b", "abc=", "ab\u{1}c", "a+b/c"] {
            #expect(Self.headers(["Replay-Nonce: \(bad)"]).replayNonce == nil, "\(bad)")
        }
        // A second status line (after 100 Continue) forgets the first response's fields.
        #expect(Self.headers(["HTTP/1.1 100 Continue", "Replay-Nonce: old", "HTTP/1.1 200 OK"]).replayNonce == nil)
    }

    @Test("the header section is bounded: lines past the bound stop the transfer")
    func headerBound() {
        var h = ACMEHeaders()
        let line = Array(("X-Fill: " + String(repeating: "a", count: 1014) + "\r\n").utf8)
        #expect(line.count == 1024)
        for _ in 0..<(ACMELimits.maximumHeaderBytes / 1024) {
            let kept = h.add(line: line)
            #expect(kept)
        }
        let over = h.add(line: Array("X: y\r\n".utf8))
        #expect(!over)
    }

    @Test("Retry-After: delay-seconds saturate at the cap, an HTTP-date counts from now, garbage is nil")
    func retryAfter() {
        let now: Int64 = 1_700_000_000
        #expect(Self.headers(["Retry-After: 120"]).retryAfter(now: now) == 120)
        #expect(Self.headers(["Retry-After: 99999999999999999999999999999999"]).retryAfter(now: now) == ACMELimits.maximumRetryAfterSeconds)
        #expect(
            Self.headers(["Retry-After: \(ACMELimits.maximumRetryAfterSeconds + 1)"]).retryAfter(now: now)
                == ACMELimits.maximumRetryAfterSeconds)
        // 1700000000 is Tue, 14 Nov 2023 22:13:20 GMT.
        #expect(Self.headers(["Retry-After: Tue, 14 Nov 2023 22:15:20 GMT"]).retryAfter(now: now) == 120)
        #expect(Self.headers(["Retry-After: Tue, 14 Nov 2023 22:10:20 GMT"]).retryAfter(now: now) == 0)
        for bad in ["-1", "12s", "1.5", "", "Tue, 14 Nov 2023 22:15:20 PST"] {
            #expect(Self.headers(["Retry-After: \(bad)"]).retryAfter(now: now) == nil, "\(bad)")
        }
    }

    @Test("Link: several values and fields, quoted and bare rel, non-https targets dropped, a bounded count")
    func links() {
        let h = Self.headers([
            #"Link: <https://ca.test/dir>;rel="index", <https://ca.test/alt/1>; rel=alternate"#,
            #"Link: <https://ca.test/up,with,commas>; title="a \"q\" , b"; rel="up", <http://evil.test/>; rel="up""#,
        ])
        #expect(h.links(rel: "index").map(\.text) == ["https://ca.test/dir"])
        #expect(h.links(rel: "alternate").map(\.text) == ["https://ca.test/alt/1"])
        #expect(h.links(rel: "up").map(\.text) == ["https://ca.test/up,with,commas"])
        let many = Array(repeating: #"<https://ca.test/x>; rel="up alternate""#, count: 100).joined(separator: ", ")
        #expect(Self.headers(["Link: \(many)"]).links.count == ACMELimits.maximumLinks)
        for bad in ["<https://ca.test/x", "https://ca.test/x; rel=up", #"<https://ca.test/x>; rel="up"#] {
            #expect(Self.headers(["Link: \(bad)"]).links.isEmpty, "\(bad)")
        }
    }

    @Test("a PEM chain: certificates only, each decoded by OpenSSL, bounded in count")
    func chain() throws {
        let dir = try TemporaryDirectory(prefix: "acme-chain")
        let pem = try Self.certificatePEM(in: dir)
        let chain = try CertificateChain(pem: pem + Array("\n\r\n".utf8) + pem)
        #expect(chain.certificates.count == 2)
        #expect(try CertificateChain(pem: chain.pem).certificates == chain.certificates)
        let atBound = Array([[UInt8]](repeating: pem, count: ACMELimits.maximumChainCertificates).joined())
        #expect(try CertificateChain(pem: atBound).certificates.count == ACMELimits.maximumChainCertificates)
        let hostile: [[UInt8]] = [
            atBound + pem,
            [], Array("   \n".utf8),
            Array("explanatory text\n".utf8) + pem,
            pem + Array("trailing".utf8),
            Array(pem.prefix(pem.count - 30)),
            Array("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".utf8),
            Array("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n".utf8),
            Array(String(decoding: pem, as: UTF8.self).replacingOccurrences(of: "CERTIFICATE", with: "PRIVATE KEY").utf8),
        ]
        for (i, input) in hostile.enumerated() {
            #expect(throws: ACMEError.self, "case \(i)") { try CertificateChain(pem: input) }
        }
    }

    /// A self-signed EC certificate made by the openssl command line.
    static func certificatePEM(in dir: TemporaryDirectory) throws -> [UInt8] {
        let result = try Tool.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=chain.test",
                "-days", "1", "-keyout", dir.path("key.pem"), "-out", dir.path("cert.pem"),
            ])
        #expect(result.status == 0, "\(result.stderr)")
        return [UInt8](try Data(contentsOf: dir.url.appendingPathComponent("cert.pem")))
    }
}
