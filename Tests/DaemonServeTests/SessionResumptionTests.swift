import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Session tickets are bound to the certificate they were issued under: every
/// context shares the rotating ticket keys, and each context's session id context is its
/// certificate's identity, so a ticket resumes only under the certificate it was issued with.
@Suite("aasad serve: session tickets resume only under their own certificate")
final class SessionResumptionTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    /// One handshake with `openssl s_client` and one request; the session (with its ticket) is
    /// saved to `save`, or the one in `offer` is offered. Returns whether the handshake resumed
    /// (`Reused`) rather than ran in full (`New`).
    private func handshake(_ name: String, _ version: String, save: String? = nil, offer: String? = nil) throws -> Bool {
        var arguments = ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", name, version, "-ign_eof"]
        if let save { arguments += ["-sess_out", save] }
        if let offer { arguments += ["-sess_in", offer] }
        // A request answered with Connection: close: the TLS 1.3 tickets, which follow the
        // handshake, arrive before the server closes.
        let request = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: \(name)\r\nConnection: close\r\n\r\n"
        let out = try Tool.run("openssl", arguments, input: Array(request.utf8))
        let reused = out.text.contains("\nReused, ")
        #expect(reused || out.text.contains("\nNew, "), "no session line from s_client: \(out.stderr.suffix(300))")
        return reused
    }

    @Test("a ticket resumes under its own certificate and runs a full handshake under another", arguments: ["-tls1_3", "-tls1_2"])
    func boundToCertificate(_ version: String) throws {
        let own = config.path("own-session-\(version)")
        let development = config.path("development-session-\(version)")
        #expect(try !handshake("own.test", version, save: own))
        #expect(try !handshake("a.test", version, save: development))
        // Same certificate (own.test's; the development one covers a.test and www.a.test): resumed.
        #expect(try handshake("own.test", version, offer: own))
        #expect(try handshake("www.a.test", version, offer: development))
        // Another certificate: a full handshake, whichever way the SNI callback switches.
        #expect(try !handshake("a.test", version, offer: own), "own.test's ticket resumed under the development certificate")
        #expect(try !handshake("own.test", version, offer: development), "a development ticket resumed under own.test's certificate")
    }

    @Test("one TLS 1.3 ticket after a full handshake, and it resumes")
    func oneTicket() throws {
        // `-msg` prints every handshake message; tickets come after the handshake.
        func tickets(_ extra: [String]) throws -> Int {
            let request = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: own.test\r\nConnection: close\r\n\r\n"
            let out = try Tool.run(
                "openssl",
                ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "own.test", "-tls1_3", "-msg", "-ign_eof"] + extra,
                input: Array(request.utf8))
            return out.text.components(separatedBy: "NewSessionTicket").count - 1
        }
        let session = config.path("one-ticket-session")
        #expect(try tickets(["-sess_out", session]) == 1)
        #expect(try handshake("own.test", "-tls1_3", offer: session))
    }

    @Test("a ticket survives a reload that keeps the certificate")
    func survivesReload() throws {
        let own = config.path("own-session-reload")
        #expect(try !handshake("own.test", "-tls1_3", save: own))
        // A new AASA file for own.test: the site reloads, its certificate files are unchanged.
        let changed = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.changed"]}}"#.utf8)
        try config.write("config/sites/own.test/apple-app-site-association", changed)
        #expect(
            try eventually { try server.https("own.test", "/apple-app-site-association", cacert: config.ownCA).body == changed },
            "the new file was not picked up")
        #expect(try handshake("own.test", "-tls1_3", offer: own))
    }
}
