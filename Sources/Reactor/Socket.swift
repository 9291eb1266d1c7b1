import CAASALinux
import Glibc

/// Socket set-up and the per-connection calls, non-blocking throughout.
public enum Socket {
    /// Connections the kernel queues before `accept` (the `listen` backlog). The kernel caps it at
    /// `net.core.somaxconn`.
    public static let backlog: Int32 = 4096

    /// A non-blocking listening socket. With `reusePort`, several sockets (one per loop) bind the
    /// same address and the kernel spreads connections over them (SO_REUSEPORT).
    public static func listen(on address: SocketAddress, reusePort: Bool) throws(SystemError) -> Int32 {
        let fd = try syscallOrThrow(
            "socket", { socket(address.domain, Int32(SOCK_STREAM.rawValue) | CAASALinux_SOCK_NONBLOCK | CAASALinux_SOCK_CLOEXEC, 0) })
        do throws(SystemError) {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if reusePort { try setOption(fd, SOL_SOCKET, SO_REUSEPORT, 1) }
            if case .ipv6 = address.family { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            if address.withSockaddr({ bind(fd, $0, $1) }) != 0 { throw SystemError(call: "bind \(address)", errno: errno) }
            _ = try syscallOrThrow("listen", { Glibc.listen(fd, backlog) })
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    public static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var v = value
        _ = try syscallOrThrow("setsockopt", { setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) })
    }

    /// The address a listener is bound to.
    public static func localAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        try SocketAddress.local(of: fd)
    }

    /// The address of a connected socket's peer.
    public static func peerAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        try SocketAddress.peer(of: fd)
    }

    /// Accepts one connection, non-blocking and close-on-exec.
    public static func accept(_ listener: Int32) throws(SystemError) -> IOResult<Int32> {
        try syscall("accept4", { CAASALinux_accept4(listener, CAASALinux_SOCK_NONBLOCK | CAASALinux_SOCK_CLOEXEC) })
    }

    public static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("read", { Glibc.read(fd, buffer.baseAddress, buffer.count) })
    }

    public static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        try syscall("write", { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) })
    }

    /// Turns off Nagle's algorithm: responses go out as soon as they are written.
    public static func setNoDelay(_ fd: Int32) {
        _ = try? setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Shuts the write side: the peer reads end-of-stream after the bytes already sent.
    public static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes a socket (see `Files.close`).
    public static func close(_ fd: Int32) { Files.close(fd) }
}

extension SystemError {
    /// The process or system is out of descriptors (EMFILE, ENFILE).
    public var isDescriptorExhaustion: Bool { errno == EMFILE || errno == ENFILE }
}
