import StrictJSON
import Testing

@testable import SafeText

@Suite("TerminalText: what a terminal or a log line shows of text from outside")
struct TerminalTextTests {
    @Test(
        "each class is escaped at its bounds, and the characters beside them are kept",
        arguments: [
            // C0 controls, the line breaks and TAB among them, and the printable ASCII around them.
            ("\u{0}", #"\x00"#),
            ("a\u{1}b", #"a\x01b"#),
            ("\t", #"\x09"#),
            ("line\nforged", #"line\x0Aforged"#),
            ("a\r\nb", #"a\x0D\x0Ab"#),
            ("\u{1B}[31mred", #"\x1B[31mred"#),
            ("\u{1F}", #"\x1F"#),
            (" ", " "),
            ("~", "~"),
            // DEL, then C1 (U+0080–U+009F: NEL, CSI) and the first character after it.
            ("\u{7F}", #"\x7F"#),
            ("\u{80}", #"\u{80}"#),
            ("\u{85}", #"\u{85}"#),
            ("\u{9B}2J", #"\u{9B}2J"#),
            ("\u{9F}", #"\u{9F}"#),
            ("\u{A0}", "\u{A0}"),
            ("\u{FF}", "ÿ"),
            // Bidirectional formatting characters, and their neighbours kept.
            ("\u{61B}\u{61C}\u{61D}", "\u{61B}\\u{61C}\u{61D}"),
            ("\u{200D}\u{200E}\u{200F}\u{2010}", "\u{200D}\\u{200E}\\u{200F}\u{2010}"),
            ("\u{2029}", #"\u{2029}"#),
            ("\u{2028}", #"\u{2028}"#),
            ("\u{2029}\u{202A}", #"\u{2029}\u{202A}"#),
            ("abc\u{202E}txt.exe", #"abc\u{202E}txt.exe"#),
            ("\u{202E}\u{202F}", "\\u{202E}\u{202F}"),
            ("\u{2065}\u{2066}\u{2069}\u{206A}", "\u{2065}\\u{2066}\\u{2069}\u{206A}"),
            // Invisible format characters, at their bounds; the joiners that scripts and emoji need stay.
            ("\u{AC}\u{AD}\u{AE}", "\u{AC}\\u{AD}\u{AE}"),
            ("\u{180D}\u{180E}\u{180F}", "\u{180D}\\u{180E}\u{180F}"),
            ("a.test\u{200B}", #"a.test\u{200B}"#),
            ("\u{200A}\u{200B}\u{200C}", "\u{200A}\\u{200B}\u{200C}"),
            ("\u{205F}\u{2060}\u{2064}\u{2065}", "\u{205F}\\u{2060}\\u{2064}\u{2065}"),
            ("\u{FEFF}{}", #"\u{FEFF}{}"#),
            ("\u{FEFE}\u{FF00}", "\u{FEFE}\u{FF00}"),
            ("\u{FFF8}\u{FFF9}\u{FFFB}\u{FFFC}", "\u{FFF8}\\u{FFF9}\\u{FFFB}\u{FFFC}"),
            // Valid text of every script is kept as written.
            ("bücher.de", "bücher.de"),
            ("日本語 🙂 👩‍💻", "日本語 🙂 👩‍💻"),
            ("plain é 日本", "plain é 日本"),
            // Backslashes and quotes stay: escaping twice gives what escaping once gave.
            (#"a\x1B "q""#, #"a\x1B "q""#),
            // A hostile server's header, as aasad check shows it.
            (
                "https://x/\u{1B}]0;pwned\u{07}\u{1B}[1A\r\nevil.test: ok\u{7F}\u{85}\u{202E}txt",
                #"https://x/\x1B]0;pwned\x07\x1B[1A\x0D\x0Aevil.test: ok\x7F\u{85}\u{202E}txt"#
            ),
            ("", ""),
        ] as [(String, String)])
    func escapes(_ text: String, _ shown: String) {
        #expect(TerminalText.escaped(text) == shown)
        #expect(TerminalText.escaped(shown) == shown, "escaping is idempotent")
        #expect(TerminalText.escaped(utf8: Array(text.utf8)) == shown, "the byte form agrees on valid UTF-8")
    }

    @Test(
        "bytes that are not UTF-8 are shown as \\xHH, each, and the valid text around them is kept",
        arguments: [
            ([0xFF], #"\xFF"#),
            ([0x61, 0x80, 0x62], #"a\x80b"#),
            ([0xC3], #"\xC3"#),  // a sequence cut short at the end
            ([0xC3, 0x41], #"\xC3A"#),  // a lead byte without its continuation
            ([0xC0, 0xAF], #"\xC0\xAF"#),  // an overlong '/'
            ([0xE0, 0x80, 0xAF], #"\xE0\x80\xAF"#),  // an overlong three-byte form
            ([0xED, 0xA0, 0x80], #"\xED\xA0\x80"#),  // a UTF-16 surrogate
            ([0xF4, 0x90, 0x80, 0x80], #"\xF4\x90\x80\x80"#),  // above U+10FFFF
            ([0xF4, 0x8F, 0xBF, 0xBF], "\u{10FFFF}"),  // the last scalar, kept
            ([0xC2, 0x85], #"\u{85}"#),  // NEL, valid: a C1 control
            ([0xE2, 0x80, 0xAE], #"\u{202E}"#),
            ([0x1B, 0xFF, 0x0A], #"\x1B\xFF\x0A"#),
            ([0x62, 0xC3, 0xBC, 0x63, 0x68], "büch"),
        ] as [([UInt8], String)])
    func invalidBytes(_ bytes: [UInt8], _ shown: String) {
        #expect(TerminalText.escaped(utf8: bytes) == shown)
    }

    @Test("JSONValue.quote escapes what TerminalText escapes, in JSON's \\u form")
    func quoteAgrees() {
        for scalar in ["\u{1B}", "\u{7F}", "\u{85}", "\u{61C}", "\u{200E}", "\u{202E}", "\u{2066}"] as [Unicode.Scalar] {
            #expect(TerminalText.isEscaped(scalar))
            let quoted = JSONValue.quote(String(scalar))
            #expect(quoted.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 }, "\(quoted)")
        }
    }
}
