import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Settings that shape what a daemon in-process serves: the TLS floor and the connection limit.
/// Where each setting comes from (file, variable, flag) is the binary's (Tests/aasadTests/SettingsTests.swift).
@Suite("aasad serve: settings in force while serving")
final class SettingsServeTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("tls.min-version 1.3 refuses TLS 1.2 clients and serves TLS 1.3 ones")
    func tlsMinimumVersion() throws {
        try config.write("config/aasad.yaml", Array("tls:\n  min-version: \"1.3\"\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try server.https("a.test", "/apple-app-site-association", ["--tlsv1.3"]).status == 200)
        #expect(throws: (any Error).self) { try server.https("a.test", "/apple-app-site-association", ["--tls-max", "1.2"]) }
    }

    @Test("limits.max-connections: at the limit a worker stops accepting until a connection closes")
    func maxConnections() throws {
        let server = try TestDaemon(config: config, flags: ["--threads", "1", "--max-connections", "2"])
        let held = (0..<2).compactMap { _ in Loopback.connect(port: server.httpPort) }
        #expect(held.count == 2)
        // Both taken in: the worker is at its limit.
        let open = try Metrics.wait(server) { $0["aasad_connections_open", ["listener": "http"]] >= 2 }
        #expect(open["aasad_connections_open", ["listener": "http"]] == 2)
        // The third connection completes in the kernel's backlog but is not served while two are open.
        let waiting = try #require(Loopback.connect(port: server.httpPort))
        defer { close(waiting) }
        Loopback.send(waiting, Array("GET /apple-app-site-association HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".utf8))
        Loopback.setReceiveTimeout(waiting, seconds: 1)
        var buffer = [UInt8](repeating: 0, count: 65536)
        #expect(recv(waiting, &buffer, buffer.count, 0) < 0, "served beyond the limit")
        close(held[0])
        Loopback.setReceiveTimeout(waiting, seconds: 5)
        let n = recv(waiting, &buffer, buffer.count, 0)
        #expect(n > 0 && String(decoding: buffer[0..<max(0, n)], as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        close(held[1])
    }
}

/// The access log's text format, from a daemon in-process; JSON and the reopening on SIGHUP are
/// the binary's (Tests/aasadTests/SettingsTests.swift).
@Suite("aasad serve: access log in-process")
final class AccessLogServeTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("one vhost_combined line per request, over HTTP/1.1 and HTTP/2, client bytes escaped")
    func text() throws {
        let path = config.path("access.log")
        let server = try TestDaemon(config: config, flags: ["--access-log", path])
        #expect(try server.http("a.test", "/apple-app-site-association", ["-A", "AASA-Bot/1.0"]).status == 200)
        #expect(try server.https("www.a.test", "/.well-known/assetlinks.json", ["--http2", "-I"]).status == 200)
        let odd = "GET /x?y=1 HTTP/1.1\r\nHost: a.test\r\nUser-Agent: quote\"back\\slash \u{e9}\r\nConnection: close\r\n\r\n"
        #expect(String(decoding: server.raw(Array(odd.utf8)), as: UTF8.self).hasPrefix("HTTP/1.1 404"))
        _ = try server.admin("/healthz")
        let log = fileLines(path, atLeast: 3)
        #expect(log.count == 3, "\(log)")
        guard log.count == 3 else { return }
        let stamp = #"\[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} \+0000\]"#
        #expect(
            log[0].wholeMatch(
                of: try Regex(
                    #"a\.test 127\.0\.0\.1 - - "# + stamp
                        + #" "GET /apple-app-site-association HTTP/1\.1" 200 \#(config.aasa.count) "-" "AASA-Bot/1\.0""#))
                != nil, "\(log[0])")
        #expect(log[1].hasPrefix("www.a.test 127.0.0.1 - - ["), "\(log[1])")
        #expect(log[1].contains(#""HEAD /.well-known/assetlinks.json HTTP/2.0" 200 0 "-" "curl/"#), "\(log[1])")
        #expect(log[2].hasSuffix(#""GET /x?y=1 HTTP/1.1" 404 14 "-" "quote\x22back\x5cslash \xc3\xa9""#), "\(log[2])")
    }
}
