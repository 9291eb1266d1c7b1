import Glibc

/// An `api.listen` value: an IP literal and a port. Host names are refused (a name that resolves
/// to another address tomorrow would move the API, and its TLS rule, with it); `localhost` is
/// taken as 127.0.0.1. The one reading of such a value: the listener binds it, and the settings'
/// TLS rule (Daemon's APISettings) asks `isLoopback(_:)` of it, so the two never disagree.
package struct APIListenAddress: Equatable {
    enum Host: Equatable {
        case ipv4(in_addr_t)  // network order
        case ipv6([UInt8])  // 16 bytes
        /// `:port`: every address, IPv6 and IPv4 on one socket.
        case any
    }

    var host: Host
    var port: UInt16

    /// Parses "127.0.0.1:8444", "[::1]:8444", "0.0.0.0:8444", ":8444" and "localhost:8444".
    package init(_ text: String) throws(APIListenerError) {
        let bytes = Array(text.utf8)
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")) else {
            throw .invalidAddress(text, reason: "no port (the form is ADDRESS:PORT)")
        }
        let portText = bytes[(colon + 1)...]
        // At most five digits: a longer run could not be a port, and Int parsing of it is bounded.
        guard (1...5).contains(portText.count), portText.allSatisfy({ (48...57).contains($0) }),
            let port = UInt16(String(decoding: portText, as: UTF8.self))
        else { throw .invalidAddress(text, reason: "the port is not a number from 0 to 65535") }
        self.port = port
        var hostBytes = Array(bytes[..<colon])
        if hostBytes.isEmpty {
            host = .any
            return
        }
        if hostBytes.first == UInt8(ascii: "[") {
            guard hostBytes.count > 2, hostBytes.last == UInt8(ascii: "]") else {
                throw .invalidAddress(text, reason: "an IPv6 address is written in brackets, [::1]:8444")
            }
            hostBytes = Array(hostBytes.dropFirst().dropLast())
            var address = in6_addr()
            guard !hostBytes.contains(0), inet_pton(AF_INET6, String(decoding: hostBytes, as: UTF8.self), &address) == 1 else {
                throw .invalidAddress(text, reason: "not an IPv6 address")
            }
            host = .ipv6(withUnsafeBytes(of: address) { Array($0) })
            return
        }
        let name = String(decoding: hostBytes, as: UTF8.self)
        if name == "localhost" {
            host = .ipv4(inet_addr("127.0.0.1"))
            return
        }
        var address = in_addr()
        guard !hostBytes.contains(0), inet_pton(AF_INET, name, &address) == 1 else {
            throw .invalidAddress(text, reason: "not an IP address (an IPv6 address goes in brackets)")
        }
        host = .ipv4(address.s_addr)
    }

    /// Whether only this machine can reach the address: 127.0.0.0/8, ::1, or an IPv4-mapped
    /// 127.0.0.0/8 (RFC 4291 §2.5.5.2). Plain HTTP is allowed there only.
    package var isLoopback: Bool {
        switch host {
        case .any: false
        case .ipv4(let a): UInt32(bigEndian: a) >> 24 == 127
        case .ipv6(let b):
            b == [UInt8](repeating: 0, count: 15) + [1]
                || (b[0..<10].allSatisfy { $0 == 0 } && b[10] == 0xFF && b[11] == 0xFF && b[12] == 127)
        }
    }

    /// Whether `text` is an address this type parses and that address is loopback; a value it
    /// refuses (a host name such as `127.example.com`, no port) is not loopback.
    package static func isLoopback(_ text: String) -> Bool {
        (try? APIListenAddress(text))?.isLoopback ?? false
    }
}

/// A peer's address as text, for logs and the per-peer bound: an IPv4-mapped IPv6 address as
/// IPv4, so a client counts once whichever socket family accepted it.
func peerText(_ storage: sockaddr_storage) -> String {
    var storage = storage
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    switch Int32(storage.ss_family) {
    case AF_INET:
        let ok = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin in
                withUnsafePointer(to: sin.pointee.sin_addr) { inet_ntop(AF_INET, $0, &buffer, socklen_t(buffer.count)) != nil }
            }
        }
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    case AF_INET6:
        let bytes: [UInt8] = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
                withUnsafeBytes(of: sin6.pointee.sin6_addr) { Array($0) }
            }
        }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return bytes[12...].map { String($0) }.joined(separator: ".")
        }
        let ok = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &buffer, socklen_t(buffer.count)) != nil }
        return ok ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
    default:
        return "?"
    }
}

/// The key the per-peer connection bound counts under: an IPv4 address (or IPv4-mapped IPv6
/// address) as itself, an IPv6 address by its /64 prefix. One IPv6 host is commonly given a whole
/// /64 (RFC 7421 §1, RFC 8981 §3: temporary addresses change within it at will), so counting
/// full IPv6 addresses would let one client hold every connection slot with addresses of its own.
func peerBoundKey(_ storage: sockaddr_storage) -> String {
    guard Int32(storage.ss_family) == AF_INET6 else { return peerText(storage) }
    var prefix = storage
    let mapped = withUnsafeMutablePointer(to: &prefix) {
        $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { sin6 in
            withUnsafeMutableBytes(of: &sin6.pointee.sin6_addr) { bytes in
                if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return true }
                for i in 8..<16 { bytes[i] = 0 }
                return false
            }
        }
    }
    return mapped ? peerText(storage) : peerText(prefix) + "/64"
}
