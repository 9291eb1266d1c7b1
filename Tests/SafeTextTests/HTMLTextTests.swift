import Testing

@testable import SafeText

@Suite("HTMLText: what the status page shows of text from outside")
struct HTMLTextTests {
    @Test(
        "markup, quotes, controls and bidirectional overrides become visible text",
        arguments: [
            ("<script>document.title='x'</script>", "&lt;script&gt;document.title=&#39;x&#39;&lt;/script&gt;"),
            (#"" onmouseover="alert(1)"#, "&quot; onmouseover=&quot;alert(1)"),
            ("a&amp;b", "a&amp;amp;b"),
            ("<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"),
            ("abc\u{202E}lmth.exe", #"abc\u{202E}lmth.exe"#),
            ("line\nforged<b>", #"line\x0Aforged&lt;b&gt;"#),
            ("\u{2066}<\u{2069}", #"\u{2066}&lt;\u{2069}"#),
            ("links.example", "links.example"),
            ("bücher.example", "bücher.example"),
            ("", ""),
        ])
    func escapes(input: String, expected: String) {
        #expect(HTMLText.escaped(input) == expected)
    }

    @Test("no output holds a character that opens or closes markup or a quoted attribute")
    func nothingSpecialLeft() {
        var generator = SystemRandomNumberGenerator()
        let alphabet: [Character] = ["<", ">", "&", "\"", "'", "a", "/", "=", "\u{202E}", "\n", "\u{0}", "é", ";", "#"]
        for _ in 0..<2000 {
            let text = String((0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let out = HTMLText.escaped(text)
            #expect(!out.contains("<") && !out.contains(">") && !out.contains("\"") && !out.contains("'"))
            #expect(!out.unicodeScalars.contains { TerminalText.isEscaped($0) })
            // Every `&` begins one of the four references the escaper writes.
            let ampersands = out.split(separator: "&", omittingEmptySubsequences: false).dropFirst()
            #expect(ampersands.allSatisfy { part in ["amp;", "lt;", "gt;", "quot;", "#39;"].contains { part.hasPrefix($0) } })
        }
    }

    @Test("bytes that are not UTF-8 show as \\xHH, escaped as text")
    func invalidUTF8() {
        #expect(HTMLText.escaped(utf8: [0x3C, 0xFF, 0x3E]) == #"&lt;\xFF&gt;"#)
    }

    @Test("values are cut at maximumScalars: N kept whole, N+1 cut with an ellipsis")
    func bound() {
        let n = HTMLText.maximumScalars
        #expect(HTMLText.escaped(String(repeating: "a", count: n)) == String(repeating: "a", count: n))
        #expect(HTMLText.escaped(String(repeating: "a", count: n + 1)) == String(repeating: "a", count: n) + "…")
        // Cut before escaping: a long run of `<` is at most n references.
        #expect(HTMLText.escaped(String(repeating: "<", count: n + 1)) == String(repeating: "&lt;", count: n) + "…")
    }

    @Test(
        "query values keep only unreserved bytes",
        arguments: [
            ("a.test", "a.test"), ("a b&c=d#e", "a%20b%26c%3Dd%23e"), ("\"><x", "%22%3E%3Cx"), ("é", "%C3%A9"), ("*.w.test", "%2A.w.test"),
        ])
    func query(input: String, expected: String) {
        #expect(HTMLText.queryValue(input) == expected)
    }
}
