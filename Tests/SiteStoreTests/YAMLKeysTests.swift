import Testing

@testable import SiteStore

@Suite("The one YAML key walker of site.yaml and aasad.yaml")
struct YAMLKeysTests {
    /// Walks `text` and lists what it reported, in order.
    private func walk(_ text: String, sections: Set<String> = []) -> [String] {
        var seen: [String] = []
        YAMLKeys.walk(text, isSection: { sections.contains($0) }) { entry in
            let value: String
            switch entry.value {
            case .scalar(let s): value = s
            case .list(let items): value = "[" + items.map { $0 ?? "nil" }.joined(separator: ",") + "]"
            case .table(let rows): value = "table(\(rows.map { $0.map(\.path).joined(separator: ",") }.joined(separator: ";")))"
            case .mapping(let keys): value = "mapping(\(keys.map(\.path).joined(separator: ",")))"
            case .other: value = "other"
            }
            seen.append("\(entry.path)=\(value)@\(entry.line ?? 0):\(entry.column ?? 0)")
        } fail: { failure in
            seen.append("\(failure)")
        }
        return seen
    }

    @Test("keys come in file order with 1-based lines and columns; sections are walked as section.key")
    func keysAndSections() {
        let text = "threads: 2\ntimeouts:\n  idle: 5\n  drain: [1, {a: b}]\nuser: {x: y}\n"
        #expect(
            walk(text, sections: ["timeouts"]) == ["threads=2@1:1", "timeouts.idle=5@3:3", "timeouts.drain=[1,nil]@4:3", "user=other@5:1"])
    }

    @Test("a section or file that is not a mapping, and bad YAML, are failures in file order; an empty file is none")
    func failures() {
        #expect(walk("a: 1\ntimeouts: 5\nb: 2\n", sections: ["timeouts"]) == ["a=1@1:1", "notMapping(section: \"timeouts\")", "b=2@3:1"])
        #expect(walk("- 1\n") == ["notMapping(section: \"\")"])
        #expect(walk("a: [\n").first?.hasPrefix("syntax(") == true)
        #expect(walk("").isEmpty)
        // A list of mappings is a table (site.yaml's routes), one mapping level inside its rows;
        // a list mixing mappings and scalars stays a list.
        #expect(walk("r:\n  - {p: 1, q: {t: 2}}\n  - {p: 3}\n") == ["r=table(p,q;p)@1:1"])
        #expect(walk("r: [{p: 1}, 2]\n") == ["r=[nil,2]@1:1"])
        #expect(walk("r: {p: 1}\n") == ["r=other@1:1"])
        #expect(walk("r: [{\"a\\e\": 1}]\n") == [#"r=table(a\x1B)@1:1"#])
    }

    /// The syntax failure of `text`, or nil when it parses.
    private func syntax(_ text: String) -> String? {
        var message: String?
        YAMLKeys.walk(text, visit: { _ in }) { failure in
            if case .syntax(let m) = failure { message = m }
        }
        return message
    }

    @Test(
        "a syntax error is one line: where, what, and the line libyaml stopped in, quoted with its controls escaped",
        arguments: [
            // A control character YAML refuses: libyaml's byte offset, shown as line and column.
            (
                "aliases: [x.test\u{1B}]0;pwned\u{07}\r\nb: 1\n",
                #"line 1, column 17: control characters are not allowed (U+001B), in "aliases: [x.test\x1B]0;pwned\x07""#
            ),
            ("a: 1\nb: é\u{1B}\n", #"line 2, column 5: control characters are not allowed (U+001B), in "b: é\x1B""#),
            // A bidi override and a TAB on the bad line.
            ("page: a: b\u{202E}\t\n", #"in "page: a: b\u{202E}\x09""#),
            // Lines end where libyaml's do: CR, CR LF, NEL, U+2028.
            ("a: 1\rb: c: d\n", #"line 2, column 5: mapping values are not allowed in this context, in "b: c: d""#),
            ("a: 1\r\nb: c: d\r\n", #"line 2, column 5: mapping values are not allowed in this context, in "b: c: d""#),
            ("a: 1\u{2028}b: c: d\n", #"in "b: c: d""#),
            // A forged log line on the bad line stays inside the quotes.
            (
                "page: x\n1999-01-01T00:00:00+0000 error aasad: FORGED: x\n",
                #"in "1999-01-01T00:00:00+0000 error aasad: FORGED: x""#
            ),
        ] as [(String, String)])
    func syntaxMessage(_ text: String, _ expected: String) throws {
        let message = try #require(syntax(text))
        #expect(message.contains(expected), "\(message)")
        #expect(!message.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x202E })
    }

    @Test("the bad line is quoted up to 120 characters, then cut")
    func quotedLineBound() {
        let limit = YAMLKeys.quotedLineLimit
        #expect(limit == 120)
        let atLimit = String(repeating: "x", count: limit)
        #expect(YAMLKeys.quotedLine(2, of: "a\n" + atLimit + "\nb") == "\"" + atLimit + "\"")
        #expect(YAMLKeys.quotedLine(2, of: "a\n" + atLimit + "y\nb") == "\"" + atLimit + "…\"")
        #expect(YAMLKeys.quotedLine(3, of: "a\n") == "\"\"")
        #expect(YAMLKeys.quotedLine(9, of: "a\n") == "\"\"")
    }

    @Test("a key holding control characters is reported escaped: it can never be a known key")
    func escapedKeys() {
        #expect(walk("\"a\\r\\n1999-01-01 error: forged\": 1\n") == [#"a\x0D\x0A1999-01-01 error: forged=1@1:1"#])
        #expect(walk("\"\\e[2J\u{202E}\": 1\n") == [#"\x1B[2J\u{202E}=1@1:1"#])
    }
}
