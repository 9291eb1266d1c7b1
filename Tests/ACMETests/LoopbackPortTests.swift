import Foundation
import TestSupport
import Testing

/// The port helpers the servers of these tests start with (Tests/TestSupport/Loopback.swift): a
/// listener told apart by its owner, a reserved port nobody can take, a port announced by the
/// server that bound it.
@Suite("loopback ports: whose listener, reserved, announced")
struct LoopbackPortTests {
    @Test("a listener is its owner's, not ours; a port nobody listens on is nil")
    func owner() throws {
        let stand = try StandInServer(mode: "echo")
        #expect(Loopback.listener(port: stand.port, isOwnedBy: stand.process.processIdentifier) == true)
        // Another process's listener (a TCP connect would pass against it).
        #expect(Loopback.listener(port: stand.port, isOwnedBy: getpid()) == false)
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        #expect(Loopback.listener(port: nobody.port, isOwnedBy: getpid()) == nil)
    }

    @Test("a server started on a port another process holds is not taken for ready: false before the wait runs out")
    func takenPort() throws {
        let other = try StandInServer(mode: "echo")
        let late = Process()
        late.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        late.arguments = ["python3", "-m", "http.server", String(other.port), "--bind", "127.0.0.1"]
        late.standardOutput = FileHandle.nullDevice
        late.standardError = FileHandle.nullDevice
        try late.run()
        defer {
            kill(late.processIdentifier, SIGKILL)
            late.waitUntilExit()
        }
        let start = Date()
        #expect(!Loopback.listens(late, on: [other.port]))
        // Decided by the other's listener, not by the 30 s a port may take.
        #expect(Date().timeIntervalSince(start) < 10)
    }

    @Test("a reserved port refuses connections and no other socket can bind it while it lives")
    func reserved() throws {
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        #expect(nobody.port > 0)
        #expect(Loopback.connect(port: nobody.port) == nil)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var on: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(nobody.port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(bound != 0 && errno == EADDRINUSE)
    }

    @Test("a server that binds port 0 announces the port it listens on; one that exits first announces none, at once")
    func announced() throws {
        let directory = try TemporaryDirectory(prefix: "ready-file")
        let script =
            ReadyFile.python + """
                import http.server, sys
                server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
                announce(server.server_address[1], sys.argv[1])
                server.serve_forever()
                """
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-c", script, directory.path("port")]
        try server.run()
        defer {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        let port = try #require(ReadyFile.port(directory.path("port"), of: server))
        #expect(Loopback.listener(port: port, isOwnedBy: server.processIdentifier) == true)
        let failing = Process()
        failing.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        failing.arguments = ["python3", "-c", "raise SystemExit(1)"]
        try failing.run()
        let start = Date()
        #expect(ReadyFile.port(directory.path("never"), of: failing) == nil)
        #expect(Date().timeIntervalSince(start) < 10)
    }
}
