import SafeText
import Testing

/// The one base64url (Sources/SafeText/Base64URL.swift), which ACME's JWS, nonces and tokens and
/// the tenant API's list cursor share.
@Suite("base64url")
struct Base64URLTests {
    @Test("hostile text is refused: padding, the base64 characters, white space, controls, a lone character, stray bits")
    func hostile() {
        for bad in [
            "a", "aGVsbG8_Ph", "YQ==", "YQ=", "Y Q", "YQ\n", "YQ\r\n", "a+b/", "ab\u{0}c", "\u{00E9}\u{00E9}", "YWJj%3D", "aaaaa",
            "YR", "YWJ",
        ] {
            #expect(Base64URL.decode(bad) == nil, "\(bad.debugDescription)")
        }
        #expect(!Base64URL.isAlphabet(Array("ab=".utf8)))
        #expect(Base64URL.isAlphabet(Array("AZaz09-_".utf8)))
    }

    @Test("round trips at every length mod 3, no padding, only the URL-safe alphabet")
    func roundTrips() {
        for n in 0..<64 {
            let bytes = (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            let text = Base64URL.encode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(text.utf8.count == (n * 4 + 2) / 3)
            #expect(Base64URL.decode(text) == bytes)
            #expect(Base64URL.decode(Array(text.utf8)[...]) == bytes)
        }
        #expect(Base64URL.encode(Array("hello?>".utf8)) == "aGVsbG8_Pg")
        // Bytes that base64 writes with + and / (0xFB 0xFF): here - and _.
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
    }
}
