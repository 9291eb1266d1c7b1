package import ACME
package import Foundation
package import HTTPServer
package import Logging
package import Reactor
package import Synchronization
package import TLS

/// In-place binary upgrade, as nginx does it with USR2 + QUIT: on SIGUSR2 the serving process
/// starts the binary at the path it was started from (the new version, once installed there),
/// passes it every listening socket the way systemd passes them (`SocketActivation.spawn`), and
/// waits for it to say it is ready through a pipe. Then it hands over (systemd's MAINPID, the PID
/// file) and drains. A new process that exits, or is not ready in time, is reported and the old
/// one goes on serving; nothing was closed.
package final class Upgrade: Sendable {
    /// The variable naming the pipe the new process writes its readiness to.
    static let readyVariable = "AASAD_UPGRADE_READY_FD"
    /// The variable naming the pipe the session ticket keys come through (the descriptor after
    /// the readiness pipe), so that clients resume across the upgrade.
    static let ticketKeysVariable = "AASAD_UPGRADE_TICKET_KEYS_FD"
    /// How long a new process may take to be ready (a first load of a million sites takes
    /// minutes); after that it is stopped and the old process goes on.
    static let readinessTimeout: Int32 = 600

    /// The binary to start: argv[0] as this process was started, made absolute against the
    /// directory it started in. Not /proc/self/exe, which names the old file, and resolves the
    /// symlink a versioned install points the path at.
    let binary: String?
    let arguments: [String]
    /// The `--pid-file`, written back to this process's id when an upgrade fails after the new
    /// process wrote its own.
    private let pidFile: String?
    private let logger: Logger
    private let state = Mutex<State>(.idle)

    enum State: Equatable {
        case idle
        /// Started, not ready yet.
        case starting(pid: Int32)
        /// Ready: this process hands over and drains.
        case handedOver(pid: Int32)
        /// Being stopped and reaped (failed, or this process is stopping).
        case ending(pid: Int32)
    }

    init(pidFile: String?, logger: Logger) {
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
        self.pidFile = pidFile
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
        switch state.withLock({ $0 }) {
        case .idle:
            break
        case .handedOver(let pid):
            logger.warning("this process already handed over to pid \(pid), which serves now; SIGUSR2 that one")
            return
        case .starting, .ending:
            logger.warning("an upgrade is already under way; SIGUSR2 ignored")
            return
        }
        // As PID 1 (a container's init) this process's exit ends the container, the new one with it.
        guard getpid() != 1 else {
            logger.error(
                "upgrade refused: aasad runs as PID 1 (a container), whose exit would end the new process too; roll out a new image instead"
            )
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
        // The ticket keys, written whole before the new process starts (a few hundred bytes: far
        // below a pipe's capacity, so the write never waits). A key this process makes after
        // this (a rotation while the new one starts) is not passed: tickets issued under it cost
        // their clients one full handshake.
        let keysRead: Int32
        let keysWrite: Int32
        do {
            (keysRead, keysWrite) = try closeOnExecPipe()
        } catch {
            close(readEnd)
            close(writeEnd)
            logger.error("upgrade refused: \(error)")
            return
        }
        let keys = TicketKeys.shared.exported()
        let written = keys.withUnsafeBytes { write(keysWrite, $0.baseAddress, $0.count) }
        close(keysWrite)
        guard written == keys.count else {
            let reason = written < 0 ? describeErrno(errno) : "a short write"
            for fd in [readEnd, writeEnd, keysRead] { close(fd) }
            logger.error("upgrade refused: the session ticket keys could not be passed (\(reason))")
            return
        }
        let readyFD = SocketActivation.firstDescriptor + Int32(listeners.count)
        var environment = Self.environment().filter {
            !$0.hasPrefix(Self.readyVariable + "=") && !$0.hasPrefix(Self.ticketKeysVariable + "=")
        }
        environment.append("\(Self.readyVariable)=\(readyFD)")
        environment.append("\(Self.ticketKeysVariable)=\(readyFD + 1)")
        let pid: Int32
        do {
            defer { close(keysRead) }
            pid = try SocketActivation.spawn(
                path: binary, arguments: arguments, environment: environment, listeners: listeners, extra: [writeEnd, keysRead])
        } catch {
            close(readEnd)
            close(writeEnd)
            logger.error("upgrade failed: cannot run \(binary) (\(describeErrno(error.errno))); still serving")
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
            // Ready counts only while still starting: a stop that began meanwhile (`abandon`)
            // already told the new process to stop, and it must not become the service.
            let decision = state.withLock { state -> Decision in
                guard state == .starting(pid: pid) else { return .abandoned }
                if case .ready = outcome {
                    state = .handedOver(pid: pid)
                    return .handOver
                }
                state = .ending(pid: pid)
                return .failed
            }
            if decision == .handOver {
                logger.notice("upgrade: the new process is ready; this one drains and exits", metadata: ["pid": "\(pid)"])
                handOver(pid)
                return
            }
            // Whatever it was doing (it may have accepted connections on the shared sockets),
            // it stops as on SIGTERM, draining, and is reaped: never a second server left behind.
            Self.end(pid)
            // Abandoned: this process is stopping and removes the PID file itself.
            guard decision == .failed else { return }
            if let pidFile { try? PIDFile.write(pidFile) }
            state.withLock { if $0 == .ending(pid: pid) { $0 = .idle } }
            // Said last: once it is logged, another SIGUSR2 starts another attempt.
            if case .failed(let why) = outcome {
                logger.error("upgrade failed: the new process \(why); still serving", metadata: ["pid": "\(pid)", "binary": "\(binary)"])
            }
        }
    }

    private enum Decision {
        case handOver, failed, abandoned
    }

    /// This process is stopping: a new process that is not ready yet is told to stop too (it
    /// must not be left behind as a second server), and never becomes the service.
    func abandon() {
        state.withLock { state in
            guard case .starting(let pid) = state else { return }
            logger.notice("stopping the new process of the unfinished upgrade", metadata: ["pid": "\(pid)"])
            kill(pid, SIGTERM)
            state = .ending(pid: pid)
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
            guard left > 0 else { return .failed("was not ready within \(readinessTimeout) s and is stopped") }
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
                if received.count > 64 { return .failed("wrote something other than its readiness and is stopped") }
                continue
            }
            break
        }
        // End of file without readiness: it exited (or closed the pipe, which it never does).
        var status: Int32 = 0
        for _ in 0..<50 {
            if waitpid(pid, &status, WNOHANG) == pid {
                let signal = status & 0x7F
                // Reaped here: `end` finds nothing left to do.
                return .failed(
                    signal == 0
                        ? "exited with status \((status >> 8) & 0xFF) before it was ready"
                        : "was killed by signal \(signal) before it was ready")
            }
            usleep(100_000)
        }
        return .failed("closed its readiness pipe without being ready and is stopped")
    }

    /// Stops a new process that will not serve: SIGTERM (it drains what it accepted), SIGKILL
    /// after 30 s, then reaped. Nothing is done to a process already reaped.
    private static func end(_ pid: Int32) {
        var status: Int32 = 0
        guard waitpid(pid, &status, WNOHANG) == 0 else { return }
        kill(pid, SIGTERM)
        for _ in 0..<300 {
            if waitpid(pid, &status, WNOHANG) != 0 { return }
            usleep(100_000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
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
    package static func takeReadiness(environment: [String: String]) -> Int32? {
        defer { unsetenv(readyVariable) }
        guard let fd = passedDescriptor(readyVariable, after: 0, environment: environment), isPipe(fd) else { return nil }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        return fd
    }

    /// The descriptor `variable` names, when it is where the process being upgraded puts it:
    /// `position` places after the passed listeners (0: the readiness pipe, 1: the ticket keys),
    /// in a process the listeners were passed to. A stray variable (an Environment= line, a
    /// supervisor's own pipe) names nothing of ours.
    private static func passedDescriptor(_ variable: String, after position: Int, environment: [String: String]) -> Int32? {
        guard let text = environment[variable], let fd = Int32(text),
            environment["LISTEN_PID"] == "\(getpid())", let count = environment["LISTEN_FDS"].flatMap({ Int($0) }),
            count >= 0, count <= SocketActivation.maximumDescriptors,
            Int(fd) == Int(SocketActivation.firstDescriptor) + count + position
        else { return nil }
        return fd
    }

    private static func isPipe(_ fd: Int32) -> Bool {
        var info = stat()
        return fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO
    }

    /// Takes the session ticket keys the process being upgraded passed (checked as the readiness
    /// pipe is: right after it), so that its clients' tickets resume here; the outcome is logged.
    static func takeTicketKeys(environment: [String: String], upgrading: Bool, logger: Logger) {
        defer { unsetenv(ticketKeysVariable) }
        guard let fd = passedDescriptor(ticketKeysVariable, after: 1, environment: environment) else { return }
        // Ours from here on: closed whatever it holds, never left to a process started later.
        defer { close(fd) }
        guard upgrading, isPipe(fd) else { return }
        // Written whole before this process started; a writer that never closes costs a second.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while bytes.count <= TicketKeys.keysKept * TicketKeys.exportedKeySize {
            let n = read(fd, &buffer, buffer.count)
            if n > 0 {
                bytes += buffer[..<n]
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && errno == EAGAIN {
                var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&poller, 1, 1000) > 0 { continue }
            }
            break
        }
        if TicketKeys.shared.adopt(bytes) {
            logger.info("session ticket keys taken over from the process being upgraded")
        } else {
            logger.warning("the session ticket keys passed by the process being upgraded are not usable; new ones are made")
        }
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
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Written as ACME's files are (`AtomicFile`: a new file beside it, created exclusively, so
    /// never through a symlink, fsynced and renamed over it): a reader sees the old id or the
    /// new one, whole.
    static func write(_ path: String) throws(Failure) {
        do {
            try AtomicFile.write(Array("\(getpid())\n".utf8), to: path, mode: 0o644)
        } catch {
            guard case .storage(let reason) = error else { throw Failure(description: "\(error)") }
            throw Failure(description: reason)
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
