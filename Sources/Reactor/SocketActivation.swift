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
    /// More than this many passed descriptors is no socket activation we were set up for (an
    /// upgrade passes one per worker and address: 4096 covers 1,000 cores with four addresses).
    public static let maximumDescriptors = Int(CAASALinux_SPAWN_MAX_DESCRIPTORS)

    public struct Listener: Sendable, Equatable {
        /// Its `FileDescriptorName=` (`https`, `http` or `admin` for aasad).
        public var name: String
        public var fd: Int32

        public init(name: String, fd: Int32) {
            self.name = name
            self.fd = fd
        }
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

extension SocketActivation {
    /// Starts `path` (as argv[0], then `arguments`) with `listeners` passed the way `take` reads them: descriptors 3, 4, … in
    /// order, `LISTEN_FDS`, `LISTEN_FDNAMES` and the new process's own `LISTEN_PID`; `extra`
    /// descriptors follow the listeners (their numbers are `firstDescriptor + listeners.count`,
    /// …) for whatever the caller tells the new process about them. No other descriptor is
    /// inherited. `environment` is the rest of the new process's environment (any `LISTEN_*`
    /// in it is dropped). Returns the new process's id.
    public static func spawn(
        path: String, arguments: [String], environment: [String], listeners: [Listener], extra: [Int32] = []
    ) throws(SystemError) -> Int32 {
        guard listeners.count + extra.count <= maximumDescriptors,
            !listeners.contains(where: { $0.name.isEmpty || $0.name.contains(":") || $0.name.utf8.count > 255 })
        else { throw SystemError(call: "spawn", errno: EINVAL) }
        var entries = environment.filter {
            !$0.hasPrefix("LISTEN_FDS=") && !$0.hasPrefix("LISTEN_PID=") && !$0.hasPrefix("LISTEN_FDNAMES=")
        }
        entries.append("LISTEN_FDS=\(listeners.count)")
        entries.append("LISTEN_FDNAMES=" + listeners.map(\.name).joined(separator: ":"))
        // The slot the new process fills with its own pid.
        entries.append("LISTEN_PID=0")
        let pidSlot = Int32(entries.count - 1)
        let descriptors = listeners.map(\.fd) + extra
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let highest = Int32(clamping: min(limit.rlim_cur, 1 << 22))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = entries.map { strdup($0) } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var argvArray = argv
        var envpArray = envp
        let pid = descriptors.withUnsafeBufferPointer { fds in
            argvArray.withUnsafeMutableBufferPointer { argvBuffer in
                envpArray.withUnsafeMutableBufferPointer { envpBuffer in
                    CAASALinux_spawn_passing(
                        path, argvBuffer.baseAddress, envpBuffer.baseAddress, pidSlot, fds.baseAddress, Int32(fds.count), highest)
                }
            }
        }
        guard pid > 0 else { throw SystemError(call: "fork \(path)", errno: errno) }
        return pid
    }
}

/// A pipe whose two ends are close-on-exec from the start: (read, write).
public func closeOnExecPipe() throws(SystemError) -> (read: Int32, write: Int32) {
    var ends: [Int32] = [-1, -1]
    guard CAASALinux_pipe_cloexec(&ends) == 0 else { throw SystemError(call: "pipe2", errno: errno) }
    return (ends[0], ends[1])
}
