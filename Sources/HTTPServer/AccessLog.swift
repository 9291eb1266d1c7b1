import HTTPCore
import Reactor

/// The optional access log: one line per request, in Apache's vhost_combined format (what log
/// tools read) or one JSON object per line. Each worker fills its own buffer and writes it once
/// per loop iteration, so logging costs a copy per request and a write per batch, never a lock.
public final class AccessLog: Sendable {
    public enum Format: Sendable { case text, json }

    public let format: Format
    /// The descriptor the workers write to; `reopen` replaces the file under the same number.
    let fd: Int32
    private let path: String?

    public struct OpenError: Error, CustomStringConvertible {
        public var description: String
    }

    /// `stdout`, `stderr` or a file path (created with mode 0640, appended to).
    public init(destination: String, format: Format) throws(OpenError) {
        self.format = format
        switch destination {
        case "stdout":
            fd = 1
            path = nil
        case "stderr":
            fd = 2
            path = nil
        default:
            do {
                fd = try Files.openForAppending(destination)
            } catch {
                throw OpenError(description: "cannot open the access log \(destination): \(error.reason)")
            }
            path = destination
        }
    }

    deinit {
        if path != nil { Files.close(fd) }
    }

    /// Opens the file again (after logrotate moved it) and puts it under the same descriptor
    /// number, so workers writing at that moment write to one file or the other, never to a
    /// closed descriptor.
    public func reopen() throws(OpenError) {
        guard let path else { return }
        do {
            let opened = try Files.openForAppending(path)
            defer { Files.close(opened) }
            try Files.replace(fd, with: opened)
        } catch {
            throw OpenError(description: "cannot reopen the access log \(path): \(error.reason)")
        }
    }
}

/// One request as the access log records it.
struct AccessEntry {
    var client: String
    /// The normalised host (lower case, no port), as sites are looked up.
    var host: String?
    var method: Method
    /// The request target: path and query.
    var target: UnsafeRawBufferPointer
    var http2: Bool
    var status: Int
    var bytes: Int
    var userAgent: UnsafeRawBufferPointer?
}

/// A worker's pending access log lines.
struct AccessLogBuffer {
    let log: AccessLog
    private var bytes: [UInt8] = []
    private var second: Int64 = -1
    private var stamp: [UInt8] = []

    /// Written when it grows past this, and at the end of each loop iteration.
    static let flushSize = 64 * 1024

    init(log: AccessLog) {
        self.log = log
        bytes.reserveCapacity(Self.flushSize + 4096)
    }

    var isEmpty: Bool { bytes.isEmpty }
    var isFull: Bool { bytes.count >= Self.flushSize }

    mutating func append(_ e: AccessEntry, now seconds: Int64) {
        if seconds != second {
            second = seconds
            stamp = Array((log.format == .text ? HTTPDate.common(seconds) : HTTPDate.iso8601(seconds)).utf8)
        }
        let method: StaticString = e.method == .get ? "GET" : e.method == .head ? "HEAD" : "OTHER"
        let protocolName: StaticString = e.http2 ? "HTTP/2.0" : "HTTP/1.1"
        switch log.format {
        case .text:
            // vhost_combined: host client - - [time] "METHOD path PROTOCOL" status bytes "-" "agent"
            appendEscaped(e.host, fallback: "-")
            bytes.append(32)
            bytes += e.client.utf8
            bytes += " - - [".utf8
            bytes += stamp
            bytes += "] \"".utf8
            appendStatic(method)
            bytes.append(32)
            appendEscaped(e.target, fallback: "-")
            bytes.append(32)
            appendStatic(protocolName)
            bytes += "\" \(e.status) \(e.bytes) \"-\" \"".utf8
            appendEscaped(e.userAgent, fallback: "-")
            bytes += "\"\n".utf8
        case .json:
            bytes += "{\"time\":\"".utf8
            bytes += stamp
            bytes += "\",\"client\":\"".utf8
            bytes += e.client.utf8
            bytes += "\",\"host\":".utf8
            appendJSON(e.host)
            bytes += ",\"method\":\"".utf8
            appendStatic(method)
            bytes += "\",\"path\":".utf8
            appendJSON(e.target)
            bytes += ",\"protocol\":\"".utf8
            appendStatic(protocolName)
            bytes += "\",\"status\":\(e.status),\"bytes\":\(e.bytes),\"userAgent\":".utf8
            appendJSON(e.userAgent)
            bytes += "}\n".utf8
        }
    }

    private mutating func appendStatic(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    private mutating func appendEscaped(_ field: String?, fallback: StaticString) {
        guard var field else { return appendStatic(fallback) }
        field.withUTF8 { appendEscaped(UnsafeRawBufferPointer($0), fallback: fallback) }
    }

    private mutating func appendJSON(_ field: String?) {
        guard var field else { return bytes += "null".utf8 }
        field.withUTF8 { appendJSON(UnsafeRawBufferPointer($0)) }
    }

    /// Client bytes as nginx logs them: printable ASCII as is, `"`, `\` and anything else as \xHH.
    private mutating func appendEscaped(_ field: UnsafeRawBufferPointer?, fallback: StaticString) {
        guard let field, !field.isEmpty else { return appendStatic(fallback) }
        for b in field {
            if b >= 0x20 && b < 0x7F && b != 0x22 && b != 0x5C {
                bytes.append(b)
            } else {
                bytes += "\\x".utf8
                Hex.append(b, to: &bytes)
            }
        }
    }

    /// A JSON string (null when absent). UTF-8 is kept, bytes that are not UTF-8 become U+FFFD
    /// and control characters are escaped, so the line stays valid JSON whatever the client sent.
    private mutating func appendJSON(_ field: UnsafeRawBufferPointer?) {
        guard let field else { return bytes += "null".utf8 }
        bytes.append(0x22)
        func add(_ b: UInt8) {
            switch b {
            case 0x22: bytes += "\\\"".utf8
            case 0x5C: bytes += "\\\\".utf8
            case ..<0x20:
                bytes += "\\u00".utf8
                Hex.append(b, to: &bytes)
            default: bytes.append(b)
            }
        }
        if field.allSatisfy({ $0 < 0x80 }) {
            field.forEach(add)
        } else {
            String(decoding: field, as: UTF8.self).utf8.forEach(add)
        }
        bytes.append(0x22)
    }

    /// Writes the pending lines (best effort: a full disk must not stop serving).
    mutating func flush() {
        bytes.withUnsafeBytes { _ = Files.writeAll(log.fd, $0) }
        bytes.removeAll(keepingCapacity: true)
    }
}
