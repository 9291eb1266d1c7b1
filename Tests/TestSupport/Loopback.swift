package import Foundation
import Glibc
import Testing

/// TCP connections to the server under test, on 127.0.0.1 only.
package enum Loopback {
    /// A connected socket, or nil when the connection was refused. `receiveBuffer` sets
    /// SO_RCVBUF before connecting (a small one makes a client that reads slowly).
    package static func connect(port: Int, receiveBuffer: Int32? = nil) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Sends bytes (no SIGPIPE); returns what send returned.
    @discardableResult
    package static func send(_ fd: Int32, _ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Makes a blocking receive give up after `seconds`.
    package static func setReceiveTimeout(_ fd: Int32, seconds: Int) {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Everything received until the peer closes or the receive timeout passes.
    package static func receiveAll(_ fd: Int32) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return received
    }
}

extension Loopback {
    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released). Another
    /// process can take it before whoever it is handed to binds it: use it only where that
    /// binder proves the listener is its own (`listener(port:isOwnedBy:)`, as Pebble does) or
    /// fails loudly when the port is taken. A server that can bind port 0 itself announces its
    /// port instead (`ReadyFile`); a port nobody may listen on is a `ReservedPort`.
    package static func unusedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        return bindAnyPort(fd) ?? 0
    }

    /// Binds `fd` to 127.0.0.1 port 0; the port the kernel gave.
    static func bindAnyPort(_ fd: Int32) -> Int? {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? Int(UInt16(bigEndian: addr.sin_port)) : nil
    }

    /// Whether the listener on `port` is process `pid`'s alone: nil while nobody listens there
    /// and no other process holds the port, false when another process has a socket on it. Every
    /// socket on that port in /proc/net/tcp and tcp6 (`SocketTable`), on any address, IPv4 and
    /// IPv6, listening or connected, must be among /proc/PID/fd's (proc(5)): aasad listens with
    /// SO_REUSEPORT (Sources/Reactor/Socket.swift), so a second process may listen on the very
    /// port ours has, and a dual-stack IPv6 listener holds the IPv4 port too. Sockets no file
    /// refers to (TIME_WAIT, inode 0) hold nothing. A socket only bound, never listening, is in
    /// neither table and cannot be seen here. It tells our server from another test's that took
    /// a port picked by `unusedPort` before ours bound it: a TCP connect alone cannot.
    package static func listener(port: Int, isOwnedBy pid: pid_t) -> Bool? { listener(port: port, isOwnedBy: [pid]) }

    /// The same for a port several processes are meant to share (replicas listening with
    /// SO_REUSEPORT): every socket on it must be one of theirs.
    package static func listener(port: Int, isOwnedBy pids: [pid_t]) -> Bool? {
        var stranger: Set<Substring> = []
        // Twice at most: a socket of the owner's closed between the table's read and the fd
        // directory's is in the first and not the second; it is gone from the table when read again.
        for _ in 0..<2 {
            let rows = SocketTable.rows().filter { $0.localPort == port && $0.inode != "0" && !$0.isTimeWait }
            let owned = pids.reduce(into: Set<Substring>()) { $0.formUnion(SocketTable.socketInodes(of: $1)) }
            let others = Set(rows.map(\.inode)).subtracting(owned)
            if others.isEmpty { return rows.contains(where: \.isListening) ? true : nil }
            if !stranger.isEmpty, !stranger.isDisjoint(with: others) { return false }
            stranger = others
        }
        return false
    }
}

extension Loopback {
    /// Whether `process` alone listens on each of `ports`: false at once when another process
    /// has a socket on one (ours then fails to bind, or shares the port through SO_REUSEPORT) or
    /// ours exits. A started program that execs (/usr/bin/env
    /// does) keeps its pid. Up to 30 s a port: on a CI machine at load 25 and more pebble, a Go
    /// binary started beside three test processes and two builds, was seen to take over 10 s to
    /// listen.
    package static func listens(_ process: Process, on ports: [Int]) -> Bool {
        for port in ports {
            var ours = false
            _ = eventually(attempts: 300, interval: 0.1) {
                switch listener(port: port, isOwnedBy: process.processIdentifier) {
                case true?:
                    ours = true
                    return true
                case false?: return true
                case nil: return !process.isRunning
                }
            }
            if !ours { return false }
        }
        return true
    }
}

/// A port on 127.0.0.1 nobody listens on for as long as this value lives: a socket bound to it
/// and never put to listen(2), so a connection there is refused, and (without SO_REUSEADDR) no
/// other process can bind it meanwhile. For a test whose point is a refused connection: a port
/// only picked and released could be taken by another test's server, which would then answer.
package final class ReservedPort: @unchecked Sendable {
    package let port: Int
    let fd: Int32

    /// Records an issue when no port could be bound (descriptors ran out): port 0 would then
    /// stand for a refused connection without anything reserved.
    package init() {
        // Close-on-exec: a server the test starts does not keep the port past this value.
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        let bound = fd >= 0 ? Loopback.bindAnyPort(fd) : nil
        if bound == nil { Issue.record("no port reserved: socket or bind failed, errno \(errno)") }
        port = bound ?? 0
    }

    deinit { if fd >= 0 { close(fd) } }
}

/// A server in another process that binds port 0 and writes the port it got to a file once it
/// listens: the test reads the port there instead of picking one that could be taken before the
/// server binds it (a client would then meet another test's server, as a CI run did: "SSL
/// certificate problem: self-signed certificate").
package enum ReadyFile {
    /// Python for such a server: `announce(port, path)` writes the port to `path` through a
    /// rename, so a reader never sees half of it. Call it after listen (http.server listens in
    /// its constructor).
    package static let python = """
        def announce(port, path):
            import os
            with open(path + ".tmp", "w") as f: f.write(str(port))
            os.rename(path + ".tmp", path)

        """

    /// The port written to `path`, waiting up to 30 s (a loaded CI machine is slow to start
    /// Python); nil when `process` exits first or the time passes.
    package static func port(_ path: String, of process: Process) -> Int? {
        var port: Int?
        _ = eventually(attempts: 300, interval: 0.1) {
            if let text = try? String(contentsOfFile: path, encoding: .utf8), let bound = Int(text), bound > 0, bound < 65536 {
                port = bound
                return true
            }
            return !process.isRunning
        }
        return port
    }
}

extension Loopback {
    /// How many of the bytes sent on `fd` its peer on loopback has not read yet: the receive queue
    /// of the peer's socket as /proc/net/tcp lists it (nil when not listed). Zero once the server
    /// has read what a test sent: the event a test waits for before it acts on a half-sent request.
    package static func unreadByPeer(_ fd: Int32) -> Int? {
        func port(_ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
            var addr = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let got = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { get(fd, $0, &length) } }
            return got == 0 ? Int(UInt16(bigEndian: addr.sin_port)) : nil
        }
        guard let local = port({ getsockname($0, $1, $2) }), let remote = port({ getpeername($0, $1, $2) }) else { return nil }
        // The peer's row: its local address is our remote one, and the other way round.
        let loopback = "0100007F"
        return SocketTable.rows().first {
            !$0.isIPv6 && $0.localAddress == loopback && $0.localPort == remote && $0.remoteAddress == loopback && $0.remotePort == local
        }?.receiveQueue
    }
}
