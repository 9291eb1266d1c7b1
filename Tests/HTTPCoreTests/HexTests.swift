import Testing

@testable import HTTPCore

@Suite("Hex: the one hexadecimal encoder")
struct HexTests {
    @Test("two lower-case digits per byte, high nibble first, for every byte value")
    func everyByte() {
        let all = (0...255).map { UInt8($0) }
        let text = Hex.string(all)
        #expect(text.utf8.count == 512)
        for byte in all {
            let start = text.utf8.index(text.utf8.startIndex, offsetBy: Int(byte) * 2)
            let pair = String(text.utf8[start..<text.utf8.index(start, offsetBy: 2)])
            #expect(pair == String(repeating: "0", count: byte < 16 ? 1 : 0) + String(byte, radix: 16), "\(byte)")
        }
        #expect(Hex.string([]) == "")
        #expect(Hex.string([0xDE, 0xAD, 0xBE, 0xEF]) == "deadbeef")
    }

    @Test("append adds exactly two digits to what is there")
    func append() {
        var out = Array("\\u00".utf8)
        Hex.append(0x1F, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "\\u001f")
    }
}
