/// Text from outside the program (a site's directory name, a file's error, a CA's message) made
/// safe to show in an HTML page: the one escaper the admin listener's status page uses for
/// every value it did not write itself, in element content and in quoted attribute values.
///
/// First what `TerminalText` escapes, as the same visible text (controls, bidirectional
/// overrides such as U+202E, invisible format characters, bytes that are not UTF-8): a name
/// with an override would otherwise show in another order than it has, in a browser as on a
/// terminal. Then the five characters that end text or an attribute in HTML (the HTML Standard,
/// §13.1.2.6 and §13.2.5.36): `&` `<` `>` `"` `'` as character references. Nothing else is
/// special inside a quoted attribute value or between tags, so the result cannot open an
/// element, close one, or leave an attribute.
///
/// At most `maximumScalars` of the text are kept (then `…`): one value cannot make a page
/// unbounded.
package enum HTMLText {
    /// The longest value shown, in Unicode scalars before escaping: a 253-byte host name and a
    /// full line of an error message fit; a 128 KB file quoted in an error does not fill a page.
    package static let maximumScalars = 1024

    /// `text` escaped for HTML, cut to `maximumScalars` with a trailing `…`.
    package static func escaped(_ text: String) -> String {
        var kept = text
        if text.unicodeScalars.count > maximumScalars {
            var cut = String.UnicodeScalarView()
            cut.append(contentsOf: text.unicodeScalars.prefix(maximumScalars))
            kept = String(cut) + "…"
        }
        let visible = TerminalText.escaped(kept)
        // Nearly every value (a host name, a digest): nothing to replace, no copy.
        guard visible.utf8.contains(where: { Self.isSpecial($0) }) else { return visible }
        var out: [UInt8] = []
        out.reserveCapacity(visible.utf8.count + 32)
        appendEntities(visible.utf8, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// `value` as it is for a quoted attribute whose value the user edits and sends back (a
    /// search field's): only `& < > " '` as character references, so the browser's value is
    /// `value` exactly, once (`escaped` would show controls and bidirectional overrides as
    /// `\u{…}` text and make that text the value). Cut to `maximumScalars` like `escaped`.
    package static func attribute(_ value: String) -> String {
        var kept = value
        if value.unicodeScalars.count > maximumScalars {
            var cut = String.UnicodeScalarView()
            cut.append(contentsOf: value.unicodeScalars.prefix(maximumScalars))
            kept = String(cut)
        }
        guard kept.utf8.contains(where: { Self.isSpecial($0) }) else { return kept }
        var out: [UInt8] = []
        out.reserveCapacity(kept.utf8.count + 32)
        appendEntities(kept.utf8, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `bytes` with `& < > " '` written as entities: safe in element content and in a
    /// quoted attribute (HTML's syntax, WHATWG HTML §13.1.2.3). Controls and bidi characters are
    /// the caller's (`escaped` makes them visible; link previews replace them).
    package static func appendEntities(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "&"): out += Array("&amp;".utf8)
            case UInt8(ascii: "<"): out += Array("&lt;".utf8)
            case UInt8(ascii: ">"): out += Array("&gt;".utf8)
            case UInt8(ascii: "\""): out += Array("&quot;".utf8)
            case UInt8(ascii: "'"): out += Array("&#39;".utf8)
            default: out.append(byte)
            }
        }
    }

    /// Bytes meant to be UTF-8 as escaped HTML text: each byte that is not part of a well-formed
    /// sequence shows as `\xHH` (`TerminalText.escaped(utf8:)`).
    package static func escaped(utf8 bytes: [UInt8]) -> String {
        escaped(TerminalText.escaped(utf8: bytes))
    }

    /// `text` for a URL's query value (RFC 3986 §3.4): every byte but the unreserved ones
    /// (§2.3) percent-encoded, so a value cannot end the query, add a parameter or leave the
    /// attribute the URL is written in.
    package static func queryValue(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            let unreserved =
                (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
            if unreserved {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%"
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(digits[Int(byte & 15)]))
            }
        }
        return out
    }

    private static func isSpecial(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "&") || byte == UInt8(ascii: "<") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "\"")
            || byte == UInt8(ascii: "'")
    }
}
