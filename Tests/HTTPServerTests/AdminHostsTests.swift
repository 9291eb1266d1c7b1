import Testing

@testable import HTTPServer

/// The admin listener's Host rule, one case a line (as nginx-tests' `http_host.t`): loopback
/// names, IP literals and configured names in; anything a rebinding page could send out.
@Suite("admin Host rule")
struct AdminHostsTests {
    static let hosts = AdminHosts(["metrics.example.net"])

    static let cases: [(host: String?, admitted: Bool)] = [
        (nil, true),
        ("localhost", true), ("LOCALHOST", true), ("localhost.", true), ("localhost:9190", true), ("localhost:65535", true),
        ("localhost:0", true), ("a.b.localhost", true), ("x_y.localhost:1", true),
        ("127.0.0.1", true), ("127.0.0.1:9190", true), ("10.0.0.7:9190", true), ("0.0.0.0", true), ("255.255.255.255", true),
        ("[::1]", true), ("[::1]:9190", true), ("[2001:db8::1]:80", true), ("[::ffff:127.0.0.1]", true), ("[FE80::1]", true),
        ("metrics.example.net", true), ("Metrics.Example.Net.:9190", true),
        ("", false), (":9190", false), ("evil.example", false), ("evil.example:9190", false), ("localhost.evil.example", false),
        ("evillocalhost", false), ("localhost..", false), (".localhost", false), ("a..localhost", false), ("localhost:", false),
        ("localhost:65536", false), ("localhost:99999", false), ("localhost:000009", false), ("localhost:-1", false),
        ("localhost:1:2", false), ("localhost:9190x", false), ("local host", false), ("localhost\u{0}", false),
        ("localhost\r\nX: y", false), ("xn--lcalhost-ofa", false), ("lоcalhost", false),
        ("127.1", false), ("127.0.1", false), ("2130706433", false), ("0x7f.0.0.1", false), ("127.000.0.1", false),
        ("0127.0.0.1", false), ("256.0.0.1", false), ("127.0.0.1.", false), ("1.2.3.4.5", false), ("127.0.0.1.evil.example", false),
        ("[::1", false), ("::1", false), ("[]", false), ("[::1]x", false), ("[::1]:", false), ("[::1]:65536", false),
        ("[::1%25lo]", false), ("[::1\u{0}]", false), ("[127.0.0.1]", false), ("[::1]]", false), ("[[::1]]", false),
        ("[v1.x]", false), ("[::1]:80:80", false),
        ("localhost:+80", false), ("[::1]:+80", false), ("127.0.0.1:+80", false), ("localhost: 80", false), ("localhost:8\t0", false),
        ("127.0.0.1.nip.io", false), ("0x7f.1", false), ("0x7f000001", false), ("017700000001", false), ("[0:0:0:0:0:0:0:1%lo]", false),
        ("x.metrics.example.net", false), ("metrics.example.net.evil.example", false), ("metrics.example", false),
        (String(repeating: "a", count: 63) + "." + String(repeating: "b", count: 300) + ".localhost", false),
    ]

    @Test("each case: admitted or 421", arguments: cases)
    func rule(_ host: String?, _ admitted: Bool) {
        let result = host.map { text in Array(text.utf8).withUnsafeBytes { Self.hosts.admits($0) } } ?? Self.hosts.admits(nil)
        #expect(result == admitted, "\(host.map { $0.debugDescription } ?? "no Host")")
    }

    @Test("the length bound: a name of exactly maximumLength bytes is looked at, one byte more is refused")
    func lengthBound() {
        let atBound = String(repeating: "c", count: AdminHosts.maximumLength - ".localhost".utf8.count) + ".localhost"
        #expect(atBound.utf8.count == AdminHosts.maximumLength)
        #expect(Array(atBound.utf8).withUnsafeBytes { Self.hosts.admits($0) })
        #expect(!Array(("d" + atBound).utf8).withUnsafeBytes { Self.hosts.admits($0) })
    }

    @Test("configured names change live")
    func live() {
        let hosts = AdminHosts([])
        let name = Array("prometheus.monitoring.svc:9190".utf8)
        #expect(!name.withUnsafeBytes { hosts.admits($0) })
        hosts.set(["prometheus.monitoring.svc"])
        #expect(name.withUnsafeBytes { hosts.admits($0) })
    }
}
