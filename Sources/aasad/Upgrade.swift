import Foundation
import HTTPServer
import Logging
import Reactor
import Synchronization

/// In-place binary upgrade, as nginx does it with USR2 + QUIT: on SIGUSR2 the serving process
/// starts the binary at the path it was started from (the new version, once installed there),
/// passes it every listening socket the way systemd passes them (`SocketActivation.spawn`), and
/// waits for it to say it is ready through a pipe. Then it hands over (systemd's MAINPID, the PID
/// file) and drains. A new process that exits, or is not ready in time, is reported and the old
/// one goes on serving; nothing was closed.
final class Upgrade: Sendable {
    /// The variable naming the pipe the new process writes its readiness to.
    static let readyVariable = "AASAD_UPGRADE_READY_FD"
    /// How long a new process may take to be ready (a first load of a million sites takes
    /// minutes); after that it is stopped and the old process goes on.
    static let readinessTimeout: Int32 = 600

    /// The binary to start: argv[0] as this process was started, made absolute against the
    /// directory it started in. Not /proc/self/exe, which names the old file, and resolves the
    /// symlink a versioned install points the path at.
    let binary: String?
    let arguments: [String]
    private let logger: Logger
    private let state = Mutex<State>(.idle)

    enum State: Equatable {
        case idle
        case starting(pid: Int32)
        case handedOver(pid: Int32)
    }

    init(logger: Logger) {
        let first = CommandLine.arguments.first ?? ""
        if first.hasPrefix("/") {
            binary = first
        } else if first.contains("/") {
            binary = FileManager.default.currentDirectoryPath + "/" + (first.hasPrefix("./") ? String(first.dropFirst(2)) : first)
        } else {
            // Started through PATH: the same lookup execvp made.
            binary = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/\(first)" }
                .first { access($0, X_OK) == 0 }
        }
        arguments = Array(CommandLine.arguments.dropFirst())
        self.logger = logger
    }

    /// The process the serving has been handed to, once it has.
    var handedOverTo: Int32? {
        if case .handedOver(let pid) = state.withLock({ $0 }) { return pid }
        return nil
    }

    /// Starts the new process with `listeners`; `handOver` runs (on another thread) once it is
    /// ready and must make this process drain and exit.
    func begin(listeners: [SocketActivation.Listener], handOver: @escaping @Sendable (Int32) -> Void) {
        guard state.withLock({ $0 }) == .idle else {
            logger.warning("an upgrade is already under way; SIGUSR2 ignored")
            return
        }
        guard let binary else {
            logger.error("upgrade refused: the binary's path is unknown (start aasad by its path to upgrade it in place)")
            return
        }
        let readEnd: Int32
        let writeEnd: Int32
        do {
            (readEnd, writeEnd) = try closeOnExecPipe()
        } catch {
            logger.error("upgrade refused: \(error)")
            return
        }
        let readyFD = SocketActivation.firstDescriptor + Int32(listeners.count)
        var environment = Self.environment().filter { !$0.hasPrefix(Self.readyVariable + "=") }
        environment.append("\(Self.readyVariable)=\(readyFD)")
        let pid: Int32
        do {
            pid = try SocketActivation.spawn(
                path: binary, arguments: arguments, environment: environment, listeners: listeners, extra: [writeEnd])
        } catch {
            close(readEnd)
            close(writeEnd)
            logger.error("upgrade failed: cannot start \(binary); still serving", metadata: ["error": "\(error)"])
            return
        }
        // Only the new process holds the write end now: its exit is end-of-file here.
        close(writeEnd)
        state.withLock { $0 = .starting(pid: pid) }
        logger.notice(
            "upgrading: started the new binary with the listeners",
            metadata: ["pid": "\(pid)", "binary": "\(binary)", "listeners": "\(listeners.count)"])
        _ = LoopThread.spawn { [self] in
            let outcome = Self.waitForReadiness(readEnd, pid: pid)
            close(readEnd)
            switch outcome {
            case .ready:
                state.withLock { $0 = .handedOver(pid: pid) }
                logger.notice("upgrade: the new process is ready; this one drains and exits", metadata: ["pid": "\(pid)"])
                handOver(pid)
            case .failed(let why):
                logger.error("upgrade failed: the new process \(why); still serving", metadata: ["pid": "\(pid)", "binary": "\(binary)"])
                state.withLock { $0 = .idle }
            }
        }
    }

