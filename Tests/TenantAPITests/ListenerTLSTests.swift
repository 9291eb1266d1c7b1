import Foundation
import Glibc
import Logging
import TestSupport
import Testing

@testable import TenantAPI

/// The listener's addresses and TLS: TLS required off loopback, a bad pair refused at start, and
/// real TLS clients (curl, openssl s_client) on loopback.
@Suite struct ListenerTLSTests {
    private func listener(_ listen: String, tls: APITLSFiles? = nil) throws -> APIListener {
        try APIListener(listen: listen, tls: tls, handler: { _ in APIResponse(status: 200) }, logger: Logger(label: "api-test"))
    }

    @Test(arguments: ["0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "[2001:db8::1]:0"])
    func aNonLoopbackAddressWithoutTLSIsRefused(listen: String) throws {
        #expect(throws: APIListenerError.tlsRequired(listen)) { try listener(listen) }
        let message = APIListenerError.tlsRequired(listen).description
        #expect(message.contains("api.tls-certificate") && message.contains("api.tls-key"))
    }

    @Test(arguments: ["127.0.0.1:0", "localhost:0", "127.0.0.2:0"])
    func aLoopbackAddressTakesPlainHTTP(listen: String) throws {
        let api = try listener(listen)
        defer { api.stop() }
        #expect(api.port > 0)
    }

    @Test(arguments: [
        "", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+80", "a.example:80", "[::1:80", "1.2.3:80", "127.0.0.1\u{0}:80",
    ])
    func aMalformedAddressIsRefused(listen: String) throws {
        #expect(throws: APIListenerError.self) { try listener(listen) }
    }

    @Test func aPortInUseIsRefusedWithTheReason() throws {
        let first = try listener("127.0.0.1:0")
        defer { first.stop() }
        #expect(throws: APIListenerError.self) { try listener("127.0.0.1:\(first.port)") }
    }

    @Test func aBadPairIsRefusedNamingTheSetting() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-tls")
        let a = try TestPKI.shared(["api.test"])
        let b = try TestPKI.make(["other.test"])
        try dir.write("cert.pem", a.certificatePEM)
        try dir.write("key.pem", b.keyPEM)
        try dir.write("garbage.pem", Array("not PEM".utf8))
        do {
            _ = try listener("127.0.0.1:0", tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
            Issue.record("a certificate with another pair's key was taken")
        } catch {
            #expect(String(describing: error).hasPrefix("api.tls-key"))
            #expect(String(describing: error).contains("does not match"))
        }
        do {
            _ = try listener("127.0.0.1:0", tls: APITLSFiles(certificate: dir.path("missing.pem"), key: dir.path("key.pem")))
            Issue.record("a missing certificate file was taken")
        } catch {
            #expect(String(describing: error).hasPrefix("api.tls-certificate"))
        }
        do {
            _ = try listener("127.0.0.1:0", tls: APITLSFiles(certificate: dir.path("garbage.pem"), key: dir.path("key.pem")))
            Issue.record("a file without a certificate was taken")
        } catch {
            #expect(String(describing: error).hasPrefix("api.tls-certificate"))
        }
    }

    @Test func curlSpeaksHTTP11OverTLSAndTheHandlerSeesItSecure() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-tls")
        let pair = try TestPKI.shared(["api.test"])
        try dir.write("cert.pem", pair.certificatePEM)
        try dir.write("key.pem", pair.keyPEM)
        let server = try EchoListener(
            limits: .short(), tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
        let url = "https://api.test:\(server.port)/v1/sites/a.example"
        let resolve = ["--resolve", "api.test:\(server.port):127.0.0.1", "--cacert", dir.path("cert.pem")]
        let put = try Curl.run(resolve + ["-X", "PUT", "--data-binary", "{\"aasa\": {}}", url, url], scratch: dir.path)
        #expect(put.status == 200)
        #expect(put.version == "1.1")
        // Two requests, one connection: the second made none (keep-alive over TLS).
        #expect(put.connects == 0)
        #expect(server.handled == 2)
        let request = try #require(server.requests.first)
        #expect(request.secure)
        #expect(request.method == "PUT")
        #expect(request.body == Array("{\"aasa\": {}}".utf8))
        #expect(String(decoding: put.body, as: UTF8.self).contains("secure: true"))
        // Plain HTTP to the TLS port is not served.
        let plain = try #require(RawClient(port: server.port))
        plain.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        #expect(plain.readUntilClose().closed)
        #expect(server.handled == 2)
    }

    @Test func pastTheBoundATLSClientIsAnswered503() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-tls")
        let pair = try TestPKI.shared(["api.test"])
        try dir.write("cert.pem", pair.certificatePEM)
        try dir.write("key.pem", pair.keyPEM)
        var limits = APIListenerLimits.short()
        limits.maximumConnections = 1
        let server = try EchoListener(limits: limits, tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
        let held = try #require(RawClient(port: server.port))
        #expect(eventually { server.listener.openConnections == 1 })
        let url = "https://api.test:\(server.port)/x"
        let refused = try Curl.run(
            ["--resolve", "api.test:\(server.port):127.0.0.1", "--cacert", dir.path("cert.pem"), url], scratch: dir.path)
        #expect(refused.status == 503)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("\"error\": \"busy\""))
        #expect(server.handled == 0)
        _ = held
    }

    @Test func allAddressesTakeIPv4AndIPv6AndNameAnIPv4PeerAsIPv4() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-tls")
        let pair = try TestPKI.shared(["api.test"])
        try dir.write("cert.pem", pair.certificatePEM)
        try dir.write("key.pem", pair.keyPEM)
        let server = try EchoListener(
            limits: .short(), listen: ":0", tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
        for address in ["127.0.0.1", "[::1]"] {
            let answer = try Curl.run(
                ["--resolve", "api.test:\(server.port):\(address)", "--cacert", dir.path("cert.pem"), "https://api.test:\(server.port)/p"],
                scratch: dir.path)
            #expect(answer.status == 200)
        }
        #expect(server.requests.map(\.peer) == ["127.0.0.1", "::1"])
    }

    @Test func opensslSeesTLS12OrLaterOnlyAndAHandshakeNeverFinishedIsCut() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-tls")
        let pair = try TestPKI.shared(["api.test"])
        try dir.write("cert.pem", pair.certificatePEM)
        try dir.write("key.pem", pair.keyPEM)
        let server = try EchoListener(
            limits: .short(header: .seconds(1)), tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
        let connect = ["s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "api.test", "-CAfile", dir.path("cert.pem")]
        let old = try Tool.run("openssl", connect + ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"], input: [])
        // Refused with an alert: no cipher agreed, and s_client fails.
        #expect(old.status != 0)
        #expect(old.text.contains("Cipher is (NONE)"))
        let request = Array("GET /s HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n".utf8)
        let current = try Tool.run("openssl", connect + ["-tls1_2", "-quiet", "-verify_return_error"], input: request)
        #expect(current.text.hasPrefix("HTTP/1.1 200 OK"))
        // A TCP connection that never starts the handshake is closed at the header deadline.
        let silent = try #require(RawClient(port: server.port))
        #expect(silent.readUntilClose(seconds: 10).closed)
    }

    /// ALPN (RFC 7301) selects `http/1.1` when offered, never `h2` (the listener speaks only
    /// HTTP/1.1); a client offering only `h2` continues without ALPN.
    @Test func alpnSelectsHTTP11OnlyAndNeverH2() throws {
        let dir = try TemporaryDirectory(prefix: "aasad-api-alpn")
        let pair = try TestPKI.shared(["api.test"])
        try dir.write("cert.pem", pair.certificatePEM)
        try dir.write("key.pem", pair.keyPEM)
        let server = try EchoListener(
            limits: .short(), tls: APITLSFiles(certificate: dir.path("cert.pem"), key: dir.path("key.pem")))
        let connect = ["s_client", "-connect", "127.0.0.1:\(server.port)", "-servername", "api.test", "-CAfile", dir.path("cert.pem")]
        let both = try Tool.run("openssl", connect + ["-alpn", "h2,http/1.1"], input: [])
        #expect(both.text.contains("ALPN protocol: http/1.1"), "\(both.text)")
        let h2Only = try Tool.run("openssl", connect + ["-alpn", "h2"], input: [])
        #expect(h2Only.text.contains("No ALPN negotiated"), "\(h2Only.text)")
    }
}
