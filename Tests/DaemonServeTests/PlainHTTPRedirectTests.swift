import DaemonTesting
import Foundation
import TestSupport
import Testing

/// `listen.http-redirect`: a daemon in-process, with real curl and raw sockets on the plain
/// listener. TestConfig serves `a.test` (and its alias `www.a.test`) and `*.w.test`.
@Suite("aasad serve: plain HTTP redirects to HTTPS")
final class PlainHTTPRedirectTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    /// The response head of a raw request on the plain listener, split into lines.
    private func rawHead(_ server: TestDaemon, _ request: [UInt8]) -> [String] {
        let reply = String(decoding: server.raw(request), as: UTF8.self)
        return reply.components(separatedBy: "\r\n\r\n").first?.components(separatedBy: "\r\n") ?? []
    }

    private func rawHead(_ server: TestDaemon, _ request: String) -> [String] { rawHead(server, Array(request.utf8)) }

    private func location(_ head: [String]) -> String? {
        head.first { $0.lowercased().hasPrefix("location: ") }.map { String($0.dropFirst("location: ".count)) }
    }

    @Test("curl gets 301 to the same path and query over HTTPS on the bound HTTPS port; following it lands on the file")
    func redirects() throws {
        let server = try TestDaemon(config: config, flags: ["--http-redirect"])
        let base = "https://a.test:\(server.httpsPort)"
        for (host, path, expected) in [
            ("a.test", "/buy/42?src=mail&x=%20y", base + "/buy/42?src=mail&x=%20y"),
            ("a.test:8080", "/", base + "/"),
            ("WWW.A.TEST.", "/p?", "https://www.a.test:\(server.httpsPort)/p?"),
            (
                "x.w.test", "/.well-known/apple-app-site-association",
                "https://x.w.test:\(server.httpsPort)/.well-known/apple-app-site-association"
            ),
            ("a.test", "/.well-known/assetlinks.json", base + "/.well-known/assetlinks.json"),
        ] {
            let r = try server.http(host, path)
            #expect(r.status == 301, "\(host) \(path)")
            #expect(r.headers["location"] == expected, "\(host) \(path)")
            #expect(r.headers["content-length"] == "0" && r.body.isEmpty)
            #expect(r.headers["cache-control"] == "max-age=3600")
            #expect(r.headers["connection"] == "close")
        }
        #expect(try server.http("a.test", "/x", ["-I"]).status == 301)
        #expect(try server.http("a.test", "/x", ["-X", "POST"]).status == 308)
        #expect(try server.http("a.test", "/x", ["-X", "DELETE"]).headers["location"] == base + "/x")
        // curl follows it to HTTPS and gets the AASA file there.
        let followed = try server.curl([
            "-L", "--cacert", config.developmentCA, "--resolve", "a.test:\(server.httpPort):127.0.0.1", "--resolve",
            "a.test:\(server.httpsPort):127.0.0.1", "http://a.test:\(server.httpPort)/.well-known/apple-app-site-association",
        ])
        #expect(followed.status == 200 && followed.body == config.aasa)
        #expect(followed.connects == 2)
        // HTTPS itself is unchanged.
        let https = try server.https("a.test", "/.well-known/apple-app-site-association")
        #expect(https.status == 200 && https.headers["location"] == nil)
    }

    @Test("hostile paths never change the host in Location and never split the head")
    func hostilePaths() throws {
        let server = try TestDaemon(config: config, flags: ["--http-redirect"])
        let base = "https://a.test:\(server.httpsPort)"
        for (target, expected) in [
            ("//evil.example/x", base + "//evil.example/x"),
            ("/\\evil.example", base + "/%5Cevil.example"),
            ("/%0d%0aSet-Cookie:x", base + "/%0d%0aSet-Cookie:x"),
            ("/x?q#frag", base + "/x?q%23frag"),
            ("/\"<>{|}^`", base + "/%22%3C%3E%7B%7C%7D%5E%60"),
            ("/x?next=//evil.example", base + "/x?next=//evil.example"),
        ] {
            let head = rawHead(server, "GET \(target) HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
            #expect(head.first == "HTTP/1.1 301 Moved Permanently", "\(target): \(head)")
            #expect(location(head) == expected, "\(target): \(head)")
            #expect(URLComponents(string: location(head) ?? "")?.host == "a.test", "\(target)")
            #expect(!head.contains { $0.lowercased().hasPrefix("set-cookie") }, "\(target): \(head)")
        }
        // Raw bytes the parser does not take in a target (controls, 0x80 and above) and a
        // fragment in the path: 400, no Location.
        for bad in [[0x80], [0xC3, 0xA9], [0xFF], [0x0D, 0x0A], [0x7F]] as [[UInt8]] {
            let request = Array("GET /caf".utf8) + bad + Array(" HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n".utf8)
            let head = rawHead(server, request)
            #expect(head.first?.hasPrefix("HTTP/1.1 400") == true, "\(bad): \(head)")
            #expect(location(head) == nil)
        }
        let fragment = rawHead(server, "GET /a#b HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        #expect(fragment.first?.hasPrefix("HTTP/1.1 400") == true && location(fragment) == nil, "\(fragment)")
    }

    @Test("unknown, missing, malformed and IP-literal hosts get 404 or 400, never a Location")
    func hosts() throws {
        let server = try TestDaemon(config: config, flags: ["--http-redirect"])
        for (request, status) in [
            ("GET /x HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", "404"),
            ("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", "404"),
            ("GET /x HTTP/1.1\r\nHost: [::1]:80\r\nConnection: close\r\n\r\n", "404"),
            ("GET /x HTTP/1.1\r\nHost: w.test\r\nConnection: close\r\n\r\n", "404"),
            ("GET /x HTTP/1.1\r\nHost: x_y.w.test\r\nConnection: close\r\n\r\n", "404"),
            ("GET /x HTTP/1.0\r\n\r\n", "404"),
            ("GET /x HTTP/1.1\r\nConnection: close\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: evil.example/x.w.test\r\nConnection: close\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: evil.example@x.w.test\r\nConnection: close\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: a.test\r\nHost: evil.example\r\nConnection: close\r\n\r\n", "400"),
            ("GET http://evil.example@a.test/x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", "400"),
        ] {
            let head = rawHead(server, request)
            #expect(head.first?.hasPrefix("HTTP/1.1 \(status)") == true, "\(request.debugDescription): \(head)")
            #expect(location(head) == nil, "\(request.debugDescription): \(head)")
        }
    }

    @Test("an absolute-form target's authority is the host (RFC 9112 §3.2.2), whatever Host says")
    func absoluteForm() throws {
        let server = try TestDaemon(config: config, flags: ["--http-redirect"])
        let base = "https://a.test:\(server.httpsPort)"
        for (target, expected) in [
            ("http://a.test/x?y=1", base + "/x?y=1"), ("http://A.test:8080/x", base + "/x"), ("http://a.test", base + "/"),
            ("http://a.test?q", base + "/?q"), ("HTTPS://a.test//evil.example", base + "//evil.example"),
        ] {
            let head = rawHead(server, "GET \(target) HTTP/1.1\r\nHost: www.a.test\r\nConnection: close\r\n\r\n")
            #expect(head.first == "HTTP/1.1 301 Moved Permanently", "\(target): \(head)")
            #expect(location(head) == expected, "\(target): \(head)")
        }
        let unknown = rawHead(server, "GET http://evil.example/x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        #expect(unknown.first?.hasPrefix("HTTP/1.1 404") == true && location(unknown) == nil, "\(unknown)")
    }

    @Test("https-port from the file, a variable or the flag is the port written; 443 is left out")
    func httpsPort() throws {
        try config.write("config/aasad.yaml", Array("listen:\n  http-redirect: true\n  https-port: 8443\n".utf8))
        let file = try TestDaemon(config: config)
        #expect(try file.http("a.test", "/x").headers["location"] == "https://a.test:8443/x")
        let variable = try TestDaemon(config: config, environment: ["AASAD_LISTEN_HTTPS_PORT": "443"])
        #expect(try variable.http("a.test:80", "/x?y").headers["location"] == "https://a.test/x?y")
        let flag = try TestDaemon(config: config, flags: ["--https-port", "9443"], environment: ["AASAD_LISTEN_HTTPS_PORT": "443"])
        #expect(try flag.http("a.test", "/").headers["location"] == "https://a.test:9443/")
        // --no-http-redirect overrides the file: plain HTTP serves the file again.
        let off = try TestDaemon(config: config, flags: ["--no-http-redirect"])
        let served = try off.http("a.test", "/.well-known/apple-app-site-association")
        #expect(served.status == 200 && served.body == config.aasa && served.headers["location"] == nil)
    }

    @Test("by default plain HTTP serves the files and 404s other paths, with no Location")
    func offByDefault() throws {
        let server = try TestDaemon(config: config)
        let served = try server.http("a.test", "/.well-known/apple-app-site-association")
        #expect(served.status == 200 && served.body == config.aasa && served.headers["location"] == nil)
        let other = try server.http("a.test", "/buy/42")
        #expect(other.status == 404 && other.headers["location"] == nil)
    }

    @Test("redirects are counted (3xx, configured, by path) and access-logged like any request")
    func countedAndLogged() throws {
        let path = config.path("access.log")
        let server = try TestDaemon(config: config, flags: ["--http-redirect", "--access-log", path])
        #expect(try server.http("a.test", "/.well-known/apple-app-site-association").status == 301)
        #expect(try server.http("a.test", "/buy/42?src=mail").status == 301)
        #expect(try server.http("evil.example", "/buy/42").status == 404)
        let metrics = try Metrics.wait(server) {
            $0["aasad_requests_total", ["protocol": "1.1", "site": "configured", "path": "other", "status": "3xx"]] == 1
        }
        #expect(metrics["aasad_requests_total", ["protocol": "1.1", "site": "configured", "path": "other", "status": "3xx"]] == 1)
        #expect(
            metrics[
                "aasad_requests_total",
                ["protocol": "1.1", "site": "configured", "path": "/.well-known/apple-app-site-association", "status": "3xx"]]
                == 1)
        #expect(metrics["aasad_requests_total", ["protocol": "1.1", "site": "unknown", "path": "other", "status": "4xx"]] == 1)
        #expect(
            eventually {
                let log = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
                return log.contains("\"GET /buy/42?src=mail HTTP/1.1\" 301 0") && log.contains("\"GET /buy/42 HTTP/1.1\" 404")
            })
    }
}
