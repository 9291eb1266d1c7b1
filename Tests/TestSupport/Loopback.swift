import Foundation
import Glibc

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
    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released), for a
    /// tool the test starts that cannot report the port it picked itself (pebble). Another
    /// process could take it in between; on a test machine that is rare enough.
    package static func unusedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        return bound ? Int(UInt16(bigEndian: addr.sin_port)) : 0
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
        guard let local = port({ getsockname($0, $1, $2) }), let remote = port({ getpeername($0, $1, $2) }),
            let handle = FileHandle(forReadingAtPath: "/proc/net/tcp")
        else { return nil }
        // Read to the end: the file reports no size, and it is longer than a page when many
        // connections are open.
        let table = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        // The peer's row: its local address is our remote one, and the other way round.
        func address(_ port: Int) -> String {
            let hex = String(port, radix: 16, uppercase: true)
            return "0100007F:" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        let peer = (address(remote), address(local))
        for row in table.split(separator: "\n").dropFirst() {
            let fields = row.split(separator: " ")
            guard fields.count > 4, fields[1] == peer.0, fields[2] == peer.1 else { continue }
            // tx_queue:rx_queue, in hexadecimal.
            return fields[4].split(separator: ":").last.flatMap { Int($0, radix: 16) }
        }
        return nil
    }
}
