import SafeText

/// A JSON value as written in the file: objects keep their members in document order and keep
/// duplicate keys (order decides matches in an AASA file, and duplicates must be reported, so a
/// dictionary would lose exactly what the validator needs). Numbers keep their source text.
public struct JSONValue: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case object([JSONMember])
        case array([JSONValue])
        case string(String)
        case number(String)
        case bool(Bool)
        case null
    }

    public var kind: Kind
    /// Byte offset where the value starts in the source (see `SourceLocation.init(offset:in:)`).
    public var offset: Int

    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// The JSON type's name as a user reads it in an error message.
    public var typeName: String {
        switch kind {
        case .object: "an object"
        case .array: "an array"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        case .null: "null"
        }
    }

    public var stringValue: String? {
        if case .string(let s) = kind { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = kind { return b }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = kind { return a }
        return nil
    }

    public var objectMembers: [JSONMember]? {
        if case .object(let m) = kind { return m }
        return nil
    }

    /// A short rendering of the value for messages: strings quoted, containers summarised.
    public var excerpt: String {
        switch kind {
        case .string(let s):
            let limit = 60
            let shown = s.unicodeScalars.count > limit ? String(String.UnicodeScalarView(s.unicodeScalars.prefix(limit))) + "…" : s
            return JSONValue.quote(shown)
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .array(let a): return a.isEmpty ? "[]" : "[…]"
        case .object(let m): return m.isEmpty ? "{}" : "{…}"
        }
    }

    /// Quotes a string the way JSON would write it, with every control character escaped (C0,
    /// DEL, C1 such as CSI and NEL, the line and paragraph separators, and the bidirectional
    /// marks, overrides and isolates: `TerminalText.isEscaped`): a value from a file reaches log
    /// lines and terminals, and must not move the cursor, end the line or reorder what is shown.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where TerminalText.isEscaped(scalar):
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

/// One `"key": value` pair of an object, with where its key stands.
public struct JSONMember: Sendable, Equatable {
    public var key: String
    public var value: JSONValue
    /// Byte offset of the key's opening quote.
    public var keyOffset: Int

    public init(key: String, value: JSONValue, keyOffset: Int) {
        self.key = key
        self.value = value
        self.keyOffset = keyOffset
    }
}
