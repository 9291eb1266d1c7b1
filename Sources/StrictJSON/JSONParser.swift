import SafeText

/// A strict RFC 8259 parser that keeps document order, duplicate keys and source locations.
///
/// It accepts nothing that a strict client might refuse: no comments, no trailing commas, no
/// single quotes, no NaN/Infinity, no trailing data, no unescaped control characters, no lone
/// surrogate escapes, no invalid UTF-8. Apple's CDN behaves like a strict Go client (spec §3), so
/// anything a lenient parser would forgive is exactly what must be caught before serving.
public struct JSONParser {
    /// Deepest nesting accepted (objects and arrays). A real AASA file needs at most 7 levels; the
    /// bound keeps the recursive descent's stack small for hostile input (spec §7).
    public static let maximumDepth = 32

    private let bytes: [UInt8]
    private var index = 0
    private var depth = 0

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Parses one JSON text. Leading and trailing white space is allowed, anything else after the
    /// value is an error.
    public static func parse(_ bytes: [UInt8]) throws(JSONSyntaxError) -> JSONValue {
        if let bad = UTF8Validation.firstInvalidOffset(in: bytes) {
            var p = JSONParser(bytes: bytes)
            p.index = bad
            throw p.error(
                .invalidUTF8,
                "the text is not valid UTF-8 (byte 0x\(String(bytes[bad], radix: 16, uppercase: true)) at offset \(bad)); save the file as UTF-8"
            )
        }
        var parser = JSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        if parser.index < bytes.count {
            throw parser.error(
                .trailingData, "unexpected \(parser.describeCurrent()) after the end of the JSON value; a file holds exactly one value")
        }
        return value
    }

    // MARK: - Locations

    private func error(_ reason: JSONSyntaxError.Reason, _ message: String) -> JSONSyntaxError {
        JSONSyntaxError(reason: reason, message: message, location: SourceLocation(offset: index, in: bytes))
    }

    private func describeCurrent() -> String {
        guard index < bytes.count else { return "end of file" }
        let b = bytes[index]
        if b >= 0x21 && b < 0x7F { return "'\(Character(Unicode.Scalar(b)))'" }
        if b < 0x80 { return "byte 0x\(String(b, radix: 16, uppercase: true))" }
        // Show the whole scalar for non-ASCII text.
        var end = index + 1
        while end < bytes.count && bytes[end] & 0xC0 == 0x80 { end += 1 }
        let scalar = String(decoding: bytes[index..<end], as: UTF8.self)
        let code = scalar.unicodeScalars.first.map { "U+" + String($0.value, radix: 16, uppercase: true) } ?? "?"
        // Quoted into messages of documents from elsewhere (a CA's body): escaped like all text
        // that did not come from aasad (bidi overrides, C1 controls, separators).
        return "'\(TerminalText.escaped(scalar))' (\(code))"
    }

