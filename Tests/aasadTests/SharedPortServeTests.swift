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
        let directory = try TemporaryDirectory(prefix: "shared-port")
        let other = Process()
        other.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        other.arguments = [
            "python3", "-c",
            ReadyFile.python + """
                import socket, sys, time
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.bind(("127.0.0.1", 0)); s.listen()
                announce(s.getsockname()[1], sys.argv[1])
                time.sleep(60)
                """,
            directory.path("port"),
        ]
        try other.run()
        defer {
            kill(other.processIdentifier, SIGKILL)
            other.waitUntilExit()
        }
        let port = try #require(ReadyFile.port(directory.path("port"), of: other))
        let server = try RunningServer(config: TestConfig(), extra: ["--https", "127.0.0.1:\(port)"])
        // The port is one of several listeners (a flag adds to the defaults): each is checked.
        #expect(server.listenerPorts.contains(port))
        #expect(throws: RunningServer.ServerError.self) { try server.requireOwnListeners() }
        let alone = try RunningServer(config: TestConfig())
        #expect(throws: Never.self) { try alone.requireOwnListeners() }
    }
}
