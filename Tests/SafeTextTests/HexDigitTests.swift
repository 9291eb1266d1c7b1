import Testing

@testable import SafeText

@Suite("HexDigit: one hex digit's value")
struct HexDigitTests {
    @Test("every byte: the value Swift's own radix-16 parser gives, either case, nothing else")
    func everyByte() {
        for byte in UInt8.min...UInt8.max {
            let expected = UInt8(String(UnicodeScalar(byte)), radix: 16)
            #expect(HexDigit.value(byte) == expected, "\(byte)")
        }
    }
}