    // MARK: - Grammar

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                index += 1
            default:
                return
            }
        }
    }

    private mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
        guard index < bytes.count else {
            throw error(.unexpectedEnd, "the file ends where a value was expected")
        }
        let start = index
        switch bytes[index] {
        case UInt8(ascii: "{"):
            return try parseObject()
        case UInt8(ascii: "["):
            return try parseArray()
        case UInt8(ascii: "\""):
            return JSONValue(.string(try parseString()), at: start)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return JSONValue(.number(try parseNumber()), at: start)
        case UInt8(ascii: "'"):
            throw error(.singleQuotes, "strings must use double quotes (\"), not single quotes")
        case UInt8(ascii: "/"):
            throw error(.comment, "comments are not allowed in JSON; remove them")
        case UInt8(ascii: "+"), UInt8(ascii: "."):
            throw error(.invalidNumber, "a number must start with a digit or '-'")
        default:
            return try parseLiteral(at: start)
        }
    }

    private mutating func parseLiteral(at start: Int) throws(JSONSyntaxError) -> JSONValue {
        var end = index
        while end < bytes.count, isWordByte(bytes[end]) { end += 1 }
        let word = String(decoding: bytes[index..<end], as: UTF8.self)
        switch word {
        case "true":
            index = end
            return JSONValue(.bool(true), at: start)
        case "false":
            index = end
            return JSONValue(.bool(false), at: start)
        case "null":
            index = end
            return JSONValue(.null, at: start)
        case "NaN", "Infinity":
            throw error(.nonFiniteNumber, "\(word) is not a JSON value; write a number or a string")
        case "":
            throw error(.unexpectedCharacter, "unexpected \(describeCurrent()) where a value was expected")
        default:
            throw error(
                .invalidLiteral,
                "unexpected word '\(word)'; strings must be in double quotes, and the only literals are true, false and null")
        }
    }

    private func isWordByte(_ b: UInt8) -> Bool {
        (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z")) || (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z"))
            || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "_") || b == UInt8(ascii: "$")
    }

    private mutating func enter() throws(JSONSyntaxError) {
        depth += 1
        if depth > Self.maximumDepth {
            throw error(.tooDeep, "objects and arrays are nested deeper than \(Self.maximumDepth) levels")
        }
    }

    private mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        try enter()
        index += 1  // {
        var members: [JSONMember] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return JSONValue(.object(members), at: start)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends inside an object; a '}' is missing")
            }
            let keyOffset = index
            switch bytes[index] {
            case UInt8(ascii: "\""):
                break
            case UInt8(ascii: "}"):
                if !members.isEmpty {
                    throw error(.trailingComma, "trailing comma before '}'; remove the last ','")
                }
                throw error(.unexpectedCharacter, "expected a key in double quotes")
            case UInt8(ascii: "'"):
                throw error(.singleQuotes, "keys must use double quotes (\"), not single quotes")
            case UInt8(ascii: "/"):
                throw error(.comment, "comments are not allowed in JSON; remove them")
            default:
                if isWordByte(bytes[index]) {
                    throw error(.unquotedKey, "object keys must be strings in double quotes")
                }
                throw error(.unexpectedCharacter, "unexpected \(describeCurrent()) where a key in double quotes was expected")
            }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends after a key; expected ':'")
            }
            guard bytes[index] == UInt8(ascii: ":") else {
                throw error(.unexpectedCharacter, "expected ':' after the key \(JSONValue.quote(key)), found \(describeCurrent())")
            }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            members.append(JSONMember(key: key, value: value, keyOffset: keyOffset))
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends inside an object; a '}' is missing")
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "}"):
                index += 1
                depth -= 1
                return JSONValue(.object(members), at: start)
            case UInt8(ascii: "/"):
                throw error(.comment, "comments are not allowed in JSON; remove them")
            default:
                throw error(.unexpectedCharacter, "expected ',' or '}' after a member, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
        let start = index
        try enter()
        index += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return JSONValue(.array(elements), at: start)
        }
        while true {
            skipWhitespace()
            if index < bytes.count && bytes[index] == UInt8(ascii: "]") {
                throw error(.trailingComma, "trailing comma before ']'; remove the last ','")
            }
            if index < bytes.count && bytes[index] == UInt8(ascii: ",") {
                throw error(.unexpectedCharacter, "an empty element (',,') is not allowed in JSON")
            }
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends inside an array; a ']' is missing")
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                index += 1
            case UInt8(ascii: "]"):
                index += 1
                depth -= 1
                return JSONValue(.array(elements), at: start)
            case UInt8(ascii: "/"):
                throw error(.comment, "comments are not allowed in JSON; remove them")
            default:
                throw error(.unexpectedCharacter, "expected ',' or ']' after an element, found \(describeCurrent())")
            }
        }
    }

    private mutating func parseString() throws(JSONSyntaxError) -> String {
        index += 1  // opening quote
        var out: [UInt8] = []
        while true {
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends inside a string; a closing '\"' is missing")
            }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &out)
            case 0..<0x20:
                throw error(
                    .controlCharacter,
                    "control character 0x\(String(b, radix: 16, uppercase: true)) inside a string must be escaped (for a line break write \\n)"
                )
            default:
                out.append(b)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into out: inout [UInt8]) throws(JSONSyntaxError) {
        index += 1  // backslash
        guard index < bytes.count else {
            throw error(.unexpectedEnd, "the file ends inside an escape sequence")
        }
        let simple: UInt8?
        switch bytes[index] {
        case UInt8(ascii: "\""): simple = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): simple = UInt8(ascii: "\\")
        case UInt8(ascii: "/"): simple = UInt8(ascii: "/")
        case UInt8(ascii: "b"): simple = 0x08
        case UInt8(ascii: "f"): simple = 0x0C
        case UInt8(ascii: "n"): simple = 0x0A
        case UInt8(ascii: "r"): simple = 0x0D
        case UInt8(ascii: "t"): simple = 0x09
        case UInt8(ascii: "u"): simple = nil
        default:
            index -= 1
            throw error(
                .invalidEscape, "invalid escape sequence \\\(describeNext()); JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX")
        }
        if let simple {
            out.append(simple)
            index += 1
            return
        }
        let escapeStart = index - 1
        index += 1
        let first = try parseHex4(escapeStart: escapeStart)
        var scalarValue = first
        if (0xD800...0xDBFF).contains(first) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                index = escapeStart
                throw error(
                    .loneSurrogate,
                    "lone surrogate escape \\u\(hex(first)): a high surrogate must be followed by a low surrogate (\\uDC00–\\uDFFF)")
            }
            index += 2
            let second = try parseHex4(escapeStart: escapeStart)
            guard (0xDC00...0xDFFF).contains(second) else {
                index = escapeStart
                throw error(
                    .loneSurrogate, "lone surrogate escape \\u\(hex(first)) followed by \\u\(hex(second)), which is not a low surrogate")
            }
            scalarValue = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(first) {
            index = escapeStart
            throw error(.loneSurrogate, "lone surrogate escape \\u\(hex(first)): a low surrogate must follow a high surrogate")
        }
        // Every value left is a valid scalar: surrogates were handled above.
        out.append(contentsOf: Array(String(Character(Unicode.Scalar(scalarValue)!)).utf8))
    }

    private func describeNext() -> String {
        index < bytes.count ? String(decoding: [bytes[index]], as: UTF8.self) : ""
    }

    private func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - s.count)) + s
    }

    private mutating func parseHex4(escapeStart: Int) throws(JSONSyntaxError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else {
                throw error(.unexpectedEnd, "the file ends inside a \\u escape")
            }
            let b = bytes[index]
            let digit: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(b - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(b - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(b - UInt8(ascii: "A") + 10)
            default:
                throw error(.invalidEscape, "a \\u escape needs exactly four hexadecimal digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONSyntaxError) -> String {
        let start = index
        if bytes[index] == UInt8(ascii: "-") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "I") {
                throw error(.nonFiniteNumber, "-Infinity is not a JSON value; write a number or a string")
            }
        }
        guard index < bytes.count, isDigit(bytes[index]) else {
            throw error(.invalidNumber, "a digit must follow '-' in a number")
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) {
                throw error(.invalidNumber, "numbers may not have leading zeros")
            }
        } else {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(.invalidNumber, "a digit must follow the decimal point")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else {
                throw error(.invalidNumber, "a digit must follow the exponent")
            }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
}
