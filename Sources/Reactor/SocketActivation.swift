import CAASALinux
import Glibc

/// Listening sockets passed by systemd socket activation (or anything that passes them the same
/// way): `LISTEN_PID` names this process, `LISTEN_FDS` counts descriptors from 3, and
/// `LISTEN_FDNAMES` names them, colon-separated (sd_listen_fds(3) and sd_listen_fds_with_names
/// semantics; no library needed). A restart then keeps the sockets open in the manager, and
/// connections that arrive meanwhile wait in their queue for the next process.
public enum SocketActivation {
    /// The first passed descriptor (SD_LISTEN_FDS_START).
    public static let firstDescriptor: Int32 = 3
    /// More than this many passed descriptors is no socket activation we were set up for.
    public static let maximumDescriptors = 64

    public struct Listener: Sendable, Equatable {
        /// Its `FileDescriptorName=` (`https`, `http` or `admin` for aasad).
        public var name: String
        public var fd: Int32
    }

    public struct Problem: Error, CustomStringConvertible {
        public var description: String
    }

    /// The passed listeners, or none when the variables are absent or name another process (a
    /// child that inherited them). Each is checked to be a listening stream socket, made
    /// non-blocking and close-on-exec; the variables are removed so that no child takes them.
    public static func take(environment: [String: String], unset: Bool = true) throws(Problem) -> [Listener] {
        defer {
            if unset {
                unsetenv("LISTEN_FDS")
                unsetenv("LISTEN_PID")
                unsetenv("LISTEN_FDNAMES")
            }
        }
        guard let count = environment["LISTEN_FDS"], let pid = environment["LISTEN_PID"] else { return [] }
        guard let owner = Int32(pid) else { throw Problem(description: "LISTEN_PID=\(pid.debugDescription) is not a process id") }
        guard owner == getpid() else { return [] }
        guard let n = Int(count), n >= 0, n <= maximumDescriptors else {
            throw Problem(description: "LISTEN_FDS=\(count.debugDescription) is not a count of descriptors from 0 to \(maximumDescriptors)")
        }
        let names = environment["LISTEN_FDNAMES"].map { $0.split(separator: ":", omittingEmptySubsequences: false).map(String.init) }
        if let names, names.count != n {
            throw Problem(description: "LISTEN_FDNAMES names \(names.count) descriptors, LISTEN_FDS counts \(n)")
        }
        var listeners: [Listener] = []
        // Every descriptor is checked before any is changed.
        for i in 0..<n {
            let fd = firstDescriptor + Int32(i)
            let name = names?[i] ?? "unknown"
            var listening: Int32 = 0
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 1,
                getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0, type == Int32(SOCK_STREAM.rawValue)
            else {
                throw Problem(description: "passed descriptor \(fd) (\(name)) is not a listening stream socket")
            }
            listeners.append(Listener(name: name, fd: fd))
        }
        for listener in listeners {
            let flags = fcntl(listener.fd, F_GETFL)
            guard flags >= 0, fcntl(listener.fd, F_SETFL, flags | O_NONBLOCK) == 0, fcntl(listener.fd, F_SETFD, FD_CLOEXEC) == 0 else {
                throw Problem(description: "passed descriptor \(listener.fd) (\(listener.name)) cannot be set up: errno \(errno)")
            }
        }
        return listeners
    }
}
