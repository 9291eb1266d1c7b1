package import Foundation
import Synchronization

/// One keep-alive HTTP/1.1 connection that reads responses by Content-Length, reconnecting when
/// the server closes. Enough to fetch many times a second and check every answer whole.
package final class KeepAliveClient {
    package let port: Int
    private var fd: Int32 = -1

    package init(port: Int) { self.port = port }
    deinit { if fd >= 0 { close(fd) } }

    package struct Answer {
        package var status: Int
        package var body: [UInt8]
        package var complete: Bool
    }

    package func get(host: String, path: String) -> Answer? {
        for _ in 0..<2 {
            if fd < 0 { connectNow() }
            guard fd >= 0 else { return nil }
            let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host)\r\n\r\n".utf8)
            if Loopback.send(fd, request) == request.count,
                let answer = readResponse()
            {
                return answer
            }
            close(fd)
            fd = -1
        }
        return nil
    }

    private func connectNow() {
        fd = Loopback.connect(port: port) ?? -1
        reader = ResponseReader(fd: fd)
        guard fd >= 0 else { return }
        Loopback.setReceiveTimeout(fd, seconds: 5)
    }

    /// The connection's reader, made new with each connection.
    private var reader = ResponseReader(fd: -1)

    private func readResponse() -> Answer? {
        guard let head = reader.head() else { return nil }
        let body = reader.body(head.length, keep: true)
        return Answer(status: head.status, body: body.bytes, complete: body.count == head.length)
    }
}

/// Fetches a host's AASA file in a loop on its own thread and checks each answer against the
/// versions written so far.
package final class FetchLoop: Sendable {
    private struct State {
        var allowed: Set<[UInt8]> = []
        var allow404 = false
        var violations: [String] = []
        var answers = 0
        var running = true
        /// When each version was first seen, for reload latency.
        var firstSeen: [[UInt8]: Date] = [:]
    }

    private let state = Mutex(State())
    private let done = DispatchSemaphore(value: 0)

    /// `allowed` and `allow404` hold from the first fetch: the loop starts at once, so setting
    /// them after `init` would race its first answer.
    package init(port: Int, host: String, allowing allowed: [[UInt8]] = [], allow404: Bool = false) {
        state.withLock {
            $0.allowed = Set(allowed)
            $0.allow404 = allow404
        }
        Thread { [self] in
            let client = KeepAliveClient(port: port)
            while state.withLock({ $0.running }) {
                let answer = client.get(host: host, path: "/.well-known/apple-app-site-association")
                state.withLock { state in
                    state.answers += 1
                    guard let answer else {
                        state.violations.append("no answer")
                        return
                    }
                    if !answer.complete {
                        state.violations.append("truncated body (\(answer.body.count) bytes)")
                    } else if answer.status == 200 {
                        if !state.allowed.contains(answer.body) {
                            state.violations.append(
                                "unexpected body (\(answer.body.count) bytes): \(String(decoding: answer.body.suffix(80), as: UTF8.self))")
                        }
                        if state.firstSeen[answer.body] == nil { state.firstSeen[answer.body] = Date() }
                    } else if answer.status == 404 {
                        if !state.allow404 { state.violations.append("404 while \(host) exists") }
                    } else {
                        state.violations.append("status \(answer.status)")
                    }
                }
            }
            done.signal()
        }.start()
    }

    package func allow(_ body: [UInt8]) { state.withLock { _ = $0.allowed.insert(body) } }
    package func setAllow404(_ value: Bool) { state.withLock { $0.allow404 = value } }
    package func seen(_ body: [UInt8]) -> Date? { state.withLock { $0.firstSeen[body] } }
    package var count: Int { state.withLock { $0.answers } }

    package func stop() -> [String] {
        state.withLock { $0.running = false }
        done.wait()
        return state.withLock { $0.violations }
    }
}
