package import Foundation

/// The lines a child process writes to a pipe, one at a time: what follows the last newline read
/// is kept for the next call.
package final class PipeLines {
    private let handle: FileHandle
    private var buffered: [UInt8] = []

    /// `pipe` is the child's standard output (or any pipe it writes to).
    package init(_ pipe: Pipe) { handle = pipe.fileHandleForReading }

    /// The next line without its newline; nil once the writer closed the pipe.
    package func next() -> String? {
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeFirst(newline + 1)
                return line
            }
            let data = handle.availableData
            if data.isEmpty { return nil }
            buffered += data
        }
    }
}
