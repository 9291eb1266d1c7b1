import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The daemon end to end over HTTPS and plain HTTP/1.1, with curl, openssl and raw sockets, on a
/// daemon in this process. Each test starts its own on port 0 and stops it when done. (What
/// needs the binary, signals, the descriptor limit, systemd's socket, the drain on SIGTERM and
/// the log format, is in Tests/aasadTests/ServeTests.swift.)
@Suite("aasad serve: HTTP/1.1 and HTTPS with real clients")
final class ServeTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    static let paths = ["/.well-known/apple-app-site-association", "/apple-app-site-association"]

    @Test("both AASA paths serve the file byte for byte as application/json, over HTTPS and HTTP", arguments: paths)
    func servesFile(_ path: String) throws {
        for r in [try server.https("a.test", path), try server.http("a.test", path)] {
            #expect(r.status == 200)
            #expect(r.headers["content-type"] == "application/json")
            #expect(r.body == config.aasa)
            #expect(r.headers["content-length"] == "\(config.aasa.count)")
            #expect(r.headers["x-content-type-options"] == "nosniff")
            #expect(r.headers["etag"]?.hasPrefix("\"") == true)
            #expect(r.headers["last-modified"]?.hasSuffix("GMT") == true)
            #expect(r.headers["cache-control"] == "max-age=300")
            #expect(r.headers["date"]?.hasSuffix("GMT") == true)
        }
    }

    @Test("assetlinks.json is served for the site that has one, 404 elsewhere")
    func assetLinks() throws {
        let r = try server.https("a.test", "/.well-known/assetlinks.json")
        #expect(r.status == 200 && r.body == config.assetLinks && r.headers["content-type"] == "application/json")
        #expect(try server.https("x.w.test", "/.well-known/assetlinks.json").status == 404)
    }

    @Test("an alias symlink and a wildcard site serve their files")
    func aliasAndWildcard() throws {
        #expect(try server.https("www.a.test", Self.paths[0]).body == config.aasa)
        #expect(try server.https("x.w.test", Self.paths[0]).body == config.wildcardAASA)
        // A TLS wildcard covers one label; the site's wildcard covers any depth (spec §2, inferred).
        #expect(try server.http("deep.er.w.test", Self.paths[0]).body == config.wildcardAASA)
        #expect(try server.http("w.test", Self.paths[0]).status == 404)  // a wildcard does not cover its suffix
    }

    @Test("HEAD sends the headers without the body")
    func head() throws {
        let reply = String(
            decoding: server.raw(Array("HEAD /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".utf8)),
            as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"))
        #expect(reply.contains("Content-Length: \(config.aasa.count)\r\n"))
        #expect(reply.hasSuffix("\r\n\r\n"), "a body followed the head")
    }

    @Test("the query string is ignored")
    func queryIgnored() throws {
        #expect(try server.https("a.test", Self.paths[0] + "?bust=1&x").body == config.aasa)
    }

    @Test("other methods get 405 with Allow: GET, HEAD", arguments: ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
    func methodNotAllowed(_ method: String) throws {
        let r = try server.https("a.test", Self.paths[0], ["-X", method])
        #expect(r.status == 405)
        #expect(r.headers["allow"] == "GET, HEAD")
    }

    @Test(
        "variants of the path are 404, never a redirect",
        arguments: [
            "/.well-known/apple-app-site-association/", "/.well-known/apple-app-site-association.json",
            "/.WELL-KNOWN/apple-app-site-association",
            "/.well-known%2Fapple-app-site-association", "/.well-known/../.well-known/apple-app-site-association", "/", "/index.html",
            "/x/.well-known/apple-app-site-association",
        ])
    func variantsAre404(_ path: String) throws {
        let r = try server.https("a.test", path)
        #expect(r.status == 404, "\(path)")
        #expect(r.headers["location"] == nil)
    }

    @Test("an unknown host and an invalid site are 404")
    func unknownHost() throws {
        #expect(try server.http("nope.test", Self.paths[0]).status == 404)
        #expect(try server.http("bad.test", Self.paths[0]).status == 404)
    }

    @Test("Host is case-insensitive and its port is ignored")
    func hostNormalised() throws {
        #expect(try server.http("A.TEST:8443", Self.paths[0]).status == 200)
        #expect(try server.http("a.test.", Self.paths[0]).status == 200)
    }

    @Test("a host the certificate of the connection does not cover gets 421")
    func misdirected() throws {
        // SNI a.test (development certificate, which does not cover own.test), Host own.test.
        // More cases, kept connections and rotations: MisdirectedTests.
        let r = try server.https("a.test", Self.paths[0], ["-H", "Host: own.test"])
        #expect(r.status == 421)
        // SNI own.test (a certificate for own.test only), Host a.test.
        let r2 = try server.https("own.test", Self.paths[0], ["-H", "Host: a.test"], cacert: config.ownCA)
        #expect(r2.status == 421)
        // Matching SNI and Host: served with the site's own RSA certificate.
        #expect(try server.https("own.test", Self.paths[0], cacert: config.ownCA).body == config.ownAASA)
    }

    @Test("without SNI the Host header decides")
    func noSNI() throws {
        // An IP address in the URL: curl sends no SNI; the development certificate covers 127.0.0.1.
        let r = try server.curl([
            "--cacert", config.developmentCA, "-H", "Host: own.test", "https://127.0.0.1:\(server.httpsPort)\(Self.paths[0])",
        ])
        #expect(r.status == 200)
        #expect(r.body == config.ownAASA)
    }

    @Test("If-None-Match and If-Modified-Since give 304; a changed tag or older date gives 200")
    func conditional() throws {
        let first = try server.https("a.test", Self.paths[0])
        let etag = try #require(first.headers["etag"])
        let lastModified = try #require(first.headers["last-modified"])
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-None-Match: \(etag)"]).status == 304)
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-None-Match: \"x\", W/\(etag)"]).status == 304)
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-None-Match: *"]).status == 304)
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-None-Match: \"other\""]).status == 200)
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-Modified-Since: \(lastModified)"]).status == 304)
        #expect(try server.https("a.test", Self.paths[0], ["-H", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT"]).status == 200)
        let notModified = try server.https("a.test", Self.paths[0], ["-H", "If-None-Match: \(etag)"])
        #expect(notModified.body.isEmpty && notModified.headers["etag"] == etag)
    }

    @Test("gzip is served when asked, with its own ETag, and decompresses to the file")
    func gzip() throws {
        let large = Array(
            (#"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["#
                + Array(repeating: #"{"/": "/section/*", "comment": "a repeated pattern"}"#, count: 40).joined(separator: ",") + "]}]}}")
                .utf8)
        try config.write("config/sites/z.test/apple-app-site-association", large)
        // The reload SIGHUP asks for.
        #expect(server.reload())
        var r = try server.http("z.test", Self.paths[0], ["-H", "Accept-Encoding: gzip"])
        // The reload is asynchronous to this client, and so is the compression: the first answer
        // to a client that accepts gzip is the file as it is (with Vary), while the background
        // queue compresses it. Poll, bounded.
        _ = try eventually {
            if r.status == 200 && r.headers["content-encoding"] == nil {
                #expect(r.body == large && r.headers["vary"] == "Accept-Encoding")
            }
            if r.headers["content-encoding"] != nil { return true }
            r = try server.http("z.test", Self.paths[0], ["-H", "Accept-Encoding: gzip"])
            return false
        }
        #expect(r.headers["content-encoding"] == "gzip")
        #expect(r.headers["vary"] == "Accept-Encoding")
        #expect(r.headers["etag"]?.hasSuffix("-gz\"") == true)
        let plain = try server.http("z.test", Self.paths[0], ["--compressed"])
        #expect(plain.body == large)
        #expect(try server.http("z.test", Self.paths[0]).headers["content-encoding"] == nil)
    }

    @Test("keep-alive: several requests on one connection")
    func keepAlive() throws {
        let url = "https://a.test:\(server.httpsPort)\(Self.paths[0])"
        let r = try server.curl(["--cacert", config.developmentCA, "--resolve", "a.test:\(server.httpsPort):127.0.0.1", url, url, url])
        #expect(r.status == 200)
        #expect(r.connects == 0 || r.connects == 1)
    }

    @Test("pipelined requests are answered in order on one connection")
    func pipelining() throws {
        let request = "GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\n\r\n"
        let last = "HEAD /nope HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        let reply = String(decoding: server.raw(Array((request + request + last).utf8)), as: UTF8.self)
        // Bodies do not end in CRLF: find each status line wherever it starts.
        let statuses = reply.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses == ["200", "200", "404"])
        #expect(reply.hasSuffix("\r\n\r\n"), "the HEAD response has no body")
        #expect(reply.contains("Connection: close"))
    }

    @Test(
        "TLS input split across reads loses no byte: a record split inside its header, pipelined requests split mid-request, ten records in one write",
        arguments: ["record", "request", "records"])
    func splitTLSInput(_ mode: String) throws {
        // Fixtures/tls-split.py runs TLS over memory BIOs to choose each TCP segment's bytes: an
        // idle connection's buffers may be released, but never while they hold part of a record
        // or of a request.
        let script = TestConfig.fixtures.appendingPathComponent("tls-split.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", mode])
        #expect(out.status == 0, "\(out.stderr)")
        let expected = ["record": 2, "request": 3, "records": 10][mode] ?? 0
        #expect(out.text == Array(repeating: "200", count: expected).joined(separator: " ") + "\n")
    }

    @Test("records TLS read ahead while the server waited to write are answered once it reads again")
    func readAheadDuringBackPressure() throws {
        // A 74 KB file: one response passes a round's output bound, so answering 40 pipelined
        // requests of one record runs out of rounds and waits for the socket, while the next four
        // records are already in TLS's buffer and the socket is empty (epoll reports nothing).
        let config = try TestConfig()
        try config.write("config/sites/big.test/apple-app-site-association", Self.largeFile)
        let server = try TestDaemon(config: config)
        #expect(try server.http("big.test", "/apple-app-site-association").status == 200)
        let script = TestConfig.fixtures.appendingPathComponent("tls-split.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "big.test", "backlog"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.text == Array(repeating: "200", count: 200).joined(separator: " ") + "\n")
    }

    @Test("a client that keeps sending after a closing response gets the whole response, not a reset")
    func lingeringCloseUnderInput() throws {
        // The server answers, then drains what follows until the client stops or the linger
        // timeout; a drain that gave up after a few reads closed over unread input, and the reset
        // dropped the part of the 74 KB response still in the server's send buffer.
        let config = try TestConfig()
        try config.write("config/sites/big.test/apple-app-site-association", Self.largeFile)
        let server = try TestDaemon(config: config)
        let script = TestConfig.fixtures.appendingPathComponent("linger-flood.py").path
        let out = try Tool.run("python3", [script, "\(server.httpPort)", "big.test"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.text == "HTTP/1.1 200 OK\nwhole\neof\n")
    }

    /// A valid AASA file of about 74 KB: one response passes a round's output bound (64 KB).
    static let largeFile: [UInt8] = {
        let components = (0..<3000).map { #"{"/": "/section/\#($0)/*"}"# }.joined(separator: ",")
        return Array(#"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.big"], "components": [\#(components)]}]}}"#.utf8)
    }()

    @Test("HTTP/1.0 is answered and the connection closed")
    func http10() throws {
        let reply = String(
            decoding: server.raw(Array("GET /apple-app-site-association HTTP/1.0\r\nHost: a.test\r\n\r\n".utf8)), as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 200 OK"))
        #expect(reply.contains("Connection: close"))
        #expect(reply.hasSuffix(String(decoding: config.aasa, as: UTF8.self)))
    }

    @Test(
        "bad requests get their status and the connection is closed",
        arguments: [
            ("GET /" + String(repeating: "a", count: 9000) + " HTTP/1.1\r\nHost: a.test\r\n\r\n", "414"),
            ("GET / HTTP/1.1\r\nHost: a.test\r\nX: " + String(repeating: "v", count: 17000) + "\r\n\r\n", "431"),
            ("GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nbody", "413"),
            ("GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "413"),
            ("\u{1}\u{2}garbage\r\n\r\n", "400"),
            ("GET / HTTP/1.1\r\n\r\n", "400"),
            ("GET / HTTP/3.0\r\nHost: a.test\r\n\r\n", "505"),
        ])
    func badRequests(_ request: String, _ status: String) throws {
        let reply = String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
        #expect(reply.hasPrefix("HTTP/1.1 \(status) "), "\(reply.prefix(80))")
        #expect(reply.contains("Connection: close"))
    }

    @Test("TLS 1.2 and 1.3 are accepted; TLS 1.1 and 1.0 are refused even when the client allows them")
    func tlsVersions() throws {
        for version in ["-tls1_2", "-tls1_3"] {
            let out = try Tool.run(
                "openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", version, "-CAfile",
                    config.developmentCA,
                ],
                input: [])
            #expect(out.text.contains("Verify return code: 0 (ok)"), "\(version): \(out.stderr)")
        }
        for version in ["-tls1_1", "-tls1"] {
            let out = try Tool.run(
                "openssl",
                [
                    "s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", version, "-cipher",
                    "DEFAULT:@SECLEVEL=0",
                ],
                input: [])
            // s_client prints a session block even after a failed handshake: the cipher tells.
            #expect(out.text.contains("Cipher is (NONE)") || out.text.contains("Cipher    : 0000"), "\(version) was accepted: \(out.text)")
        }
    }

    @Test("TLS 1.2 and 1.3: the server's order gives an AES-256-first client AES-128; a ChaCha20-first client keeps it")
    func cipherOrder() throws {
        func cipher(_ version: String, _ option: String, _ offer: String) throws -> String {
            let out = try Tool.run(
                "openssl",
                ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", version, option, offer], input: [])
            return out.text.split(separator: "\n").first { $0.contains("Cipher is ") }.map(String.init) ?? out.text
        }
        #expect(
            try cipher("-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256").hasSuffix(
                "ECDHE-ECDSA-AES128-GCM-SHA256"))
        #expect(
            try cipher("-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256").hasSuffix(
                "ECDHE-ECDSA-CHACHA20-POLY1305"))
        let all = "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"
        #expect(try cipher("-tls1_3", "-ciphersuites", all).hasSuffix("TLS_AES_128_GCM_SHA256"))
        #expect(
            try cipher("-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256").hasSuffix(
                "TLS_CHACHA20_POLY1305_SHA256"))
        #expect(try cipher("-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384").hasSuffix("TLS_AES_256_GCM_SHA384"))
    }

    @Test("ALPN offers http/1.1")
    func alpn() throws {
        let out = try Tool.run(
            "openssl", ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", "-alpn", "http/1.1"], input: [])
        #expect(out.text.contains("ALPN protocol: http/1.1"))
    }

    @Test("sessions resume from a ticket, over TLS 1.2 and TLS 1.3", arguments: ["-tls1_2", "-tls1_3"])
    func resumption(_ version: String) throws {
        let session = config.path("session-\(version)")
        let request = Array("GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".utf8)
        let base = ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", version, "-ign_eof"]
        let first = try Tool.run("openssl", base + ["-sess_out", session], input: request)
        #expect(first.text.contains("New, TLSv1."), "\(first.stderr)")
        let second = try Tool.run("openssl", base + ["-sess_in", session], input: request)
        #expect(second.text.contains("Reused, TLSv1."), "the session was not resumed: \(second.text.prefix(400))")
        #expect(second.text.contains("HTTP/1.1 200 OK"))
    }

    @Test("an unknown SNI name gets the default certificate and then 404")
    func unknownSNI() throws {
        let r = try server.curl([
            "-k", "--resolve", "nope.test:\(server.httpsPort):127.0.0.1", "https://nope.test:\(server.httpsPort)\(Self.paths[0])",
        ])
        #expect(r.status == 404)
    }

    @Test("an ECDSA (development) and an RSA (own.test) certificate are both presented by SNI")
    func certificateKinds() throws {
        let dev = try Tool.run("openssl", ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test"], input: [])
        #expect(dev.text.contains("Server public key is 256 bit"))
        let own = try Tool.run("openssl", ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "own.test"], input: [])
        #expect(own.text.contains("Server public key is 2048 bit"))
    }

    @Test("the development certificate prints a curl line that works")
    func developmentCurlLine() throws {
        let line = try #require(server.outputLines.first { $0.contains("curl --cacert") })
        #expect(line.contains(config.developmentCA))
        #expect(FileManager.default.fileExists(atPath: config.developmentCA))
    }

}

/// Timeouts, with a server whose limits are one second so the test takes seconds, not minutes.
@Suite("aasad serve: timeouts")
final class TimeoutTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config, flags: ["--request-timeout", "1", "--idle-timeout", "1", "--handshake-timeout", "1"])
    }

    @Test("a request head that never completes is dropped after the request timeout (slowloris)")
    func requestTimeout() {
        let started = Date()
        let reply = server.raw(Array("GET /apple-app-site-association HTTP/1.1\r\nHost: a.te".utf8), timeout: 8)
        #expect(reply.isEmpty)
        #expect(Date().timeIntervalSince(started) < 7, "the connection was not closed by the server")
    }

    @Test("an idle keep-alive connection is closed after the idle timeout")
    func idleTimeout() {
        let started = Date()
        let reply = server.raw(Array("GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8), timeout: 8)
        #expect(String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK"))
        #expect(Date().timeIntervalSince(started) < 7, "the idle connection was not closed by the server")
    }

    @Test("a TLS client that never sends a ClientHello is dropped after the handshake timeout")
    func handshakeTimeout() {
        let started = Date()
        let reply = server.raw([], timeout: 8, port: server.httpsPort)
        #expect(reply.isEmpty)
        #expect(Date().timeIntervalSince(started) < 7)
    }
}

@Suite("aasad serve: a partial TLS record is a request begun")
final class PartialRecordTests {
    let config: TestConfig
    let server: TestDaemon

    init() throws {
        config = try TestConfig()
        // The idle timeout far beyond the client's 10 s wait: only the request timeout can close.
        server = try TestDaemon(config: config, flags: ["--request-timeout", "1", "--idle-timeout", "60"])
    }

    @Test("one byte of a TLS record on a kept-alive connection gets the request timeout, not the idle one")
    func partialRecord() throws {
        // OpenSSL keeps a read buffer (about 16 KB) while it holds part of a record: a client
        // sending one byte per connection must not pin it for the idle timeout.
        let script = TestConfig.fixtures.appendingPathComponent("tls-split.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)", "a.test", "stall"])
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.text == "200\nclosed\n")
    }
}

