/// Text from outside the program (a file's contents, a file name, a URL argument, what a remote
/// server sent) made safe to show on a terminal or in a log line: the one escaper every text
/// printer and the text log use.
///
/// Escaped, as visible text:
/// - C0 controls (CR, LF and TAB included: one value stays on one line), ESC and DEL as `\xHH`;
/// - C1 controls (U+0080–U+009F: CSI, NEL…), the line and paragraph separators (U+2028, U+2029)
///   and the bidirectional formatting characters (U+061C, U+200E, U+200F, U+202A–U+202E,
///   U+2066–U+2069) as `\u{HHHH}`: an ESC or CSI sequence would move the cursor or retitle the
///   window, a line break would forge a log line or a line of a report, and a bidi override
///   would show text in another order than it has (CVE-2021-42574, "Trojan Source");
/// - the invisible format characters that no name needs (soft hyphen U+00AD, U+180E, zero-width
///   space U+200B, U+2060–U+2064, the byte order mark U+FEFF, U+FFF9–U+FFFB) as `\u{HHHH}`:
///   `a.test` and `a.test` with a U+200B would print alike, and a message quoting the one bad
///   character would show `''`. The joiners U+200C and U+200D stay (scripts and emoji need them);
/// - bytes that are not UTF-8 as `\xHH`.
///
/// Everything else is kept as it is, letters of every script and emoji included (`bücher.de`
/// reads as written). `\` and `"` are not escaped: the result is for reading, not for parsing
/// back, and messages quoting JSON (`JSONValue.quote`) keep their own escapes unchanged, so
/// escaping twice gives the same text as once. Hence a `\x1B` written as four characters shows
/// as an escaped ESC does: the terminal is safe either way, and JSON output tells them apart.
///
/// Line breaks the program writes itself are the printer's: `validate`, `match` and `check`
/// escape each line they print (`sites` each tab-separated field), so their own layout stays and
/// a value's CR or LF shows as `\x0D` or `\x0A`; the text log escapes a whole event, so an event
/// is always one line. Messages escape what they quote where they are made, which keeps them
/// safe in JSON and in any other printer too.
///
/// It has a module of its own (SafeText, with the UTF-8 validation it walks by) below everything
/// that prints: the strict JSON parser's quoting, AASA's messages (`AppIdentifier`), SiteStore,
/// Check and ACME all reach it without importing one another.
package enum TerminalText {
    /// Whether a scalar is shown as an escape: C0, DEL, C1, the line and paragraph separators,
    /// the bidirectional marks, embeddings, overrides and isolates (Unicode UAX #9 §2), and the
    /// invisible format characters listed above. Shared with `JSONValue.quote`, `JSONOutput` and
    /// `ACMEProblem.clean`, so that all say the same about what is dangerous.
    package static func isEscaped(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F: true
        case 0x2028, 0x2029: true
        case 0x202A...0x202E, 0x2066...0x2069: true
        case 0x00AD, 0x180E, 0x200B, 0x2060...0x2064, 0xFEFF, 0xFFF9...0xFFFB: true
        default: false
        }
    }

    /// `text` with every character `isEscaped` names written as an escape.
    package static func escaped(_ text: String) -> String {
        // Printable ASCII, nearly every line: returned as it is, without a copy.
        if text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) { return text }
        return escaped(utf8: Array(text.utf8))
    }

    /// Bytes meant to be UTF-8 (a file name, a header) as text: what `escaped(_:)` does, and each
    /// byte that is not part of a well-formed sequence (RFC 3629) as `\xHH`.
    package static func escaped(utf8 bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 16)
        var i = 0
        while i < bytes.count {
            let b0 = bytes[i]
            guard let length = UTF8Validation.sequenceLength(in: bytes, at: i) else {
                appendByteEscape(b0, to: &out)
                i += 1
                continue
            }
            let scalar = decode(bytes, at: i, length: length)
            if !isEscaped(scalar) {
                out.append(contentsOf: bytes[i..<i + length])
            } else if scalar.value < 0x80 {
                appendByteEscape(b0, to: &out)
            } else {
                out += Array("\\u{".utf8)
                out += Array(String(scalar.value, radix: 16, uppercase: true).utf8)
                out.append(UInt8(ascii: "}"))
            }
            i += length
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `\x` and two upper-case digits (the form `ServerSettings` has always shown CR and LF in).
    private static func appendByteEscape(_ byte: UInt8, to out: inout [UInt8]) {
        let digits: StaticString = "0123456789ABCDEF"
        out.append(UInt8(ascii: "\\"))
        out.append(UInt8(ascii: "x"))
        out.append(digits.utf8Start[Int(byte >> 4)])
        out.append(digits.utf8Start[Int(byte & 15)])
    }

    /// The scalar of a sequence `UTF8Validation` found well formed.
    private static func decode(_ bytes: [UInt8], at i: Int, length: Int) -> Unicode.Scalar {
        var value = length == 1 ? UInt32(bytes[i]) : UInt32(bytes[i] & (0xFF >> (length + 1)))
        for k in 1..<max(1, length) { value = value << 6 | UInt32(bytes[i + k] & 0x3F) }
        // Well formed: never a surrogate nor above U+10FFFF.
        return Unicode.Scalar(value) ?? "\u{FFFD}"
    }
}
