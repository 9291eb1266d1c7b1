import Foundation
import HTTPServer
import Logging
import Reactor
import SiteStore
import Synchronization
import TLS
import TestSupport
import Testing

/// Pending ACME challenges held in memory, as the ACME storage will hand them to the server.
final class ChallengeBook: Sendable {
    private let certificates = Mutex<[String: TLSServer.CertificateSource]>([:])
    private let answers = Mutex<[String: [UInt8]]>([:])

    func certificate(_ name: String) -> TLSServer.CertificateSource? { certificates.withLock { $0[name] } }
    func answer(_ host: String, _ token: String) -> [UInt8]? { answers.withLock { $0["\(host) \(token)"] } }
    func add(_ name: String, _ source: TLSServer.CertificateSource) { certificates.withLock { $0[name] = source } }
    func add(host: String, token: String, answer: [UInt8]) { answers.withLock { $0["\(host) \(token)"] = answer } }
}

/// The server started in-process on loopback with in-memory challenge resolvers (`aasad serve`
/// passes none until the ACME storage is wired): `a.test` is a site with its own certificate,
/// `default.test` the default certificate; both listeners on port 0; an access log; plain HTTP
/// redirecting to HTTPS when given `httpsRedirect`.
final class ChallengeServer {
    let config: TestConfig
    let book: ChallengeBook
    let traffic = TrafficCounters()
    let server: Server
    let httpsPort: Int
    let httpPort: Int
    var accessLogPath: String { config.path("access.log") }

