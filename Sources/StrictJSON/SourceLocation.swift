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

    /// The location of the byte at `offset`, found by going on from this one (at or before it):
    /// what was scanned for an earlier finding is not scanned again.
    package func advanced(to offset: Int, in bytes: [UInt8]) -> SourceLocation {
        var line = self.line
        var column = self.column
        var i = self.offset
        let end = min(offset, bytes.count)
        while i < end {
            if bytes[i] == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if bytes[i] & 0xC0 != 0x80 {
                column += 1
            }
            i += 1
        }
        return SourceLocation(line: line, column: column, offset: offset)
    }
}

/// Lines and columns for a file's findings in one pass over the file, as long as they come in
/// the order of their offsets (the decoder's walk): a hostile file with hundreds of findings near
/// its end must not cost one scan from the start per finding (quadratic at 1 MiB).
package struct SourceLocator {
    private var last = SourceLocation(line: 1, column: 1, offset: 0)

    package init() {}

    package mutating func location(of offset: Int, in bytes: [UInt8]) -> SourceLocation {
        let from = offset >= last.offset ? last : SourceLocation(line: 1, column: 1, offset: 0)
        last = from.advanced(to: offset, in: bytes)
        return last
    }
}
