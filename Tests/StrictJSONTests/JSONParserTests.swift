import Testing

@testable import StrictJSON

@Suite("Strict JSON parser (RFC 8259)")
struct JSONParserTests {
    private func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try JSONParser.parse(Array(text.utf8))
    }

    @Test("objects keep members in document order")
    func keepsOrder() throws {
        let v = try parse(#"{"b": 1, "a": 2, "c": 3}"#)
        #expect(v.objectMembers?.map(\.key) == ["b", "a", "c"])
    }

    @Test("duplicate keys are kept, not merged, so the validator can report them")
    func keepsDuplicates() throws {
        let v = try parse(#"{"a": 1, "a": 2}"#)
        #expect(v.objectMembers?.map(\.key) == ["a", "a"])
    }

    @Test(
        "every JSON value kind is read",
        arguments: [
            (#"{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,[]],"o":{}}"#, 7)
        ])
    func readsAllKinds(text: String, count: Int) throws {
        let v = try parse(text)
        #expect(v.objectMembers?.count == count)
        #expect(v.objectMembers?[1].value.kind == .number("-1.5e3"))
        #expect(v.objectMembers?[2].value.boolValue == true)
        #expect(v.objectMembers?[4].value.kind == .null)
    }

    @Test("escapes decode, surrogate pairs included")
    func decodesEscapes() throws {
        let v = try parse(#"["a\"b\\c\/d\b\f\n\r\t", "\u00e9\uD83D\uDE00"]"#)
        #expect(v.arrayValue?[0].stringValue == "a\"b\\c/d\u{8}\u{C}\n\r\t")
        #expect(v.arrayValue?[1].stringValue == "é😀")
    }

    @Test("white space around the value is allowed")
    func allowsSurroundingWhitespace() throws {
        #expect(try parse(" \n\t{}\r\n ").objectMembers?.isEmpty == true)
    }

    static let malformed: [(String, JSONSyntaxError.Reason)] = [
        ("", .unexpectedEnd),
        ("{", .unexpectedEnd),
        (#"{"a": 1"#, .unexpectedEnd),
        (#"{"a" 1}"#, .unexpectedCharacter),
        ("{\"a\": 1 // note\n}", .comment),
        ("/* c */ {}", .comment),
        (#"{"a": 1,}"#, .trailingComma),
        ("[1, 2,]", .trailingComma),
        ("{'a': 1}", .singleQuotes),
        (#"{"a": 'x'}"#, .singleQuotes),
        (#"{"a": NaN}"#, .nonFiniteNumber),
        (#"{"a": Infinity}"#, .nonFiniteNumber),
        (#"{"a": -Infinity}"#, .nonFiniteNumber),
        (#"{"a": 01}"#, .invalidNumber),
        (#"{"a": 1.}"#, .invalidNumber),
        (#"{"a": .5}"#, .invalidNumber),
        (#"{"a": +1}"#, .invalidNumber),
        (#"{"a": 1e}"#, .invalidNumber),
        (#"{"a": tru}"#, .invalidLiteral),
        (#"{"a": None}"#, .invalidLiteral),
        (#"{"a": "\x"}"#, .invalidEscape),
        (#"{"a": "\u12"}"#, .invalidEscape),
        (#"{"a": "\uD800"}"#, .loneSurrogate),
        (#"{"a": "\uDC00"}"#, .loneSurrogate),
        (#"{"a": "\uD800\u0041"}"#, .loneSurrogate),
        ("{\"a\": \"line\nbreak\"}", .controlCharacter),
        ("{\"a\": \"tab\there\"}", .controlCharacter),
        ("{a: 1}", .unquotedKey),
        ("{} {}", .trailingData),
        ("{}x", .trailingData),
        ("[1 2]", .unexpectedCharacter),
        ("[1,,2]", .unexpectedCharacter),
        ("\u{A0}{}", .unexpectedCharacter),
    ]

    @Test("each way a file breaks strict JSON has its own reason", arguments: malformed)
    func rejectsMalformed(text: String, reason: JSONSyntaxError.Reason) {
        #expect(throws: JSONSyntaxError.self) { try parse(text) }
        do {
            _ = try parse(text)
        } catch {
            #expect(error.reason == reason, "\(text): \(error.message)")
        }
    }

    @Test(
        "invalid UTF-8 is refused with its offset",
        arguments: [
            [UInt8(ascii: "\""), 0xC3, UInt8(ascii: "\"")],  // truncated sequence
            [UInt8(ascii: "\""), 0xC0, 0x80, UInt8(ascii: "\"")],  // overlong NUL
            [UInt8(ascii: "\""), 0xED, 0xA0, 0x80, UInt8(ascii: "\"")],  // encoded surrogate
            [UInt8(ascii: "\""), 0xF4, 0x90, 0x80, 0x80, UInt8(ascii: "\"")],  // above U+10FFFF
            [UInt8(ascii: "\""), 0xFF, UInt8(ascii: "\"")],
        ])
    func rejectsInvalidUTF8(bytes: [UInt8]) {
        do {
            _ = try JSONParser.parse(bytes)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.reason == .invalidUTF8)
            #expect(error.location.offset == 1)
        }
    }

    @Test("a message quoting an unexpected character escapes what a terminal would act on, and keeps other text")
    func quotedCharacterIsEscaped() {
        for (text, shown) in [("1\u{202E}", #"'\u{202E}' (U+202E)"#), ("1\u{85}", #"'\u{85}' (U+85)"#), ("1é", "'é' (U+E9)")] {
            #expect(throws: JSONSyntaxError.self) { try parse(text) }
            do { _ = try parse(text) } catch { #expect(error.message.contains(shown), "\(error.message)") }
        }
    }

    @Test("nesting of exactly the maximum depth is accepted")
    func acceptsMaximumDepth() throws {
        let n = JSONParser.maximumDepth
        _ = try parse(String(repeating: "[", count: n) + String(repeating: "]", count: n))
    }

    @Test("nesting one level deeper than the maximum is refused")
    func refusesDeeperNesting() {
        let n = JSONParser.maximumDepth + 1
        do {
            _ = try parse(String(repeating: "[", count: n) + String(repeating: "]", count: n))
            Issue.record("accepted depth \(n)")
        } catch {
            #expect(error.reason == .tooDeep)
        }
    }

    @Test("a hostile depth cannot exhaust the stack")
    func survivesHugeDepth() {
        let text = String(repeating: "[", count: 100_000)
        #expect(throws: JSONSyntaxError.self) { try parse(text) }
    }

    @Test("errors give line and column, counting characters not bytes")
    func reportsLineAndColumn() {
        do {
            _ = try parse("{\n  \"é\": 1,\n  \"b\": ,\n}")
            Issue.record("accepted")
        } catch {
            #expect(error.location.line == 3)
            #expect(error.location.column == 8)
        }
    }

    @Test("values know their offset, for messages")
    func recordsOffsets() throws {
        let text = "{\"a\": [1, \"x\"]}"
        let v = try parse(text)
        let x = v.objectMembers![0].value.arrayValue![1]
        #expect(x.offset == 10)
        #expect(SourceLocation(offset: x.offset, in: Array(text.utf8)).column == 11)
    }

    @Test("quoting escapes every control character a terminal or log would act on: C0, DEL, C1, separators, bidi")
    func quoteEscapesControls() {
        let hostile = "a\u{7F}b\u{9B}2J\u{85}c\u{2028}d\u{2029}e\u{202E}f\u{2066}g\r\n"
        let quoted = JSONValue.quote(hostile)
        #expect(quoted == #""a\u007Fb\u009B2J\u0085c\u2028d\u2029e\u202Ef\u2066g\r\n""#)
        #expect(!quoted.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 })
    }

    @Test("locations found in one pass agree with a scan from the start, in order and out of it")
    func locatorAgrees() {
        let bytes = Array("{\n  \"é\": [1,\n 2],\r\n\"b\": \"ü\" }\n".utf8)
        var locator = SourceLocator()
        for offset in Array(0...bytes.count) + [3, 0, bytes.count, 7] {
            #expect(locator.location(of: offset, in: bytes) == SourceLocation(offset: offset, in: bytes), "\(offset)")
        }
    }
}