    /// Stops a new process that is not ready yet (this one is stopping: it must not leave a
    /// second server behind).
    func abandon() {
        if case .starting(let pid) = state.withLock({ $0 }) {
            logger.notice("stopping the new process of the unfinished upgrade", metadata: ["pid": "\(pid)"])
            kill(pid, SIGTERM)
        }
    }

    private enum Outcome {
        case ready
        case failed(String)
    }

    private static func waitForReadiness(_ fd: Int32, pid: Int32) -> Outcome {
        var received: [UInt8] = []
        let clock = MonotonicClock()
        let deadline = clock.milliseconds() + Int64(readinessTimeout) * 1000
        while true {
            let left = deadline - clock.milliseconds()
            guard left > 0 else {
                kill(pid, SIGKILL)
                _ = reap(pid, wait: true)
                return .failed("was not ready within \(readinessTimeout) s and was stopped")
            }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let n = poll(&poller, 1, Int32(min(left, 1000)))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count > 0 {
                received += buffer[..<count]
                if received.starts(with: Array("READY=1".utf8)) { return .ready }
                if received.count > 64 { break }
                continue
            }
            break
        }
        // End of file without readiness: it exited (or closed the pipe, which it never does).
        return .failed(reap(pid, wait: false) ?? "closed its readiness pipe without being ready")
    }

    /// How the process ended, once it has (waiting up to 5 s unless `wait`); nil if it has not.
    private static func reap(_ pid: Int32, wait: Bool) -> String? {
        var status: Int32 = 0
        for _ in 0..<(wait ? 1 : 50) {
            let done = waitpid(pid, &status, wait ? 0 : WNOHANG)
            if done == pid {
                let low = status & 0x7F
                if low == 0 { return "exited with status \((status >> 8) & 0xFF) before it was ready" }
                return "was killed by signal \(low) before it was ready"
            }
            if done < 0 { return "ended before it was ready" }
            usleep(100_000)
        }
        return nil
    }

    /// This process's environment as it is now (the variables socket activation took are gone).
    private static func environment() -> [String] {
        var entries: [String] = []
        var pointer = environ
        while let entry = pointer.pointee {
            entries.append(String(cString: entry))
            pointer += 1
        }
        return entries
    }

    // MARK: - The new process's side

    /// The readiness pipe passed by the process being upgraded, if any: checked to be a pipe,
    /// made close-on-exec, and its variable removed.
    static func takeReadiness(environment: [String: String]) -> Int32? {
        defer { unsetenv(readyVariable) }
        guard let text = environment[readyVariable], let fd = Int32(text), fd > 2 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFIFO else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// Tells the process being upgraded that this one serves.
    static func announceReady(_ fd: Int32) {
        let message = Array("READY=1\n".utf8)
        _ = message.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        close(fd)
    }
}

/// `--pid-file`: the serving process's id, written when it is ready (by the new process after an
/// upgrade), removed by the process that wrote it when it stops, unless another took it over.
enum PIDFile {
    static func write(_ path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = (directory.isEmpty ? "." : directory) + "/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        try Data("\(getpid())\n".utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else {
            let error = errno
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "rename to \(path): \(describeErrno(error))"])
        }
    }

    /// Removes the file if it still names this process.
    static func remove(_ path: String) {
        guard let data = FileManager.default.contents(atPath: path),
            String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "\(getpid())"
        else { return }
        unlink(path)
    }
}
