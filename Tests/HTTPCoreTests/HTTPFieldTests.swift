import Testing

@testable import HTTPCore

@Suite("Response field values (RFC 9110 §5.5), as bytes")
struct HTTPFieldTests {
    @Test("visible ASCII with inner spaces and tabs is a value")
    func valid() {
        for text in ["max-age=3600", "public, max-age=60", "a\tb c", "x", "!~"] {
            #expect(HTTPField.valueProblem(Array(text.utf8)) == nil, "\(text.debugDescription)")
            #expect(HTTPField.isValidValue(Array(text.utf8)))
        }
        #expect(HTTPField.isValidValue([]), "an empty value is a value")
    }

    @Test("CR, LF, NUL, DEL, other controls and obs-text are refused at their offset")
    func badBytes() {
        for byte: UInt8 in [0x00, 0x0A, 0x0D, 0x01, 0x1F, 0x7F, 0x80, 0xFF] {
            let value: [UInt8] = Array("ab".utf8) + [byte] + Array("cd".utf8)
            #expect(HTTPField.valueProblem(value) == .byte(byte, offset: 2), "0x\(String(byte, radix: 16))")
        }
        // "\r\n" is one Character in Swift; byte by byte it is two refused bytes, the first reported.
        #expect(HTTPField.valueProblem(Array("max-age=1\r\nSet-Cookie: x".utf8)) == .byte(13, offset: 9))
        #expect(HTTPField.valueProblem(Array("x\r\n".utf8))?.description.hasPrefix("byte 2 is 0x0D (CR)") == true)
    }

    @Test("leading or trailing space or tab is refused")
    func surroundingWhitespace() {
        for text in [" x", "x ", "\tx", "x\t", " "] {
            #expect(HTTPField.valueProblem(Array(text.utf8)) == .surroundingWhitespace, "\(text.debugDescription)")
        }
    }

    @Test("the length bound: maximumValueLength bytes pass, one more is refused")
    func lengthBound() {
        let atBound = [UInt8](repeating: 0x61, count: HTTPField.maximumValueLength)
        #expect(HTTPField.valueProblem(atBound) == nil)
        #expect(HTTPField.valueProblem(atBound + [0x61]) == .tooLong(HTTPField.maximumValueLength + 1))
    }
}

@Suite("Log and JSON time formats")
struct HTTPDateFormatTests {
    @Test("the Common Log Format time and RFC 3339 UTC, at RFC 9110's example instant and the epoch")
    func formats() {
        #expect(HTTPDate.common(784_111_777) == "06/Nov/1994:08:49:37 +0000")
        #expect(HTTPDate.iso8601(784_111_777) == "1994-11-06T08:49:37Z")
        #expect(HTTPDate.common(0) == "01/Jan/1970:00:00:00 +0000")
        #expect(HTTPDate.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(HTTPDate.iso8601(253_402_300_799) == "9999-12-31T23:59:59Z")
    }
}
