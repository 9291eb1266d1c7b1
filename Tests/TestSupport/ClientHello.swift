import Glibc

/// A TLS 1.2 ClientHello built byte by byte (RFC 5246 §7.4.1.2), for tests that send what no TLS
/// library would: an ALPN extension whose lengths lie. Everything else in it is ordinary, so
/// OpenSSL reaches the server's ClientHello callback with it.
package enum HandBuiltClientHello {
    /// One handshake record holding a ClientHello with SNI `serverName` (when given) and an ALPN
    /// extension whose body is `alpnBody`, byte for byte (none when nil).
    package static func record(serverName: String?, alpnBody: [UInt8]?) -> [UInt8] {
        var extensions: [UInt8] = []
        if let serverName {
            let name = Array(serverName.utf8)
            let entry = [0] + u16(name.count) + name  // host_name
            extensions += u16(0) + u16(entry.count + 2) + u16(entry.count) + entry
        }
        if let alpnBody { extensions += u16(16) + u16(alpnBody.count) + alpnBody }
        // supported_groups: x25519, and P-256, which TLS 1.2 also requires of an ECDSA certificate's key.
        extensions += u16(10) + u16(6) + u16(4) + u16(0x001D) + u16(0x0017)
        extensions += u16(11) + u16(2) + [1, 0]  // ec_point_formats: uncompressed
        extensions += u16(13) + u16(6) + u16(4) + u16(0x0403) + u16(0x0804)  // signature_algorithms
        var body: [UInt8] = [3, 3] + [UInt8](repeating: 0x5A, count: 32) + [0]  // version, random, no session id
        body += u16(4) + u16(0xC02B) + u16(0xC02F)  // ECDHE-ECDSA / ECDHE-RSA AES128-GCM
        body += [1, 0]  // compression: null
        body += u16(extensions.count) + extensions
        let handshake = [1] + u24(body.count) + body
        return [22, 3, 1] + u16(handshake.count) + handshake
    }

    /// Sends a ClientHello with SNI `serverName` to `port` on loopback and returns how many bytes
    /// the server's first answer had (-1: no connection; 0 or less: closed or nothing in 5 s).
    /// Nothing is completed: the server's SNI callback has run by the time it answers.
    package static func send(serverName: String, port: Int) -> Int {
        guard let fd = Loopback.connect(port: port) else { return -1 }
        defer { close(fd) }
        Loopback.setReceiveTimeout(fd, seconds: 5)
        _ = Loopback.send(fd, record(serverName: serverName, alpnBody: nil))
        var buffer = [UInt8](repeating: 0, count: 512)
        return recv(fd, &buffer, buffer.count, 0)
    }

    /// A well-formed ALPN extension body (RFC 7301 §3.1) for `protocols`.
    package static func alpnBody(_ protocols: [String]) -> [UInt8] {
        let list = protocols.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
        return u16(list.count) + list
    }

    /// The description of the fatal alert that `reply` starts with (RFC 5246 §7.2: a record of
    /// type 21 holding level 2 and the description), or nil when it starts with anything else.
    package static func fatalAlert(in reply: [UInt8]) -> UInt8? {
        guard reply.count >= 7, reply[0] == 21, reply[5] == 2 else { return nil }
        return reply[6]
    }

    private static func u16(_ n: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] }
    private static func u24(_ n: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: n >> 16)] + u16(n) }
}
