import Foundation
import TestSupport
import Testing

/// The port helpers the servers of these tests start with (Tests/TestSupport/Loopback.swift): a
/// listener told apart by its owner, a reserved port nobody can take, a port announced by the
/// server that bound it.
@Suite("loopback ports: whose listener, reserved, announced")
struct LoopbackPortTests {
    /// A Python listener started with `arguments` (after the script's own), its port read from a
    /// `ReadyFile`; killed when the returned process is released by `stop`.
    static func python(_ body: String, _ arguments: [String] = [], in directory: TemporaryDirectory, name: String) throws -> (
        Process, Int
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [Tool.python3, "-c", ReadyFile.python + "import socket, sys, time\n" + body, directory.path(name)] + arguments
        try process.run()
        guard let port = ReadyFile.port(directory.path(name), of: process) else {
            stop(process)
            throw PebbleError("\(name) announced no port")
        }
        return (process, port)
    }

    static func stop(_ process: Process) {
        process.killAndWait()
    }

    @Test(
        "a listener is its owner's, not ours, on 127.0.0.1, on every address (0.0.0.0) and on IPv6 dual-stack (::); a port nobody listens on is nil"
    )
    func owner() throws {
        let stand = try StandInServer(mode: "echo")
        #expect(Loopback.listener(port: stand.port, isOwnedBy: stand.process.processIdentifier) == true)
        // Another process's listener (a TCP connect would pass against it).
        #expect(Loopback.listener(port: stand.port, isOwnedBy: getpid()) == false)
        let directory = try TemporaryDirectory(prefix: "loopback-owner")
        let listen = """
            family = socket.AF_INET6 if ":" in sys.argv[2] else socket.AF_INET
            s = socket.socket(family, socket.SOCK_STREAM)
            if family == socket.AF_INET6: s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            s.bind((sys.argv[2], 0)); s.listen()
            announce(s.getsockname()[1], sys.argv[1])
            time.sleep(60)
            """
        for address in ["0.0.0.0", "::"] {
            let (holder, port) = try Self.python(listen, [address], in: directory, name: address)
            defer { Self.stop(holder) }
            #expect(Loopback.listener(port: port, isOwnedBy: holder.processIdentifier) == true, "\(address)")
            #expect(Loopback.listener(port: port, isOwnedBy: getpid()) == false, "\(address)")
        }
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        #expect(Loopback.listener(port: nobody.port, isOwnedBy: getpid()) == nil)
    }

    @Test("two processes listening on one port with SO_REUSEPORT: the listener is neither's alone")
    func sharedPort() throws {
        let first = try ReusePortListener()
        defer { first.stop() }
        let port = first.port
        #expect(Loopback.listener(port: port, isOwnedBy: first.process.processIdentifier) == true)
        let second = try ReusePortListener(port: port)
        defer { second.stop() }
        #expect(second.port == port)
        #expect(Loopback.listener(port: port, isOwnedBy: first.process.processIdentifier) == false)
        #expect(Loopback.listener(port: port, isOwnedBy: second.process.processIdentifier) == false)
    }

    @Test(
        "a server started on a port another process holds, that stays up without listening, is not taken for ready: false before the wait runs out"
    )
    func takenPort() throws {
        let other = try StandInServer(mode: "echo")
        // Stays alive after its bind fails, as pebble-challtestsrv does ("bind: address already
        // in use"): only the other's listener can make the wait end early.
        let late = Process()
        late.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        late.arguments = [
            Tool.python3, "-c",
            """
            import socket, sys, time
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen()
            except OSError:
                pass
            time.sleep(60)
            """,
            String(other.port),
        ]
        try late.run()
        defer { Self.stop(late) }
        let start = Date()
        #expect(!Loopback.listens(late, on: [other.port]))
        // Decided by the other's listener, not by the 30 s a port may take nor by an exit.
        #expect(Date().timeIntervalSince(start) < 10)
        #expect(late.isRunning)
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
        server.arguments = [Tool.python3, "-c", script, directory.path("port")]
        try server.run()
        defer {
            server.killAndWait()
        }
        let port = try #require(ReadyFile.port(directory.path("port"), of: server))
        #expect(Loopback.listener(port: port, isOwnedBy: server.processIdentifier) == true)
        let failing = Process()
        failing.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        failing.arguments = [Tool.python3, "-c", "raise SystemExit(1)"]
        try failing.run()
        let start = Date()
        #expect(ReadyFile.port(directory.path("never"), of: failing) == nil)
        #expect(Date().timeIntervalSince(start) < 10)
    }
}
