/// Why a text is not strict JSON (RFC 8259). Each case is one way real files go wrong, so the
/// message can say what to change rather than only "unexpected character".
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: String, Sendable, Codable {
        case invalidUTF8 = "invalid-utf8"
        case unexpectedEnd = "unexpected-end"
        case unexpectedCharacter = "unexpected-character"
        case comment = "comment"
        case trailingComma = "trailing-comma"
        case singleQuotes = "single-quotes"
        case nonFiniteNumber = "non-finite-number"
        case invalidNumber = "invalid-number"
        case invalidLiteral = "invalid-literal"
        case invalidEscape = "invalid-escape"
        case loneSurrogate = "lone-surrogate"
        case controlCharacter = "control-character"
        case unquotedKey = "unquoted-key"
        case trailingData = "trailing-data"
        case tooDeep = "too-deep"
    }

    public var reason: Reason
    public var message: String
    public var location: SourceLocation

    public var description: String { "\(location): \(message)" }
}
