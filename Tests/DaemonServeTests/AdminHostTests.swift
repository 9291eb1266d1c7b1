import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The admin listener answers only Host values that are loopback names, IP literals or names in
/// `admin-hosts` (docs/threat-model.md, DNS rebinding): real curl over loopback to a daemon in
/// this process, every page.
@Suite("aasad serve: the admin listener refuses names that are not its own with 421")
final class AdminHostTests {
    let config: TestConfig
    static let pages = ["/sites", "/metrics", "/healthz", "/readyz"]

    init() throws {
        config = try TestConfig()
        try config.write("config/aasad.yaml", Array("admin-hosts: [Metrics.Example.NET]\n".utf8))
    }

    func status(_ server: TestDaemon, _ path: String, _ options: [String]) throws -> Int {
        try server.curl(options + ["http://127.0.0.1:\(server.adminPort)\(path)"]).status
    }

    @Test("a rebinding name gets 421 on every page; loopback names, IP literals, a configured name and no Host get 200")
    func hostRule() throws {
        let server = try TestDaemon(config: config)
        let port = server.adminPort
        let refused = [
            "evil.example", "evil.example:\(port)", "a.test", "localhost.evil.example", "127.0.0.1.evil.example", "evil.localhost.example",
            "metrics.example.net.evil.example", "x.metrics.example.net", "127.1", "2130706433", "0x7f.0.0.1", "127.000.0.1",
            "127.0.0.1:99999", "127.0.0.1:", "[::1]:", "localhost..", "-",
        ]
        for page in Self.pages {
            for host in refused {
                #expect(try status(server, page, ["-H", "Host: \(host)"]) == 421, "\(page) Host: \(host)")
            }
        }
        let admitted = [
            "127.0.0.1:\(port)", "127.0.0.1", "localhost", "LocalHost:\(port)", "localhost.", "grafana.localhost", "[::1]:\(port)", "[::1]",
            "10.1.2.3:9190", "[2001:db8::7]:9190", "metrics.example.net", "METRICS.example.net.:\(port)",
        ]
        for page in Self.pages {
            // curl's own Host: 127.0.0.1:port, as a probe or `curl 127.0.0.1:9190/...` sends.
            #expect(try status(server, page, []) == 200, "\(page)")
            for host in admitted {
                #expect(try status(server, page, ["-H", "Host: \(host)"]) == 200, "\(page) Host: \(host)")
            }
            // HTTP/1.0 without Host: no browser sends that, so no rebinding.
            #expect(try status(server, page, ["-0", "-H", "Host:"]) == 200, "\(page) HTTP/1.0 without Host")
        }
        // What the HTTP/1.1 parser already refuses as a malformed Host never reaches the rule.
        #expect(try status(server, "/sites", ["-H", "Host: [::1]x"]) == 400)
        // An absolute-form target's authority is the Host (RFC 9112 §3.2.2), whatever the field says.
        let absolute = server.raw(
            Array("GET http://evil.example/sites HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8), port: port)
        #expect(String(decoding: absolute.prefix(12), as: UTF8.self) == "HTTP/1.1 421")
        // The refusal says nothing of the page: its body is the generic one.
        let body = try server.curl(["-H", "Host: evil.example", "http://127.0.0.1:\(port)/sites"]).body
        #expect(!String(decoding: body, as: UTF8.self).contains("a.test"))

        // admin-hosts changes while serving.
        try config.write("config/aasad.yaml", Array("admin-hosts: [prometheus.monitoring.svc]\n".utf8))
        #expect(server.waitForLog("admin-hosts"), "\(server.log())")
        #expect(try status(server, "/metrics", ["-H", "Host: prometheus.monitoring.svc:\(port)"]) == 200)
        #expect(try status(server, "/metrics", ["-H", "Host: metrics.example.net"]) == 421)
        #expect(server.stop())
    }
}
