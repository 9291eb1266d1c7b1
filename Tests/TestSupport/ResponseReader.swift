import Foundation
import Glibc

/// Reads HTTP/1.1 responses from a connected socket by Content-Length: the head, then the body
/// kept or only counted (a page of many megabytes need not be kept to be checked). What
/// `KeepAliveClient` and the admin listener's test clients read with.
package struct ResponseReader {
    package let fd: Int32
    private var buffer: [UInt8] = []

    package init(fd: Int32) { self.fd = fd }

    /// A response's head: its status, its Content-Length (0 without one) and its text, the blank
    /// line left out.
    package struct Head {
        package var status: Int
        package var length: Int
        package var text: String
    }

    /// Receives once more; false when the connection ended or the receive timed out.
    package mutating func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// The next response's head, taken from what arrived; nil: the connection ended first.
    package mutating func head() -> Head? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        while end == nil {
            end = buffer.firstRange(of: terminator)?.lowerBound
            if end == nil, !fill() { return nil }
        }
        let text = String(decoding: buffer[..<end!], as: UTF8.self)
        buffer.removeFirst(end! + 4)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        let field = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        let length = field.flatMap { Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) } ?? 0
        return Head(status: status, length: length, text: text)
    }

    /// Up to `length` bytes of body, as they arrive: kept when `keep`, else only counted. Fewer
    /// when the connection ended first. `first`: the body's first byte.
    package mutating func body(_ length: Int, keep: Bool) -> (bytes: [UInt8], count: Int, first: UInt8?) {
        var kept: [UInt8] = []
        var count = 0
        var first: UInt8?
        while count < length {
            if buffer.isEmpty, !fill() { break }
            if first == nil { first = buffer.first }
            let taken = min(buffer.count, length - count)
            if keep { kept += buffer[0..<taken] }
            buffer.removeFirst(taken)
            count += taken
        }
        return (kept, count, first)
    }

    /// Drops what arrived and is not read yet; returns how many bytes that was.
    package mutating func drop() -> Int {
        defer { buffer = [] }
        return buffer.count
    }

    /// Bytes arrived in the socket and not received yet (FIONREAD).
    package var arrived: Int {
        var count: Int32 = 0
        _ = ioctl(fd, UInt(FIONREAD), &count)
        return Int(count)
    }
}
