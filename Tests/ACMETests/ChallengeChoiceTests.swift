import Testing

@testable import ACME

/// Which challenge `issue` answers for an authorization, and which authorizations it accepts:
/// pure functions over parsed authorizations.
@Suite("ACME challenge choice")
struct ChallengeChoiceTests {
    /// An authorization for `value` offering `challenges` (type, status) in that order.
    static func authorization(_ value: String, wildcard: Bool = false, _ challenges: [(String, String)]) throws -> ACMEAuthorization {
        let list = challenges.enumerated().map { i, c in
            #"{"type":"\#(c.0)","url":"https://ca.test/chall/\#(i)","status":"\#(c.1)","token":"tok\#(i)"}"#
        }
        let body =
            #"{"identifier":{"type":"dns","value":"\#(value)"},"status":"pending","wildcard":\#(wildcard),"challenges":[\#(list.joined(separator: ","))]}"#
        return try ACMEAuthorization(body: Array(body.utf8))
    }

    @Test("the solver's preference decides, not the CA's order; unknown, invalid and valid challenges are passed over")
    func preference() throws {
        let offer = try Self.authorization(
            "a.test", [("dns-01", "pending"), ("tls-alpn-01", "pending"), ("http-01", "pending"), ("foo-01", "pending")])
        #expect(try ACMEClient.choose(from: offer, name: "a.test", types: ["tls-alpn-01", "http-01"]).type == "tls-alpn-01")
        #expect(try ACMEClient.choose(from: offer, name: "a.test", types: ["http-01", "dns-01"]).type == "http-01")
        let spent = try Self.authorization("a.test", [("http-01", "invalid"), ("dns-01", "pending"), ("tls-alpn-01", "valid")])
        #expect(try ACMEClient.choose(from: spent, name: "a.test", types: ["http-01", "tls-alpn-01", "dns-01"]).type == "dns-01")
        #expect(throws: ACMEError.noChallenge(name: "a.test", offered: ["dns-01", "http-01", "tls-alpn-01"], answerable: ["http-01"])) {
            try ACMEClient.choose(from: spent, name: "a.test", types: ["http-01"])
        }
    }

    @Test("a wildcard authorization takes dns-01 only, whatever the solver prefers")
    func wildcard() throws {
        let offer = try Self.authorization("a.test", wildcard: true, [("http-01", "pending"), ("dns-01", "pending")])
        #expect(try ACMEClient.choose(from: offer, name: "*.a.test", types: ["http-01", "dns-01"]).type == "dns-01")
        #expect(throws: ACMEError.self) { try ACMEClient.choose(from: offer, name: "*.a.test", types: ["http-01", "tls-alpn-01"]) }
    }

    @Test("an authorization maps to a requested name (wildcards with their base name); anything else is refused")
    func orderName() throws {
        let names = ["a.test", "*.b.test"]
        #expect(try ACMEClient.orderName(of: Self.authorization("a.test", []), names: names) == "a.test")
        #expect(try ACMEClient.orderName(of: Self.authorization("b.test", wildcard: true, []), names: names) == "*.b.test")
        for refused in [
            try Self.authorization("b.test", []), try Self.authorization("a.test", wildcard: true, []),
            try Self.authorization("*.b.test", []), try Self.authorization("*.b.test", wildcard: true, []),
            try Self.authorization("c.test", []),
        ] {
            #expect(throws: ACMEError.self, "\(refused.identifier) \(refused.wildcard)") {
                try ACMEClient.orderName(of: refused, names: names)
            }
        }
    }
}
