import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport

@testable import TenantAPI

/// A listener on 127.0.0.1 (port 0) whose handler echoes what it got, so tests check what a
/// handler sees: `METHOD TARGET`, each field as `name: value`, `secure: true|false`, then an
/// empty line and the body. `/big/N` answers N bytes; `/status/N` answers status N; `/bad-header` answers a field with a CR.
final class EchoListener: Sendable {
    let listener: APIListener
    private let seen: Seen

    private final class Seen: Sendable {
        let requests = Mutex<[APIRequest]>([])
    }

    init(limits: APIListenerLimits = .init(), listen: String = "127.0.0.1:0", tls: APITLSFiles? = nil) throws {
        let seen = Seen()
        self.seen = seen
        listener = try APIListener(
            listen: listen, tls: tls, limits: limits,
            handler: { request in
                seen.requests.withLock { $0.append(request) }
                if request.target.hasPrefix("/big/"), let n = Int(request.target.dropFirst(5)) {
                    return APIResponse(status: 200, body: [UInt8](repeating: 120, count: n))
                }
                if request.target.hasPrefix("/status/"), let status = Int(request.target.dropFirst(8)) {
                    return APIResponse(status: status, body: Array("{}".utf8))
                }
                if request.target == "/bad-header" {
                    return APIResponse(status: 200, headers: [("X-Split", "a\r\nSet-Cookie: b")])
                }
                var text = "\(request.method) \(request.target)\n"
                for (name, value) in request.headers { text += "\(name): \(value)\n" }
                text += "secure: \(request.secure)\n\n"
                return APIResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Array(text.utf8) + request.body)
            }, logger: Logger(label: "api-test"))
        listener.start()
    }

    deinit { listener.stop() }

    var port: Int { listener.port }
    var requests: [APIRequest] { seen.requests.withLock { $0 } }
    var handled: Int { seen.requests.withLock { $0.count } }
}

extension APIListenerLimits {
    /// Short timeouts for tests: each cut happens well within a test's patience.
    static func short(
        header: Duration = .seconds(10), body: Duration = .seconds(10), idle: Duration = .seconds(10),
        write: Duration = .seconds(10)
    ) -> APIListenerLimits {
        var limits = APIListenerLimits()
        limits.headerTimeout = header
        limits.bodyTimeout = body
        limits.idleTimeout = idle
        limits.writeTimeout = write
        limits.stopTimeout = .seconds(5)
        return limits
    }
}

/// A raw client socket on loopback, for bytes no HTTP client would send.
final class RawClient {
    let fd: Int32

    /// Connects to 127.0.0.1:`port`, from `source` (another loopback address) when given.
    init?(port: Int, source: String? = nil, receiveBuffer: Int32? = nil) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        self.fd = fd
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = inet_addr(source)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { return nil }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
    }

    deinit { close(fd) }

    @discardableResult
    func send(_ text: String) -> Int { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Int { Loopback.send(fd, bytes) }

    /// What arrives until the server closes (`closed`), or until `seconds` pass without it.
    func readUntilClose(seconds: Double = 10) -> (bytes: [UInt8], closed: Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (received, false) }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return (received, true) }
            received += buffer[0..<n]
        }
    }

    /// Reads until `count` whole responses have arrived (or the server closes, or 10 s pass).
    func readResponses(_ count: Int, seconds: Double = 10) -> [RawResponse] {
        let deadline = Date().addingTimeInterval(seconds)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let parsed = RawResponse.parseAll(received)
            if parsed.count >= count { return parsed }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return parsed }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(left * 1000) + 1) > 0 else { continue }
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { return parsed }
            received += buffer[0..<n]
        }
    }
}

/// One response as bytes arrived: status, fields (names in lower case), body.
struct RawResponse {
    var status: Int
    var headers: [String: String]
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The whole responses at the start of `bytes` (Content-Length framed; 1xx and 204 without body).
    static func parseAll(_ bytes: [UInt8]) -> [RawResponse] {
        var out: [RawResponse] = []
        var i = 0
        let separator: [UInt8] = [13, 10, 13, 10]
        while i < bytes.count {
            var end = -1
            var k = i
            while k + 4 <= bytes.count {
                if Array(bytes[k..<(k + 4)]) == separator {
                    end = k
                    break
                }
                k += 1
            }
            guard end >= 0 else { break }
            let lines = String(decoding: bytes[i..<end], as: UTF8.self).components(separatedBy: "\r\n")
            let status = Int(lines[0].split(separator: " ").dropFirst().first ?? "") ?? 0
            var headers: [String: String] = [:]
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
            let length = Int(headers["content-length"] ?? "0") ?? 0
            let bodyStart = end + 4
            guard bodyStart + length <= bytes.count else { break }
            out.append(RawResponse(status: status, headers: headers, body: Array(bytes[bodyStart..<(bodyStart + length)])))
            i = bodyStart + length
        }
        return out
    }
}
