import Foundation
import TestSupport
import Testing

/// HTTP/2 abuse with a misbehaving client (Python's h2): cut off, and the server process's
/// memory stays bounded. (The serving rules over HTTP/2 are tested on a daemon in this process:
/// Tests/DaemonServeTests/HTTP2Tests.swift.)
@Suite("aasad serve: HTTP/2 abuse")
final class HTTP2AbuseTests {
    let config: TestConfig
    let server: RunningServer
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        server = try RunningServer(config: config)
    }

    @Test(
        "abusive clients are cut off, memory stays bounded, and a normal client is still served",
        arguments: [
            "rapid-reset", "continuation", "settings", "ping", "big-headers", "window", "concurrency-100", "concurrency-101",
        ])
    func abuse(_ mode: String) throws {
        let script = AASAD.testDirectory.appendingPathComponent("Fixtures/h2abuse.py").path
        let before = server.residentKilobytes
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", mode])
        #expect(out.text.hasPrefix("ok"), "\(mode): \(out.text) \(out.stderr.suffix(300))")
        #expect(server.residentKilobytes - before < 64 * 1024, "\(mode) grew the server by more than 64 MB")
        #expect(try server.https("a.test", Self.path, ["--http2"]).status == 200, "not served after \(mode)")
    }
}
