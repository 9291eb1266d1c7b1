import CAASALinux
import Glibc

/// An IPv4 or IPv6 address and port to listen on, parsed from `127.0.0.1:8443`, `[::1]:443`,
/// `:443` (all IPv6 and IPv4 addresses) or `localhost:0` (port 0: the kernel picks one).
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable, Equatable {
        case ipv4(UInt32)
        case ipv6([UInt8])
    }

    public var family: Family
    public var port: UInt16

    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public init(family: Family, port: UInt16) {
        self.family = family
        self.port = port
    }

    public init(parsing text: String) throws(ParseError) {
        guard let colon = text.lastIndex(of: ":") else {
            throw ParseError(description: "\"\(text)\" needs a port, e.g. 127.0.0.1:8443 or :443")
        }
        var host = String(text[..<colon])
        guard let port = UInt16(text[text.index(after: colon)...]) else {
            throw ParseError(description: "\"\(text)\": the port must be a number from 0 to 65535")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        if host.isEmpty || host == "*" { host = "::" }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            family = .ipv4(v4.s_addr)
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            family = .ipv6(withUnsafeBytes(of: &v6) { Array($0) })
        } else {
            throw ParseError(description: "\"\(host)\" is not an IP address; listen on an address such as 127.0.0.1, [::1] or :443")
        }
        self.port = port
    }

    public var description: String {
        switch family {
        case .ipv4: "\(host):\(port)"
        case .ipv6: "[\(host)]:\(port)"
        }
    }

    /// The address without the port: `127.0.0.1`, `::1`.
    public var host: String {
        switch family {
        case .ipv4(let a):
            var addr = in_addr(s_addr: a)
            var buf = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            inet_ntop(AF_INET, &addr, &buf, socklen_t(buf.count))
            return Self.string(buf)
        case .ipv6(let bytes):
            var addr = in6_addr()
            withUnsafeMutableBytes(of: &addr) { $0.copyBytes(from: bytes) }
            var buf = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            inet_ntop(AF_INET6, &addr, &buf, socklen_t(buf.count))
            return Self.string(buf)
        }
    }

    private static func string(_ buf: [CChar]) -> String {
        String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    var domain: Int32 {
        switch family {
        case .ipv4: AF_INET
        case .ipv6: AF_INET6
        }
    }

    /// Calls `body` with the address as a `sockaddr`.
    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        switch family {
        case .ipv4(let a):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = in_addr(s_addr: a)
            return withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        case .ipv6(let bytes):
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { $0.copyBytes(from: bytes) }
            return withUnsafePointer(to: &sin6) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
    }

    /// The address a bound socket has (to learn the port the kernel chose for port 0).
    static func local(of fd: Int32) throws(SystemError) -> SocketAddress {
        try address(of: fd, peer: false)
    }

    /// The address of a connected socket's peer.
    static func peer(of fd: Int32) throws(SystemError) -> SocketAddress {
        try address(of: fd, peer: true)
    }

    private static func address(of fd: Int32, peer: Bool) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { peer ? getpeername(fd, $0, &length) : getsockname(fd, $0, &length) }
        }
        if result != 0 { throw SystemError(call: peer ? "getpeername" : "getsockname", errno: errno) }
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    SocketAddress(family: .ipv4($0.pointee.sin_addr.s_addr), port: UInt16(bigEndian: $0.pointee.sin_port))
                }
            }
        default:
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { p in
                    var a = p.pointee.sin6_addr
                    let bytes = withUnsafeBytes(of: &a) { Array($0) }
                    return SocketAddress(family: .ipv6(bytes), port: UInt16(bigEndian: p.pointee.sin6_port))
                }
            }
        }
    }
}
