package import Daemon
package import Foundation
import Logging
import Synchronization
package import TestSupport

/// A `Daemon` serving in this test process, as `aasad serve` would with
/// `--https 127.0.0.1:0 --http 127.0.0.1:0 --admin 127.0.0.1:0 --threads 2` and the test's own
/// flags and `AASAD_*` variables, over the config directory of a `TestConfig`. Tests talk to it
/// with real clients (curl, openssl, python) on loopback, and wait on what it exposes (its
/// reload generation, its settings, its log) rather than on a clock. Stopped (not draining)
/// when released.
///
/// Several run in one process: each has its own listeners, registry, state directory and log;
/// what they share is the process's (docs/architecture.md, "Testing the daemon in-process").
package final class TestDaemon {
    package let config: TestConfig
    package let daemon: Daemon
    /// The bound ports (0: that listener is off), read at start: they stay known after `stop`.
    package let httpsPort: Int
    package let httpPort: Int
    package let adminPort: Int
    /// The inodes of its listening sockets, as started.
    private let listeners: Set<String>
    private let output = Lines()
    private let logged = Lines()

    /// `flags` are serve's settings flags (`--http-redirect`, `--access-log PATH`), applied after
    /// `environment` (`AASAD_*` variables) and aasad.yaml, as serve applies them; again on
    /// every reread of aasad.yaml. Throws when the settings have problems or the start fails,
    /// with what was logged.
    package init(config: TestConfig, flags: [String] = [], environment: [String: String] = [:]) throws {
        self.config = config
        let arguments =
            ["--state", config.state, "--https", "127.0.0.1:0", "--http", "127.0.0.1:0", "--threads", "2", "--admin", "127.0.0.1:0"] + flags
        // Parsed here to refuse a malformed flag now; again in each reread (the parsed values
        // are not Sendable), which then cannot fail.
        _ = try SettingsFlags.parse(arguments)
        let directory = config.config
        let read: @Sendable () -> (ServerSettings, [ServerSettings.Problem], unknown: [String]) = {
            ServerSettings.resolve(configDirectory: directory, environment: environment, flags: (try? SettingsFlags.parse(arguments)) ?? [])
        }
        let (settings, problems, _) = read()
        guard problems.isEmpty else { throw Failure("settings refused: \(problems)") }
        let logged = logged
        var handler = StreamLogHandler(label: "aasad", stream: LogStream(lines: logged))
        handler.logLevel = settings.logLevel.level
        daemon = Daemon(
            configDirectory: directory, settings: settings, logger: Logger(label: "aasad", factory: { _ in handler }), environment: [:],
            output: { [output] line in output.append(line) }, reread: read)
        do {
            try daemon.start()
        } catch {
            throw Failure("the daemon did not start: \(logged.text)")
        }
        httpsPort = daemon.boundHTTPS.first.map { Int($0.port) } ?? 0
        httpPort = daemon.boundHTTP.first.map { Int($0.port) } ?? 0
        adminPort = daemon.boundAdmin.map { Int($0.port) } ?? 0
        listeners = Self.listening(ports: [httpsPort, httpPort, adminPort])
        // A port a test picked (pebble's httpPort and tlsPort) can be taken meanwhile by another
        // test process's aasad: with SO_REUSEPORT on both (Sources/Reactor/Socket.swift) the bind
        // succeeds and the kernel splits connections between them. Every listener on each port
        // must be one of this process's sockets (deinit stops the daemon when this throws).
        let bound = (daemon.boundHTTPS + daemon.boundHTTP).map { Int($0.port) } + [adminPort]
        for port in bound where port != 0 {
            guard Loopback.listener(port: port, isOwnedBy: getpid()) == true else {
                throw Failure("port \(port) is shared with a socket of another process")
            }
        }
    }

    deinit { daemon.stop(drain: false) }

    package var configDirectory: String { config.config }
    package var stateDirectory: String { daemon.settings.state }
    package var developmentCA: String { config.developmentCA }

    /// What the daemon wrote for a supervisor ("aasad ready: …"), line by line.
    package var outputLines: [String] { output.lines }

    /// What the daemon logged so far, one event a line (swift-log's text format).
    package func log() -> String { logged.text }
    package func logSoFar() -> String { logged.text }

    /// Waits (10 s at most) until the log holds `text`: for what the daemon does in the
    /// background and only logs (a refused change).
    package func waitForLog(_ text: String) -> Bool { eventually { logged.text.contains(text) } }

    /// Waits (10 s at most) until a reload after `generation` was served.
    package func waitForReload(after generation: Int) -> Bool { eventually { daemon.reloadGeneration > generation } }

    /// The SIGHUP path, and waits until its snapshot is served.
    @discardableResult
    package func reload() -> Bool {
        let before = daemon.reloadGeneration
        daemon.reload()
        return waitForReload(after: before)
    }

    /// Stops as SIGTERM would (`drain`) or at once, and says whether it stopped cleanly: every
    /// listening socket it had is closed (what the binary's exit status 0 said). By the sockets'
    /// inodes, not by connecting: another daemon in this process may bind a port this one freed.
    ///
    /// This process must hold no descriptor of them at once. The sockets themselves may go on
    /// listening for a moment: a program another test starts meanwhile holds a copy of every
    /// descriptor from its spawn until Foundation's Process closes them in the child (its file
    /// actions, just before the exec; close-on-exec at the exec), so their end is waited for,
    /// within 10 s.
    @discardableResult
    package func stop(drain: Bool = true) -> Bool {
        daemon.stop(drain: drain)
        let held = Self.socketInodesHeld()
        guard listeners.isDisjoint(with: held) else { return false }
        return eventually { listeners.isDisjoint(with: Self.listening(ports: [httpsPort, httpPort, adminPort])) }
    }

    /// The inodes of the sockets this process has a descriptor for (/proc/self/fd's `socket:[N]`).
    static func socketInodesHeld() -> Set<String> {
        guard let fds = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") else { return [] }
        var inodes: Set<String> = []
        for fd in fds {
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd),
                target.hasPrefix("socket:["), target.hasSuffix("]")
            else { continue }
            inodes.insert(String(target.dropFirst("socket:[".count).dropLast()))
        }
        return inodes
    }

    /// The inodes of the TCP sockets listening on `ports` (/proc/net/tcp and tcp6, `SocketTable`).
    static func listening(ports: [Int]) -> Set<String> {
        let wanted = Set(ports.filter { $0 != 0 })
        return Set(SocketTable.rows().filter { $0.isListening && wanted.contains($0.localPort) }.map { String($0.inode) })
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        package init(_ description: String) { self.description = description }
    }
}

/// Lines collected from the daemon's threads.
private final class Lines: Sendable {
    private let collected = Mutex<[String]>([])
    func append(_ line: String) { collected.withLock { $0.append(line) } }
    var lines: [String] { collected.withLock { $0 } }
    var text: String { collected.withLock { $0.joined() } }
}

/// swift-log's text handler writes each event as one string ending in a line feed; escaped as
/// the binary's standard error escapes it (`EscapingStandardError` in Sources/Daemon/LiveLogging.swift).
private struct LogStream: TextOutputStream, Sendable {
    let lines: Lines
    mutating func write(_ string: String) { lines.append(String(decoding: EscapingStandardError.line(string), as: UTF8.self)) }
}
