package import Glibc

/// systemd's readiness protocol (sd_notify): one datagram to `$NOTIFY_SOCKET`, no library
/// (Caddy's notify_linux.go does the same). Silent when not run by systemd.
package enum SystemdNotify {
    static func send(_ state: String) {
        guard let path = getenv("NOTIFY_SOCKET").flatMap({ String(validatingCString: $0) }), !path.isEmpty else { return }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // an abstract socket name
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard bytes.count < capacity else { return }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        _ = state.withCString { text in
            withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(fd, text, strlen(text), Int32(MSG_NOSIGNAL), $0, length) }
            }
        }
    }
}