@Suite("aasad serve: admin listener")
final class AdminTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("/healthz and /readyz answer; unknown paths are 404; the admin port serves no sites")
    func health() throws {
        let server = try TestDaemon(config: config)
        #expect(try server.admin("/healthz").status == 200)
        let ready = try server.admin("/readyz")
        #expect(ready.status == 200 && String(decoding: ready.body, as: UTF8.self) == "ready\n")
        #expect(try server.admin("/nope").status == 404)
        #expect(
            try server.curl(["http://127.0.0.1:\(server.adminPort)/.well-known/apple-app-site-association"]).status == 404)
        // A site's name is not the admin listener's (docs/threat-model.md, DNS rebinding).
        #expect(
            try server.curl(["-H", "Host: a.test", "http://127.0.0.1:\(server.adminPort)/.well-known/apple-app-site-association"]).status
                == 421)
        #expect(try server.curl(["-X", "POST", "http://127.0.0.1:\(server.adminPort)/healthz"]).status == 405)
    }

    @Test("/sites shows each site's state, and serving-last-good while a file is broken")
    func sites() throws {
        let server = try TestDaemon(config: config)
        func state(_ directory: String) throws -> String? {
            let json = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
            let sites = json?["sites"] as? [[String: Any]] ?? []
            return sites.first { $0["directory"] as? String == directory }?["state"] as? String
        }
        #expect(try state("a.test") == "serving")
        #expect(try state("bad.test") == "refused")
        try config.write("config/sites/a.test/apple-app-site-association", Array("{".utf8))
        #expect(try eventually { try state("a.test") == "serving-last-good" })
        #expect(try server.http("a.test", "/apple-app-site-association").body == config.aasa)
    }

    @Test("/sites shows when Apple's CDN (AASA-Bot) last fetched each site")
    func appleFetches() throws {
        let server = try TestDaemon(config: config)
        func lastFetch(_ directory: String) throws -> Any? {
            let json = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
            let site = (json?["sites"] as? [[String: Any]] ?? []).first { $0["directory"] as? String == directory }
            return site?["lastAppleFetch"]
        }
        #expect(try lastFetch("a.test") is NSNull)
        let before = Int(Date().timeIntervalSince1970)
        #expect(try server.https("a.test", "/.well-known/apple-app-site-association", ["--http2", "-A", "AASA-Bot/1.0.0"]).status == 200)
        #expect(try server.http("own.test", "/apple-app-site-association", ["-A", "Mozilla/5.0"]).status == 200)
        let seen = try #require(try lastFetch("a.test") as? Int)
        #expect(seen >= before && seen <= before + 5)
        #expect(try lastFetch("own.test") is NSNull)
    }

}
