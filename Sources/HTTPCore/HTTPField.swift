/// Header field rules every layer shares: what may be put into a response head.
public enum HTTPField {
    /// Longest value accepted from configuration. A Cache-Control policy is tens of bytes; the
    /// bound keeps a mistaken file from growing every response head (and stays far below the
    /// 8 KB head limits of common clients and proxies).
    public static let maximumValueLength = 4096

    /// Why bytes cannot be a field value.
    public enum ValueProblem: Error, Sendable, Equatable, CustomStringConvertible {
        /// A byte outside HTAB and 0x20–0x7E, at a 0-based offset.
        case byte(UInt8, offset: Int)
        /// Leading or trailing space or tab (RFC 9110 §5.5: not part of the value).
        case surroundingWhitespace
        /// Longer than `maximumValueLength`.
        case tooLong(Int)

        public var description: String {
            switch self {
            case .byte(let byte, let offset):
                "byte \(offset + 1) is \(HTTPField.name(of: byte)); a header value holds only tab and visible ASCII (RFC 9110 §5.5)"
            case .surroundingWhitespace:
                "leading or trailing whitespace; a header value starts and ends with a visible character (RFC 9110 §5.5)"
            case .tooLong(let count):
                "\(count) bytes, longer than \(HTTPField.maximumValueLength)"
            }
        }
    }

    /// The first problem with bytes as a response field value, or nil when they are one.
    ///
    /// RFC 9110 §5.5: `field-value = *field-content`, `field-content = field-vchar [ 1*( SP / HTAB
    /// / field-vchar ) field-vchar ]`, `field-vchar = VCHAR / obs-text`. We refuse obs-text
    /// (0x80–0xFF): it is obsolete, clients decode it differently, and nothing we send needs it.
    /// CR, LF and NUL are refused here (§5.5: they end the field or the head; a value that holds
    /// them splits the response). Bytes, not Swift `Character`s: "\r\n" is one grapheme cluster,
    /// so a `Character` comparison with "\r" or "\n" never sees it.
    public static func valueProblem(_ bytes: some Collection<UInt8>) -> ValueProblem? {
        var count = 0
        for byte in bytes {
            guard byte == 0x09 || (0x20...0x7E).contains(byte) else { return .byte(byte, offset: count) }
            count += 1
        }
        guard count <= maximumValueLength else { return .tooLong(count) }
        if let first = bytes.first, let last = bytes.reversed().first,
            first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09
        {
            return .surroundingWhitespace
        }
        return nil
    }

    /// Whether bytes may be sent as a field value (see `valueProblem`). An empty value is valid
    /// HTTP; callers that need a value refuse it themselves.
    public static func isValidValue(_ bytes: some Collection<UInt8>) -> Bool { valueProblem(bytes) == nil }

    /// `0x0D (CR)`: a byte as an operator can find it in a hex dump.
    package static func name(of byte: UInt8) -> String {
        let hex = String(byte, radix: 16, uppercase: true)
        let code = "0x" + (hex.count < 2 ? "0" : "") + hex
        let names: [UInt8: String] = [0x00: "NUL", 0x09: "HTAB", 0x0A: "LF", 0x0D: "CR", 0x7F: "DEL"]
        if let name = names[byte] { return "\(code) (\(name))" }
        if byte < 0x20 { return "\(code) (a control character)" }
        if byte >= 0x80 { return "\(code) (not ASCII)" }
        return code
    }
}
