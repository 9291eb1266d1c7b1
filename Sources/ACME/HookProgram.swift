import CAASALinux
import Glibc
import Reactor

/// Runs an operator's program (`acme.dns-hook`) with arguments, as certbot's and lego's exec
/// hooks do: no shell, a clean signal state, descriptors 0–2 only, a time limit, and a bounded
/// excerpt of what it printed for the error message.
public enum HookProgram {
    /// How long a hook may run: DNS providers' APIs answer in seconds, but a hook that waits for
    /// its record to propagate may take a minute or two.
    public static let timeoutMilliseconds: Int32 = 180_000
    /// What is kept of a hook's output (standard output and error together) for the log.
    public static let maximumOutputBytes = 2048
    /// How often the wait for output also checks whether the program has exited.
    static let reapMilliseconds: Int64 = 100

    public struct Result: Sendable, Equatable {
        /// The exit status, or nil when it was killed (by a signal, or at the time limit).
        public var status: Int32?
        public var timedOut: Bool
        public var output: String
    }

    /// Runs `path` with `arguments` and waits for it (at most `timeout` milliseconds).
    public static func run(_ path: String, _ arguments: [String], timeout: Int32 = timeoutMilliseconds) throws(ACMEError) -> Result {
        var pipeEnds: [Int32] = [0, 0]
        // Close-on-exec from the start (pipe2): neither the hook nor a program another thread
        // starts meanwhile gets a stray copy; the hook gets the write end as its output only.
        guard CAASALinux_pipe_cloexec(&pipeEnds) == 0 else {
            throw .storage("cannot run \(path): pipe: \(String(cString: strerror(errno)))")
        }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 2)
        // Nothing else: every descriptor above 2 is closed in the child, whatever its flags.
        // libcurl opens its sockets without close-on-exec, so a hook would otherwise hold the
        // live connection to the CA (and any file another thread has open at that moment).
        guard CAASALinux_spawn_close_from(&actions, 3) == 0 else {
            close(readEnd)
            close(writeEnd)
            throw .storage("cannot run \(path): posix_spawn_file_actions_addclosefrom_np failed")
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The server blocks SIGTERM, SIGINT and SIGHUP for sigwait and ignores SIGPIPE; a child
        // inherits both, so it would ignore being stopped. Give it the defaults.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGHUP, SIGPIPE] { sigaddset(&defaults, s) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Its own process group, so that what it starts in the background is stopped with it.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        // The environment without the server's own variables: they carry its settings and secrets
        // (the EAB MAC key, AASAD_ACME_EAB_*; the tenant API's token, AASAD_API_TOKEN), and a
        // DNS hook or an `acme.ask` program has no business with either.
        var inherited: [UnsafeMutablePointer<CChar>?] = []
        var entry = environ
        while let variable = entry.pointee {
            if !String(cString: variable).hasPrefix("AASAD_") { inherited.append(variable) }
            entry += 1
        }
        inherited.append(nil)
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, inherited)
        close(writeEnd)
        guard spawned == 0 else {
            close(readEnd)
            throw .storage("cannot run \(path): \(String(cString: strerror(spawned)))")
        }
        defer { close(readEnd) }
        var output: [UInt8] = []
        var timedOut = false
        var status: Int32 = 0
        var reaped = false
        let deadline = MonotonicClock().milliseconds() + Int64(timeout)
        var buffer = [UInt8](repeating: 0, count: 4096)
        // Reads its output until it exits (a child it left in the background may keep the pipe
        // open: the group is then stopped) or the time limit passes.
        while true {
            let remaining = deadline - MonotonicClock().milliseconds()
            if remaining <= 0 {
                timedOut = true
                break
            }
            var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(remaining, Self.reapMilliseconds)))
            if ready > 0 {
                let n = read(readEnd, &buffer, buffer.count)
                if n > 0 {
                    if output.count < maximumOutputBytes { output += buffer[0..<min(n, maximumOutputBytes - output.count)] }
                    continue
                }
                if n < 0 && errno == EINTR { continue }
            }
            if waitpid(pid, &status, WNOHANG) == pid {
                reaped = true
                break
            }
            // End of output without an exit yet: wait for the exit (or the limit).
            if ready > 0 { _ = poll(nil, 0, Int32(min(remaining, Self.reapMilliseconds))) }
        }
        kill(-pid, SIGKILL)
        if !reaped { while waitpid(pid, &status, 0) < 0 && errno == EINTR {} }
        // WIFEXITED / WEXITSTATUS, which Swift does not import as functions.
        let exited = status & 0x7F == 0
        let text = ACMEProblem.clean(String(decoding: output, as: UTF8.self))
        return Result(status: exited ? (status >> 8) & 0xFF : nil, timedOut: timedOut, output: text)
    }
}