    init(httpsRedirect: HTTPSRedirect? = nil) throws {
        let config = try TestConfig()
        self.config = config
        for name in ["default.test", "a.test"] { try config.makePair([name], into: config.path("certs/\(name)")) }
        func source(_ name: String) throws -> TLSServer.CertificateSource {
            let directory = config.path("certs/\(name)")
            return TLSServer.CertificateSource(
                identity: name, chainPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/cert.pem"))),
                keyPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/key.pem"))), label: directory)
        }
        let site = try source("a.test")
        let book = ChallengeBook()
        self.book = book
        let tls = try TLSServer(defaultCertificate: try source("default.test"), challengeResolver: { book.certificate($0) }) { name in
            name == "a.test" ? site : nil
        }
        let file = try PreparedFile(body: config.aasa, modified: 784_111_777, options: ServingOptions())
        let served = ServedSite(
            directory: "a.test", hosts: [try HostName(parsing: "a.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0)
        let store = SnapshotStore(Snapshot(generation: 1, sites: [served], defaultCertificate: nil))
        let loopback = try SocketAddress(parsing: "127.0.0.1:0")
        server = Server(
            configuration: .init(
                https: [loopback], http: [loopback], threads: 1, traffic: traffic,
                accessLog: try AccessLog(destination: config.path("access.log"), format: .text),
                http01Resolver: { book.answer($0, $1) }, httpsRedirect: httpsRedirect),
            store: store, tls: tls, logger: Logger(label: "challenge-test") { _ in SwiftLogNoOpLogHandler() })
        try server.start()
        httpsPort = Int(server.boundHTTPS[0].port)
        httpPort = Int(server.boundHTTP[0].port)
    }

    deinit { server.stop() }

    /// A TLS-ALPN-01 certificate for `name` made with openssl (RFC 8737 §3: self-signed, one
    /// dNSName, the critical acmeIdentifier extension holding SHA-256 of the key authorization),
    /// put in the book.
    @discardableResult
    func addChallenge(_ name: String, digestHex: String = String(repeating: "ab", count: 32)) throws -> TLSServer.CertificateSource {
        let directory = config.path("challenges/\(name)")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let made = try Tool.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1", "-subj", "/CN=\(name)",
                "-addext", "1.3.6.1.5.5.7.1.31=critical,DER:04:20:\(digestHex)", "-addext", "subjectAltName=DNS:\(name)",
                "-keyout", directory + "/key.pem", "-out", directory + "/cert.pem",
            ])
        #expect(made.status == 0, "openssl could not make the challenge certificate: \(made.stderr)")
        let source = TLSServer.CertificateSource(
            identity: "challenge \(name) \(digestHex)",
            chainPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/cert.pem"))),
            keyPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/key.pem"))), label: directory)
        book.add(name, source)
        return source
    }

    /// `openssl s_client` to the HTTPS listener, killed after 10 s at most (SIGKILL: a plain
    /// SIGTERM from `timeout` left s_client running under the test runner). With `waitForClose`
    /// it reads until the server closes (`-ign_eof`), so a server that kept the connection open
    /// shows as status 137; otherwise it leaves as soon as its (empty) input ends.
    func sClient(_ arguments: [String], waitForClose: Bool = true) throws -> Tool.Output {
        try Tool.run(
            "timeout",
            ["-s", "KILL", "10", "openssl", "s_client", "-connect", "127.0.0.1:\(httpsPort)"] + (waitForClose ? ["-ign_eof"] : [])
                + arguments, input: [])
    }

    /// curl over HTTPS with `host` resolved to the server, trusting `a.test`'s certificate.
    func https(_ host: String, _ path: String, _ options: [String] = []) throws -> RunningServer.HTTPResult {
        try RunningServer.curl(
            [
                "--cacert", config.path("certs/a.test/cert.pem"), "--resolve", "\(host):\(httpsPort):127.0.0.1",
                "https://\(host):\(httpsPort)\(path)",
            ]
                + options, scratch: config)
    }

    /// curl over plain HTTP with a Host header.
    func http(_ host: String, _ path: String, _ options: [String] = []) throws -> RunningServer.HTTPResult {
        try RunningServer.curl(["-H", "Host: \(host)", "http://127.0.0.1:\(httpPort)\(path)"] + options, scratch: config)
    }

    /// Sends raw bytes to `port` and returns everything received until the server closes (5 s at most).
    func raw(_ bytes: [UInt8], port: Int) -> [UInt8] {
        guard let fd = Loopback.connect(port: port) else { return [] }
        defer { close(fd) }
        Loopback.setReceiveTimeout(fd, seconds: 5)
        Loopback.send(fd, bytes)
        return Loopback.receiveAll(fd)
    }

    /// Sends raw bytes to the HTTPS listener and returns the first bytes that come back (5 s at
    /// most): a ServerHello or an alert, without waiting for the handshake timeout.
    func firstReply(_ bytes: [UInt8]) -> [UInt8] {
        guard let fd = Loopback.connect(port: httpsPort) else { return [] }
        defer { close(fd) }
        Loopback.setReceiveTimeout(fd, seconds: 5)
        Loopback.send(fd, bytes)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let n = recv(fd, &buffer, buffer.count, 0)
        return n > 0 ? Array(buffer[..<n]) : []
    }

    var statistics: ServerStatistics { traffic.statistics() }

    /// The certificate text (`openssl x509 -text`) of the PEM in `output`.
    static func certificateText(_ output: Tool.Output) throws -> String {
        try Tool.run("openssl", ["x509", "-noout", "-text"], input: output.stdout).text
    }
}

/// TLS-ALPN-01 (RFC 8737) on the HTTPS listener, end to end with openssl, Python and raw bytes.
@Suite("ACME challenges: TLS-ALPN-01 on the HTTPS listener")
final class TLSALPNChallengeTests {
    let server: ChallengeServer

    init() throws { server = try ChallengeServer() }

    @Test("without a challenge certificate, or without SNI, acme-tls/1 is refused (no_application_protocol) and the server stays up")
    func refused() throws {
        try server.addChallenge("c.test")
        for arguments in [["-servername", "nothing.test"], ["-servername", "a.test"], ["-noservername"]] {
            let out = try server.sClient(arguments + ["-alpn", "acme-tls/1"])
            #expect(out.status != 0 && out.status != 137, "\(arguments)")
            #expect(out.stderr.contains("no application protocol"), "\(arguments): \(out.stderr)")
            #expect(!out.text.contains("BEGIN CERTIFICATE"), "\(arguments): a certificate was presented")
        }
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(eventually { server.statistics.handshakeFailures[.acmeChallengeUnavailable] == 3 })
        #expect(server.statistics.acmeChallengeHandshakes == 0)
    }

    @Test("a malformed ALPN extension in a hand-built ClientHello gets decode_error; the server stays up")
    func malformedALPN() throws {
        try server.addChallenge("c.test")
        let acme = Array("acme-tls/1".utf8)
        for body in [[0, 12, 10] + acme, [0, 11, 12] + acme, [0, 0], [0xFF, 0xFF, 10] + acme, [0, 1, 0]] as [[UInt8]] {
            let reply = server.firstReply(HandBuiltClientHello.record(serverName: "c.test", alpnBody: body))
            #expect(HandBuiltClientHello.fatalAlert(in: reply) == 50, "\(body): \(reply)")
        }
        // A well-formed hand-built one for the same name gets a ServerHello (a handshake record).
        let good = server.firstReply(
            HandBuiltClientHello.record(serverName: "c.test", alpnBody: HandBuiltClientHello.alpnBody(["acme-tls/1"])))
        #expect(good.first == 22, "no ServerHello: \(good.prefix(16))")
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association").status == 200)
    }

    @Test("openssl s_client -alpn acme-tls/1 gets the challenge certificate and acme-tls/1, and the server closes after the handshake")
    func answersChallenge() throws {
        let digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        try server.addChallenge("c.test", digestHex: digest)
        let out = try server.sClient(["-servername", "c.test", "-alpn", "acme-tls/1"])
        #expect(out.status == 0, "s_client: \(out.status) \(out.stderr)")
        #expect(out.text.contains("ALPN protocol: acme-tls/1"), "\(out.text)")
        // The server ended the connection with close_notify: s_client saw it and reports "closed".
        #expect(out.text.contains("closed"), "\(out.text)")
        let certificate = try ChallengeServer.certificateText(out)
        #expect(certificate.contains("1.3.6.1.5.5.7.1.31: critical"), "\(certificate)")
        #expect(certificate.contains("DNS:c.test"), "\(certificate)")
        #expect(eventually { server.statistics.acmeChallengeHandshakes == 1 })
        // Not counted as an HTTP handshake.
        #expect(server.statistics.handshakes.values.reduce(0, +) == 0)
    }

    @Test("an HTTP request sent after an acme-tls/1 handshake gets nothing: the server only closes")
    func requestAfterChallengeGetsNothing() throws {
        try server.addChallenge("c.test")
        let script = """
            import socket, ssl, sys
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["acme-tls/1"])
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5), server_hostname="c.test")
            print("alpn", s.selected_alpn_protocol())
            print("certificate", len(s.getpeercert(binary_form=True)))
            try:
                s.sendall(b"GET /.well-known/apple-app-site-association HTTP/1.1\\r\\nHost: a.test\\r\\n\\r\\n")
            except OSError as e:
                print("send", type(e).__name__)
            data = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                print("received", repr(data))
            except OSError as e:
                print("recv", type(e).__name__, repr(data))
            """
        let out = try Tool.run("python3", ["-c", script, "\(server.httpsPort)"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.text.contains("alpn acme-tls/1"), "\(out.text)")
        #expect(out.text.contains("received b''"), "the server answered after an acme-tls/1 handshake: \(out.text)")
        #expect(!out.text.contains("HTTP/1.1"))
        #expect(server.statistics.requests.values.reduce(0, +) == 0)
    }

    @Test("a client offering acme-tls/1 among other protocols is served normally, never with acme-tls/1")
    func mixedOffer() throws {
        try server.addChallenge("c.test")
        let mixed = try server.sClient(["-servername", "c.test", "-alpn", "h2,acme-tls/1"], waitForClose: false)
        #expect(mixed.text.contains("ALPN protocol: h2"), "\(mixed.text)")
        #expect(try ChallengeServer.certificateText(mixed).contains("CN = default.test"))
        let site = try server.sClient(["-servername", "a.test", "-alpn", "acme-tls/1,http/1.1"], waitForClose: false)
        #expect(site.text.contains("ALPN protocol: http/1.1"), "\(site.text)")
        #expect(try ChallengeServer.certificateText(site).contains("CN = a.test"))
        #expect(server.statistics.acmeChallengeHandshakes == 0)
    }

    @Test("normal clients and SNI selection still work: HTTP/2 and HTTP/1.1 for the site, while challenges are pending")
    func normalClients() throws {
        for i in 0..<5 { try server.addChallenge("c\(i).test") }
        let h2 = try server.https("a.test", "/.well-known/apple-app-site-association", ["--http2"])
        #expect(h2.status == 200 && h2.version == "2" && h2.body == server.config.aasa)
        let h1 = try server.https("a.test", "/.well-known/apple-app-site-association", ["--http1.1"])
        #expect(h1.status == 200 && h1.version == "1.1" && h1.body == server.config.aasa)
        for i in 0..<5 {
            let out = try server.sClient(["-servername", "c\(i).test", "-alpn", "acme-tls/1"])
            #expect(out.text.contains("ALPN protocol: acme-tls/1"), "c\(i).test")
        }
        #expect(try server.https("a.test", "/apple-app-site-association", ["--http2"]).status == 200)
    }
}

/// HTTP-01 (RFC 8555 §8.3) on the plain listener, end to end with curl and raw sockets.
@Suite("ACME challenges: HTTP-01 on the plain listener")
final class HTTP01ChallengeTests {
    let server: ChallengeServer
    static let token = "LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"
    static let answer = Array("\(token).9jg46WB3rR_AHD-EBXdN7cBkH1WOu0tA3M9fm21mqTI".utf8)
    static let path = "/.well-known/acme-challenge/\(token)"

    init() throws {
        server = try ChallengeServer()
        server.book.add(host: "c.test", token: Self.token, answer: Self.answer)
    }

    @Test(
        "hostile and unknown tokens are 404, never a redirect",
        arguments: [
            "..%2f..%2fetc%2fpasswd", "..", "a/b", "\(token)/", "%4coqX", "tok=", "tok.en", String(repeating: "A", count: 129), "",
            "?x", "?\(token)", "unknownToken", "\(token)A", String(token.dropLast()),
        ])
    func hostileTokens(_ token: String) throws {
        let r = try server.http("c.test", "/.well-known/acme-challenge/" + token)
        #expect(r.status == 404, "\(token): \(r.status)")
        #expect(r.body != Self.answer)
    }

    @Test("bytes outside base64url in the token are refused, by the parser or the path (400 or 404)")
    func rawBytes() throws {
        for bad in [[0x80], [0x20], [0x09], [0x00], [0x7F]] as [[UInt8]] {
            let request =
                Array("GET /.well-known/acme-challenge/tok".utf8) + bad
                + Array("en HTTP/1.1\r\nHost: c.test\r\nConnection: close\r\n\r\n".utf8)
            let reply = String(decoding: server.raw(request, port: server.httpPort), as: UTF8.self)
            #expect(reply.hasPrefix("HTTP/1.1 400") || reply.hasPrefix("HTTP/1.1 404"), "\(bad): \(reply.prefix(40))")
        }
    }

    @Test("curl over plain HTTP gets the key authorization; the query string is ignored; it is counted and access-logged")
    func answers() throws {
        let r = try server.http("c.test", Self.path)
        #expect(r.status == 200 && r.body == Self.answer)
        #expect(r.headers["content-type"] == "application/octet-stream")
        #expect(r.headers["content-length"] == "\(Self.answer.count)")
        #expect(r.headers["location"] == nil)
        #expect(try server.http("C.TEST:80", Self.path + "?x=1").body == Self.answer)
        #expect(
            eventually {
                server.statistics.requests.filter { $0.key.path == .acmeChallenge && $0.key.status == .success }.values.reduce(0, +) == 2
            })
        #expect(
            eventually {
                let log = (try? String(contentsOfFile: server.accessLogPath, encoding: .utf8)) ?? ""
                return log.contains("\"GET \(Self.path) HTTP/1.1\" 200 \(Self.answer.count)")
            })
    }

    @Test("HEAD gets the head without the body; POST is 405")
    func headAndOtherMethods() throws {
        let reply = String(
            decoding: server.raw(
                Array("HEAD \(Self.path) HTTP/1.1\r\nHost: c.test\r\nConnection: close\r\n\r\n".utf8), port: server.httpPort),
            as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(reply)")
        #expect(reply.contains("Content-Length: \(Self.answer.count)\r\n"))
        #expect(reply.hasSuffix("\r\n\r\n"), "a body followed the head: \(reply)")
        let post = try server.http("c.test", Self.path, ["-X", "POST"])
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
    }

    @Test("the HTTPS listener does not serve the HTTP-01 path")
    func notOnHTTPS() throws {
        let r = try RunningServer.curl(
            ["-k", "--resolve", "c.test:\(server.httpsPort):127.0.0.1", "https://c.test:\(server.httpsPort)\(Self.path)"],
            scratch: server.config)
        #expect(r.status == 404 && r.body != Self.answer)
        let site = try server.https("a.test", Self.path)
        #expect(site.status == 404)
    }
}
