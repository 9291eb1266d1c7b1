import DaemonTesting
import Foundation
import TestSupport
import Testing

/// HTTP/2 on a daemon in this process: the same serving rules as HTTP/1.1 through ALPN h2, with
/// nghttp2's own clients. (The abuse protections, which measure the server process's memory, are
/// in Tests/aasadTests/HTTP2Tests.swift.)
@Suite("aasad serve: HTTP/2")
final class HTTP2Tests {
    let config: TestConfig
    let server: TestDaemon
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        config = try TestConfig()
        server = try TestDaemon(config: config)
    }

    @Test("the serving rules hold over HTTP/1.1 and HTTP/2 alike", arguments: [("--http1.1", "1.1"), ("--http2", "2")])
    func sameRules(_ flag: String, _ version: String) throws {
        let ok = try server.https("a.test", Self.path, [flag])
        #expect(ok.version == version)
        #expect(ok.status == 200 && ok.body == config.aasa && ok.headers["content-type"] == "application/json")
        #expect(ok.headers["etag"] != nil && ok.headers["last-modified"] != nil && ok.headers["date"] != nil)
        #expect(ok.headers["connection"] == nil || version == "1.1")
        #expect(try server.https("a.test", "/apple-app-site-association?x=1", [flag]).body == config.aasa)
        #expect(try server.https("a.test", "/.well-known/assetlinks.json", [flag]).body == config.assetLinks)
        let post = try server.https("a.test", Self.path, [flag, "-X", "POST"])
        #expect(post.status == 405 && post.headers["allow"] == "GET, HEAD")
        #expect(try server.https("a.test", Self.path + "/", [flag]).status == 404)
        #expect(try server.https("a.test", Self.path, [flag, "-H", "Host: nope.test"]).status == 404)
        #expect(try server.https("a.test", Self.path, [flag, "-H", "Host: own.test"]).status == 421)
        let etag = try #require(ok.headers["etag"])
        #expect(try server.https("a.test", Self.path, [flag, "-H", "If-None-Match: \(etag)"]).status == 304)
        let lastModified = try #require(ok.headers["last-modified"])
        #expect(try server.https("a.test", Self.path, [flag, "-H", "If-Modified-Since: \(lastModified)"]).status == 304)
    }

    @Test("HEAD over HTTP/2 sends the headers and no body")
    func head() throws {
        let out = try Tool.run(
            "curl",
            [
                "-sS", "--http2", "--head", "--cacert", config.developmentCA, "--resolve", "a.test:\(server.httpsPort):127.0.0.1",
                "https://a.test:\(server.httpsPort)\(Self.path)", "-w", "%{size_download}",
            ])
        #expect(out.text.hasPrefix("HTTP/2 200"))
        #expect(out.text.contains("content-length: \(config.aasa.count)"))
        #expect(out.text.hasSuffix("\r\n0"), "a body was downloaded")
    }

    @Test("nghttp fetches several streams on one connection")
    func nghttp() throws {
        let url = "https://127.0.0.1:\(server.httpsPort)\(Self.path)"
        // Distinct URLs: nghttp fetches a repeated one once.
        let out = try Tool.run("nghttp", ["-n", "-v", "-H", ":authority: a.test", url, url + "?b", url + "?c", url + "?d"])
        #expect(out.text.components(separatedBy: ":status: 200").count - 1 == 4, "\(out.text.suffix(500))")
        #expect(out.status == 0)
    }

    @Test("a connection idle between streams (its tables released) answers each new stream on it")
    func idleBetweenStreams() throws {
        // Fixtures/h2kept.py sends one request at a time and waits for its answer, so the server
        // sees the connection go idle (no stream open, all output written) before each next one.
        let kept = try KeptConnection(port: server.httpsPort, serverName: "a.test")
        for path in [Self.path, "/apple-app-site-association", Self.path + "?again"] {
            #expect(kept.status("a.test", path) == "200", "\(path)")
        }
    }

    @Test("h2load drives many concurrent streams without an error")
    func h2load() throws {
        let out = try Tool.run(
            "h2load",
            ["-n", "5000", "-c", "10", "-m", "10", "-H", ":authority: a.test", "https://127.0.0.1:\(server.httpsPort)\(Self.path)"])
        #expect(out.text.contains("5000 succeeded, 0 failed, 0 errored, 0 timeout"), "\(out.text)")
        #expect(out.text.contains("status codes: 5000 2xx"))
    }

    @Test("many large responses on one connection all arrive (output beyond the high-water mark)")
    func largeResponses() throws {
        let big = Array(
            (#"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["#
                + (0..<700).map { #"{"/": "/p\#($0)/*"}"# }.joined(separator: ",") + "]}]}}").utf8)
        try config.write("config/sites/big.test/apple-app-site-association", big)
        #expect(eventually { (try? server.http("big.test", Self.path).status) == 200 })
        let out = try Tool.run(
            "h2load",
            ["-n", "400", "-c", "2", "-m", "100", "-H", ":authority: big.test", "https://127.0.0.1:\(server.httpsPort)\(Self.path)"])
        #expect(big.count > 10_000)
        #expect(out.text.contains("400 succeeded, 0 failed, 0 errored, 0 timeout"), "\(out.text)")
    }

}
