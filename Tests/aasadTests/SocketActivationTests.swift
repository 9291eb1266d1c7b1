import Foundation
import Reactor
import TestSupport
import Testing

/// Socket activation: listeners passed as systemd passes them, kept open across a
/// restart by the process that passed them (Fixtures/socket_activation.py).
@Suite("systemd socket activation: passed listeners, restarts that refuse nothing")
final class SocketActivationTests {
    /// Good answers the load gets before the first restart and after each: every process serves
    /// some, and the total passes the report's 20.
    static let answersBetweenRestarts = 10
    let config: TestConfig
    let launcher: Launcher
    var port = 0

    deinit { launcher.finish() }

    init() throws {
        config = try TestConfig()
        launcher = try Launcher(
            script: "socket_activation.py",
            arguments: [
                AASAD.binary.path, "--config", config.config, "--state", config.state, "--threads", "2", "--admin", "off",
                "--drain-timeout", "5",
            ])
        let first = try launcher.line()
        port = Int(first.dropFirst("port ".count)) ?? 0
        #expect(first.hasPrefix("port ") && port > 0, "\(first)")
        #expect(try launcher.line() == "ready")
    }

    @Test("the passed socket serves; two restarts under a stream of new HTTP/1.1 and HTTP/2 connections fail none")
    func restartsUnderLoad() throws {
        let served = try RunningServer.curl(
            [
                "-k", "--resolve", "a.test:\(port):127.0.0.1", "https://a.test:\(port)/.well-known/apple-app-site-association",
            ], scratch: config)
        #expect(served.status == 200 && served.body == config.aasa)
        launcher.send("load 3")
        launcher.send("load-h2 2")
        launcher.send("load-keepalive 2")
        launcher.send("load-h2-keepalive 1")
        #expect(try launcher.waitForAnswers(Self.answersBetweenRestarts))
        for _ in 0..<2 {
            launcher.send("restart")
            #expect(try launcher.line() == "ready")
            #expect(try launcher.waitForAnswers(Self.answersBetweenRestarts))
        }
        let report = try launcher.report()
        let ok = report["ok"] as? Int ?? 0
        #expect(ok > 20, "\(report)")
        #expect(report["failed"] as? Int == 0, "\(report)")
    }
}

@Suite("socket activation: the variables read as sd_listen_fds reads them")
struct SocketActivationParsingTests {
    @Test("variables for another process, or none, pass nothing; a LISTEN_PID that is no pid is an error")
    func notOurs() throws {
        #expect(try SocketActivation.take(environment: [:], unset: false).isEmpty)
        #expect(try SocketActivation.take(environment: ["LISTEN_FDS": "1", "LISTEN_PID": "1"], unset: false).isEmpty)
        #expect(throws: SocketActivation.Problem.self) {
            try SocketActivation.take(environment: ["LISTEN_FDS": "1", "LISTEN_PID": "not a pid"], unset: false)
        }
    }

    @Test("a bad count, names that do not match it, or a descriptor that is no listener are errors")
    func refused() {
        let pid = "\(getpid())"
        #expect(throws: SocketActivation.Problem.self) {
            try SocketActivation.take(environment: ["LISTEN_FDS": "-1", "LISTEN_PID": pid], unset: false)
        }
        #expect(throws: SocketActivation.Problem.self) {
            try SocketActivation.take(environment: ["LISTEN_FDS": "99999", "LISTEN_PID": pid], unset: false)
        }
        #expect(throws: SocketActivation.Problem.self) {
            try SocketActivation.take(environment: ["LISTEN_FDS": "2", "LISTEN_PID": pid, "LISTEN_FDNAMES": "https"], unset: false)
        }
        // Descriptors 3 to 63 of the test process are not all listening sockets.
        #expect(throws: SocketActivation.Problem.self) {
            try SocketActivation.take(environment: ["LISTEN_FDS": "61", "LISTEN_PID": pid], unset: false)
        }
    }
}

/// A start that fails after the server started (its PID file cannot be written) stops the server,
/// which joins the admin worker: an admin page asked meanwhile must not hold that worker waiting
/// for the first admin view, which the start builds only once it is ready (Sources/Daemon/Daemon.swift).
@Suite("socket activation: a start that fails with an admin request waiting exits")
struct FailedStartAdminTests {
    @Test("a failed start with /metrics, /sites or / asked before it exits 1, not hangs", arguments: ["/metrics", "/sites", "/"])
    func exits(path: String) throws {
        let config = try TestConfig()
        let output = try Tool.run(
            Tool.python3,
            [
                AASAD.testDirectory.appendingPathComponent("Fixtures/failed_start_admin.py").path, AASAD.binary.path, path,
                "--config", config.config, "--state", config.state, "--https", "127.0.0.1:0", "--threads", "2",
            ])
        #expect(output.text.trimmingCharacters(in: .whitespacesAndNewlines) == "exited 1", "\(output.text)")
    }
}
