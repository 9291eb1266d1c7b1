import Foundation
import TestSupport
import Testing

/// `RunningServer.requireOwnListeners`, which the tests serving on pebble's picked ports call:
/// aasad listens with SO_REUSEPORT (Sources/Reactor/Socket.swift), so its bind succeeds on a port
/// another process of the same user listens on with it too, and connections are split.
@Suite("serve: a listener shared with another process is told")
struct SharedPortServeTests {
    @Test("aasad on a port another process listens on with SO_REUSEPORT is refused; aasad on its own ports is not")
    func shared() throws {
        let other = try ReusePortListener()
        defer { other.stop() }
        let port = other.port
        let server = try RunningServer(config: TestConfig(), extra: ["--https", "127.0.0.1:\(port)"])
        // The port is one of several listeners (a flag adds to the defaults): each is checked.
        #expect(server.listenerPorts.contains(port))
        #expect(throws: RunningServer.ServerError.self) { try server.requireOwnListeners() }
        let alone = try RunningServer(config: TestConfig())
        #expect(throws: Never.self) { try alone.requireOwnListeners() }
    }
}
