import Foundation
import TestSupport
import Testing

/// In-place upgrades: SIGUSR2 starts the binary at the path aasad was started from
/// with its listeners, and the old process drains once the new one is ready
/// (Fixtures/upgrade.py runs aasad from a symlink it can point at a broken program).
@Suite("in-place upgrade (SIGUSR2): listeners handed over, nothing refused")
final class UpgradeTests {
    /// Good answers the load gets between two steps (an upgrade, a failed one): every process
    /// serves some before the next step, and the total passes the report's 20.
    static let answersBetweenSteps = 10
    let config: TestConfig
    let scratch: TemporaryDirectory
    let launcher: Launcher
    var port = 0
    var pid = 0

    deinit { launcher.finish() }

    init() throws {
        config = try TestConfig()
        scratch = try TemporaryDirectory()
        // The HTTPS listener comes from aasad.yaml (no --https flag), so that the test can
        // change the listeners an upgrade applies.
        try config.write("config/aasad.yaml", Array("listen:\n  https: [\"127.0.0.1:0\"]\n".utf8))
        launcher = try Launcher(
            script: "upgrade.py",
            arguments: [
                scratch.url.path, AASAD.binary.path, "--config", config.config, "--state", config.state, "--threads", "2",
                "--admin", "off", "--drain-timeout", "5",
            ])
        let first = try launcher.line()
        port = Int(first.dropFirst("port ".count)) ?? 0
        #expect(first.hasPrefix("port ") && port > 0, "\(first)")
        let ready = try launcher.line()
        pid = Int(ready.dropFirst("ready ".count)) ?? 0
        #expect(ready.hasPrefix("ready ") && pid > 0, "\(ready)")
    }

    func get(_ url: String, port: Int) throws -> RunningServer.HTTPResult {
        try RunningServer.curl(["-k", "--resolve", "a.test:\(port):127.0.0.1", url], scratch: config)
    }

    @Test("two upgrades and a failed one under new, HTTP/2 and kept-alive connections fail no request; the PID file follows")
    func upgradesUnderLoad() throws {
        launcher.send("load 2")
        launcher.send("load-h2 1")
        launcher.send("load-keepalive 2")
        launcher.send("load-h2-keepalive 1")
        #expect(try launcher.waitForAnswers(Self.answersBetweenSteps))
        launcher.send("upgrade")
        let first = try launcher.line()
        #expect(first.hasPrefix("upgraded \(pid) "), "\(first)")
        #expect(try launcher.waitForAnswers(Self.answersBetweenSteps))
        // A new version that exits at once: reported, and the serving process goes on.
        launcher.send("break")
        #expect(try launcher.line() == "broken")
        launcher.send("failed")
        let newPID = first.split(separator: " ").last.map(String.init) ?? ""
        let exited = try launcher.line()
        #expect(exited.hasPrefix("kept \(newPID) |") && exited.contains("exited with status 3 before it was ready"), "\(exited)")
        // One that cannot be run at all: the reason is named.
        launcher.send("missing")
        #expect(try launcher.line() == "missing")
        launcher.send("failed")
        let missing = try launcher.line()
        #expect(missing.hasPrefix("kept \(newPID) |") && missing.contains("No such file or directory"), "\(missing)")
        launcher.send("mend")
        #expect(try launcher.line() == "mended")
        #expect(try launcher.waitForAnswers(Self.answersBetweenSteps))
        launcher.send("upgrade")
        let second = try launcher.line()
        #expect(second.hasPrefix("upgraded \(newPID) "), "\(second)")
        #expect(try launcher.waitForAnswers(Self.answersBetweenSteps))
        let report = try launcher.report()
        #expect((report["ok"] as? Int ?? 0) > 20, "\(report)")
        // Every answer was 200 with the body of the first (load_clients.py): the same snapshot.
        #expect(report["failed"] as? Int == 0, "\(report)")
        // Kept-alive requests retried because a draining process closed their idle connection:
        // at most one per kept-alive client (three) per upgrade (two).
        #expect((report["retried"] as? Int ?? 0) <= 6, "\(report)")
        let served = try get("https://a.test:\(port)/.well-known/apple-app-site-association", port: port)
        #expect(served.status == 200 && served.body == config.aasa)
    }

    /// One TLS 1.3 handshake and request with `openssl s_client` to own.test (a site with its own
    /// certificate: a development leaf is made anew by each process, and a ticket resumes only
    /// under the certificate it was issued with), saving its session to `save` or offering the
    /// one in `offer`; whether it resumed.
    func resumed(save: String? = nil, offer: String? = nil) throws -> Bool {
        var arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", "own.test", "-tls1_3", "-ign_eof"]
        if let save { arguments += ["-sess_out", save] }
        if let offer { arguments += ["-sess_in", offer] }
        let request = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: own.test\r\nConnection: close\r\n\r\n"
        let out = try Tool.run("openssl", arguments, input: Array(request.utf8))
        #expect(out.text.contains("\nReused, ") || out.text.contains("\nNew, "), "\(out.stderr.suffix(300))")
        return out.text.contains("\nReused, ")
    }

    @Test("a session ticket issued before an upgrade resumes after it (the ticket keys are passed on)")
    func ticketsSurvive() throws {
        let session = scratch.url.appendingPathComponent("session.pem").path
        #expect(try !resumed(save: session))
        #expect(try resumed(offer: session), "resumes before the upgrade")
        launcher.send("upgrade")
        let upgraded = try launcher.line()
        #expect(upgraded.hasPrefix("upgraded \(pid) "), "\(upgraded)")
        #expect(try resumed(offer: session), "resumes after the upgrade")
    }

    @Test("an upgrade applies a listener added to aasad.yaml, and keeps the HTTPS port the old process bound")
    func upgradeAppliesListeners() throws {
        // A free port for the new plain HTTP listener.
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) == 0 && getsockname(probe, $0, &length) == 0 }
        }
        let httpPort = Int(UInt16(bigEndian: address.sin_port))
        close(probe)
        #expect(httpPort > 0)
        try config.write(
            "config/aasad.yaml", Array("listen:\n  https: [\"127.0.0.1:0\"]\n  http: [\"127.0.0.1:\(httpPort)\"]\n".utf8))
        launcher.send("upgrade")
        let upgraded = try launcher.line()
        #expect(upgraded.hasPrefix("upgraded \(pid) "), "\(upgraded)")
        let overTLS = try get("https://a.test:\(port)/.well-known/apple-app-site-association", port: port)
        #expect(overTLS.status == 200 && overTLS.body == config.aasa)
        let plain = try get("http://a.test:\(httpPort)/.well-known/apple-app-site-association", port: httpPort)
        #expect(plain.status == 200 && plain.body == config.aasa)
    }
}
