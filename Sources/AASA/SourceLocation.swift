/// A place in a file's text: 1-based line and column (columns count Unicode scalars), and the
/// 0-based byte offset.
public struct SourceLocation: Sendable, Hashable, Codable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    public var offset: Int

    public init(line: Int, column: Int, offset: Int) {
        self.line = line
        self.column = column
        self.offset = offset
    }

    /// The line and column of a byte offset. Scans from the start: used only when reporting, so
    /// parsing itself stays linear.
    public init(offset: Int, in bytes: [UInt8]) {
        var line = 1
        var lineStart = 0
        let end = min(offset, bytes.count)
        var i = 0
        while i < end {
            if bytes[i] == UInt8(ascii: "\n") {
                line += 1
                lineStart = i + 1
            }
            i += 1
        }
        var column = 1
        i = lineStart
        while i < end {
            if bytes[i] & 0xC0 != 0x80 { column += 1 }
            i += 1
        }
        self.init(line: line, column: column, offset: offset)
    }

    public var description: String { "\(line):\(column)" }
}
