/// UTF-8 well-formedness as RFC 3629 defines it: no overlong forms, no surrogates, nothing above
/// U+10FFFF, no truncated sequences.
package enum UTF8Validation {
    package static func firstInvalidOffset(in bytes: [UInt8]) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            if bytes[i] < 0x80 {
                i += 1
                continue
            }
            guard let length = sequenceLength(in: bytes, at: i) else { return i }
            i += length
        }
        return nil
    }

    /// The length of the well-formed sequence that starts at `i` (1 to 4), or nil when the bytes
    /// there are not one (RFC 3629 §4's table: the second byte's range depends on the first).
    @inline(__always)
    package static func sequenceLength(in bytes: [UInt8], at i: Int) -> Int? {
        let b0 = bytes[i]
        if b0 < 0x80 { return 1 }
        let length: Int
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; upper = 0x9F
        case 0xF0: length = 4; lower = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; upper = 0x8F
        default: return nil
        }
        guard i + length <= bytes.count else { return nil }
        let b1 = bytes[i + 1]
        guard b1 >= lower && b1 <= upper else { return nil }
        for k in 2..<max(2, length) where bytes[i + k] & 0xC0 != 0x80 {
            return nil
        }
        return length
    }
}
