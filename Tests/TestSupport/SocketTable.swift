package import Foundation

/// The kernel's TCP socket tables, /proc/net/tcp and /proc/net/tcp6 (proc(5)), row by row: the
/// one reader behind the tests' questions about sockets on loopback (whose listener a port is,
/// whether a daemon closed its listeners, how much a peer left unread).
package enum SocketTable {
    /// One socket. Addresses are as the table writes them: hexadecimal, in the kernel's byte
    /// order (127.0.0.1 is `0100007F`; IPv6 is 32 digits).
    package struct Row: Equatable, Sendable {
        /// The TCP state, in hexadecimal as listed: `0A` is LISTEN, `06` TIME_WAIT
        /// (include/net/tcp_states.h in the Linux sources).
        package var state: Substring
        package var localAddress: Substring
        package var localPort: Int
        package var remoteAddress: Substring
        package var remotePort: Int
        /// Bytes received and not yet read by the socket's owner.
        package var receiveQueue: Int
        /// The socket's inode, as /proc/PID/fd links name it (`socket:[INODE]`); "0" for a
        /// socket no file refers to (TIME_WAIT, orphaned, or not yet accepted).
        package var inode: Substring
        package var isIPv6: Bool

        package var isListening: Bool { state == "0A" }
        package var isTimeWait: Bool { state == "06" }
    }

    /// Every row of /proc/net/tcp then /proc/net/tcp6; a table that cannot be read adds none.
    /// Only sockets that listen or have a connection are listed: one bound and never put to
    /// listen(2) is in neither table.
    package static func rows() -> [Row] {
        read("/proc/net/tcp", isIPv6: false) + read("/proc/net/tcp6", isIPv6: true)
    }

    /// Read to the end through a FileHandle: the file reports no size, and it is longer than a
    /// page when many connections are open.
    static func read(_ path: String, isIPv6: Bool) -> [Row] {
        guard let handle = FileHandle(forReadingAtPath: path) else { return [] }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        return text.split(separator: "\n").dropFirst().compactMap { parse($0, isIPv6: isIPv6) }
    }

    /// A row: `sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid
    /// timeout inode ...`; nil when it has not that shape.
    static func parse(_ line: Substring, isIPv6: Bool) -> Row? {
        let fields = line.split(separator: " ")
        guard fields.count > 9 else { return nil }
        func endpoint(_ field: Substring) -> (Substring, Int)? {
            let parts = field.split(separator: ":")
            guard parts.count == 2, let port = Int(parts[1], radix: 16) else { return nil }
            return (parts[0], port)
        }
        guard let local = endpoint(fields[1]), let remote = endpoint(fields[2]),
            let queue = fields[4].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
        else { return nil }
        return Row(
            state: fields[3], localAddress: local.0, localPort: local.1, remoteAddress: remote.0, remotePort: remote.1,
            receiveQueue: queue, inode: fields[9], isIPv6: isIPv6)
    }

    /// The inodes of process `pid`'s sockets, from /proc/PID/fd's links (`socket:[INODE]`).
    package static func socketInodes(of pid: pid_t) -> Set<Substring> {
        let directory = "/proc/\(pid)/fd"
        var inodes: Set<Substring> = []
        for fd in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + fd),
                target.hasPrefix("socket:["), target.hasSuffix("]")
            else { continue }
            inodes.insert(Substring(target.dropFirst("socket:[".count).dropLast()))
        }
        return inodes
    }
}
