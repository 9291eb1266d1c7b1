/// Lower-case hexadecimal for bytes, the one encoder the server uses: content digests and ETags
/// (SiteStore), the access log's `\u00XX` escapes (HTTPServer) and redirect targets' `%XX`.
package enum Hex {
    /// The sixteen digits, as bytes.
    package static let digits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends the two digits of `byte` to `out`, high nibble first.
    @inline(__always)
    package static func append(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 15)])
    }

    /// `%` and two upper-case digits: a URL's percent-encoding (RFC 3986 §2.1 prefers upper case).
    @inline(__always)
    package static func appendPercentEncoded(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(37)
        out.append(upperDigits[Int(byte >> 4)])
        out.append(upperDigits[Int(byte & 15)])
    }

    private static let upperDigits: [UInt8] = Array("0123456789ABCDEF".utf8)

    /// Two digits for each byte, written straight into the string's storage: digests are made
    /// for every file at load (the generic version below was 5 % of a start at 100,000 sites).
    package static func string(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { string($0) }
    }

    /// Two digits for each byte.
    package static func string(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            digits.withUnsafeBufferPointer { d in
                for (i, byte) in bytes.enumerated() {
                    out[2 * i] = d[Int(byte >> 4)]
                    out[2 * i + 1] = d[Int(byte & 15)]
                }
            }
            return bytes.count * 2
        }
    }

    /// Two digits for each byte.
    package static func string(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.underestimatedCount * 2)
        for byte in bytes { append(byte, to: &out) }
        return String(decoding: out, as: UTF8.self)
    }
}
