import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The 421 rule: on a connection with SNI, a request for the SNI name is served by the
/// normal rules; a request for another host is served when the certificate the connection
/// presented covers that host, else 421. A certificate rotated, or a site deleted and recreated
/// with a new pair, while a connection is open does not make that connection's requests misdirected.
@Suite("aasad serve: 421 means the connection's certificate does not cover the host")
final class MisdirectedTests {
    let config: TestConfig
    let server: TestDaemon
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        // multi.test has its own certificate, which also covers other.test (a site on the default
        // development certificate) and one label under wild.test.
        try config.write("config/sites/multi.test/apple-app-site-association", config.aasa)
        try config.makePair(["multi.test", "other.test", "*.wild.test"], into: config.path("config/sites/multi.test/tls"))
        try config.write("config/sites/other.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/x.wild.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/y.x.wild.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/rot.test/apple-app-site-association", config.aasa)
        try config.makePair(["rot.test"], into: config.path("config/sites/rot.test/tls"))
        server = try TestDaemon(config: config)
    }

    @Test("a kept HTTP/2 connection serves every host its certificate covers and answers 421 for the others")
    func coveredHosts() throws {
        let kept = try KeptConnection(port: server.httpsPort, serverName: "multi.test")
        #expect(kept.status("multi.test", Self.path) == "200")
        #expect(kept.status("other.test", Self.path) == "200", "covered by multi.test's certificate")
        #expect(kept.status("x.wild.test", Self.path) == "200", "*.wild.test covers one label")
        #expect(kept.status("y.x.wild.test", Self.path) == "421", "a wildcard covers exactly one label (RFC 6125 §6.4.3)")
        #expect(kept.status("own.test", Self.path) == "421")
        #expect(kept.status("a.test", Self.path) == "421")
        #expect(kept.status("nope.test", Self.path) == "404", "an unknown host is 404, as on any connection")
    }

    @Test("a site's certificate rotated while a connection is open: the kept connection is still served")
    func rotatedCertificate() throws {
        let kept = try KeptConnection(port: server.httpsPort, serverName: "rot.test")
        #expect(kept.status("rot.test", Self.path) == "200")
        let tls = config.path("config/sites/rot.test/tls")
        let before = try server.servedFingerprint("rot.test")
        try config.makePair(["rot.test"], into: tls)
        let rotated = try Tool.fingerprint(ofFile: tls + "/cert.pem")
        #expect(rotated != before)
        #expect(try eventually { try server.servedFingerprint("rot.test") == rotated }, "the new pair was not picked up")
        #expect(kept.status("rot.test", Self.path) == "200")
    }

    @Test("a site deleted and recreated with a new pair: the kept connection is served the new site")
    func recreatedSite() throws {
        let kept = try KeptConnection(port: server.httpsPort, serverName: "rot.test")
        #expect(kept.status("rot.test", Self.path) == "200")
        try FileManager.default.removeItem(atPath: config.path("config/sites/rot.test"))
        #expect(try eventually { try server.http("rot.test", Self.path).status == 404 }, "the deletion was not picked up")
        #expect(kept.status("rot.test", Self.path) == "404")
        // Recreated as an operator would: the directory, a new pair, then the file.
        let tls = config.path("config/sites/rot.test/tls")
        try config.makePair(["rot.test"], into: tls)
        try config.write("config/sites/rot.test/apple-app-site-association", config.ownAASA)
        let recreated = try Tool.fingerprint(ofFile: tls + "/cert.pem")
        // A full rescan (what SIGHUP asks for): this test is about the 421 rule, not about the
        // watcher's timing.
        server.daemon.reload()
        #expect(
            try eventually {
                try server.http("rot.test", Self.path).body == config.ownAASA && server.servedFingerprint("rot.test") == recreated
            }, "the recreated site was not picked up")
        #expect(kept.status("rot.test", Self.path) == "200")
    }
}

/// A kept-alive HTTP/2 connection (Fixtures/h2kept.py): one TLS handshake, then one request at a
/// time, so a test can change the config directory between requests.
final class KeptConnection {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private lazy var lines = PipeLines(output)

    init(port: Int, serverName: String) throws {
        Tool.ignoreBrokenPipes()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [Tool.python3, TestConfig.fixtures.appendingPathComponent("h2kept.py").path, "\(port)", serverName]
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let greeting = lines.next()
        guard greeting == "connected" else { throw TestDaemon.Failure("h2kept.py did not connect: \(greeting ?? "exited")") }
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    /// The status of a GET for `authority` and `path` on the kept connection, or `error …`.
    func status(_ authority: String, _ path: String) -> String {
        input.fileHandleForWriting.write(Data("\(authority) \(path)\n".utf8))
        return lines.next() ?? "error: the client exited"
    }

}
