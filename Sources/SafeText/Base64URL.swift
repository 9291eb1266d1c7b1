/// base64url without padding (RFC 7515 §2, RFC 4648 §5): the encoding of every JWS part, JWK
/// coordinate, nonce and token in ACME, and of the tenant API's list cursor. The one
/// implementation; its decoder takes only the one canonical text of given bytes.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The encoding of `bytes`, without `=` padding.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var iterator = bytes.makeIterator()
        while let a = iterator.next() {
            let b = iterator.next()
            let c = iterator.next()
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | (b ?? 0) >> 4)])
            if let b { out.append(alphabet[Int((b & 0x0F) << 2 | (c ?? 0) >> 6)]) }
            if let c { out.append(alphabet[Int(c & 0x3F)]) }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The value of one base64url character, or nil for any other byte.
    @inline(__always)
    static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }

    /// Whether every byte is in the base64url alphabet (no padding, no white space): the rule for
    /// nonces (RFC 8555 §6.5.1) and tokens (§8.3).
    public static func isAlphabet(_ bytes: some Collection<UInt8>) -> Bool {
        bytes.allSatisfy { value($0) != nil }
    }

    /// The bytes of an unpadded base64url text, or nil when it holds another byte, padding, or a
    /// length no encoder produces (one character left over), or when the unused low bits of the
    /// last character are not zero (RFC 4648 §3.5: such text has more than one encoding).
    public static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text {
            guard let v = value(c) else { return nil }
            accumulator = (accumulator << 6 | UInt32(v)) & 0xFFFFFF
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // 6 bits left: one lone character. 2 or 4 bits: padding bits that must be zero.
        if bits >= 6 { return nil }
        if accumulator & ((1 << UInt32(bits)) - 1) != 0 { return nil }
        return out
    }

    /// The same, for a string.
    public static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)) }
}
