import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Wildcard children on demand (docs/acme.md, "Wildcard children"), in-process: a child name of a
/// `per-name` wildcard site gets a certificate of its own at its first SNI when the approval says
/// yes (a stand-in `ask` server, the site's allow file), none when it says no; floods of random
/// SNI names cost no order and a bounded number of asks; another site's name under the wildcard is
/// never asked about.
@Suite("serve: wildcard children on demand")
final class ACMEChildrenServeTests {
    static let path = "/.well-known/apple-app-site-association"

    /// `/sites`' `acme.children`.
    static func children(_ daemon: TestDaemon) -> [String: Any] {
        let page = (try? daemon.admin("/sites").body) ?? []
        let json = (try? JSONSerialization.jsonObject(with: Data(page))) as? [String: Any]
        return (json?["acme"] as? [String: Any])?["children"] as? [String: Any] ?? [:]
    }

    static func asks(_ daemon: TestDaemon, _ answer: String) -> Int {
        (children(daemon)["asks"] as? [String: Int])?[answer] ?? -1
    }

    static func hello(_ daemon: TestDaemon, _ name: String) -> Int {
        HandBuiltClientHello.send(serverName: name, port: daemon.httpsPort)
    }

    static func lines(_ path: String) -> [String] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    @Test(
        "against pebble: 10,000 random SNI names order nothing and cost a bounded number of asks; a child ask approves gets its own trusted certificate; one ask refuses gets none; one the CA always fails backs off; another site's name is never asked about"
    )
    func askEndpoint() throws {
        let (config, pebble, root) = try TestConfig.withPebble()
        let askLog = config.path("asks")
        let ask = try StandInServer(mode: "ask", body: "alice.w.test,fail.w.test,taken.w.test", log: askLog)
        try config.writeACMESettings(
            pebble, challenges: "tls-alpn-01",
            extra: "  ask: \"http://127.0.0.1:\(ask.port)/ask\"\n  wildcard-certificates: per-name")
        // An exact site under the wildcard: the ownership rule gives it its own site, never a child's.
        try config.write("config/sites/taken.w.test/apple-app-site-association", config.aasa)
        // fail.w.test resolves where nothing answers pebble's validation: every order fails.
        try pebble.resolve("fail.w.test", to: "127.0.0.2")
        let daemon = try TestDaemon(
            config: config, flags: ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"])
        func describe() -> String {
            "children \(Self.children(daemon)); orders \(config.orderLog()); asks \(Self.lines(askLog).suffix(20))"
        }

        // Hostile first: 10,000 random child names (ask says no to each), and odd bytes and lengths.
        let flood = Date()
        var answered = 0
        for i in 0..<10_000 where Self.hello(daemon, "r\(i).w.test") > 0 { answered += 1 }
        let odd = [
            "r.w.test.", "R1.W.TEST", "a..w.test", "-a.w.test", "a-.w.test", "*.w.test", "x.y.w.test", "a\u{0}.w.test",
            "a\r\n.w.test", String(repeating: "a", count: 64) + ".w.test", String(repeating: "b.", count: 130) + "w.test", "é.w.test",
            "w.test", "",
        ]
        for name in odd { _ = Self.hello(daemon, name) }
        let seconds = Date().timeIntervalSince(flood)
        #expect(answered == 10_000)
        // Every ask under way is answered before counting.
        #expect(
            eventually(attempts: 300) {
                (Self.children(daemon)["inFlight"] as? Int) == 0 && (Self.children(daemon)["pending"] as? Int) == 0
            })
        let asked = Self.lines(askLog)
        // One parent: its bucket (a burst of 10, then 20 a minute) bounds the asks.
        let bound = 10 + Int(seconds * 20 / 60) + 1
        print("10,000 random child SNI names in \(String(format: "%.1f", seconds)) s: \(asked.count) asks (bound \(bound)), 0 orders")
        #expect(asked.count <= bound && asked.count >= 1, "\(asked.count) asks in \(seconds) s")
        #expect(asked.allSatisfy { $0.hasPrefix("/ask?domain=r") }, "only names in normal form are asked about: \(asked.prefix(20))")
        #expect(Self.asks(daemon, "no") == asked.count, "\(describe())")
        #expect((Self.children(daemon)["children"] as? Int) == 0)
        #expect(((Self.children(daemon)["dropped"] as? [String: Int])?["rate"] ?? 0) > 0)
        #expect(!config.orderLog().contains { $0.hasSuffix(".w.test") && $0 != "taken.w.test" }, "\(config.orderLog())")
        let metrics = try Metrics(daemon)
        #expect(metrics["aasad_acme_ask_total", ["answer": "no"]] == Double(asked.count))
        #expect(metrics.series("aasad_acme_ask_dropped_total").count == 4)

        // alice: approved, ordered, served its own certificate on a later handshake.
        let start = Date()
        #expect(try daemon.https("alice.w.test", Self.path, ["-k"]).status == 200)
        #expect(
            eventually(attempts: 1_200, interval: 0.05) { (try? daemon.https("alice.w.test", Self.path, cacert: root))?.status == 200 },
            "\(describe())")
        print("alice.w.test: first SNI to a trusted handshake in \(String(format: "%.2f", Date().timeIntervalSince(start))) s")
        // bob: refused; fail: approved, and every order fails while alice's went on.
        _ = Self.hello(daemon, "bob.w.test")
        _ = Self.hello(daemon, "fail.w.test")
        #expect(
            eventually(attempts: 600) {
                _ = Self.hello(daemon, "bob.w.test")
                _ = Self.hello(daemon, "fail.w.test")
                return Self.lines(askLog).contains("/ask?domain=bob.w.test") && config.orderLog().contains("fail.w.test")
            }, "\(describe())")
        #expect(eventually(attempts: 600) { ((try? Metrics(daemon))?["aasad_acme_names", ["state": "failed"]] ?? 0) == 1 }, "\(describe())")
        #expect(!config.orderLog().contains("bob.w.test"), "\(config.orderLog())")
        #expect((try? daemon.https("bob.w.test", Self.path, cacert: root))?.status != 200)
        #expect(config.orderLog().filter { $0 == "alice.w.test" }.count == 1, "\(config.orderLog())")
        // taken.w.test is another site's name: never asked about, whatever its handshakes.
        for _ in 0..<20 { _ = Self.hello(daemon, "taken.w.test") }
        #expect(!Self.lines(askLog).contains("/ask?domain=taken.w.test"))
        #expect((Self.children(daemon)["children"] as? Int) == 2, "\(describe())")
        #expect(daemon.stop())

        // A restart: alice's stored certificate is served from the first handshake (the child is
        // taken back from its storage record, its yes still fresh: nothing asked), with no new
        // order; bob, refused, has no record and stays no child.
        let ordersBefore = config.orderLog()
        let asksBefore = Self.lines(askLog).count
        let restarted = try TestDaemon(
            config: config, flags: ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"])
        #expect((Self.children(restarted)["children"] as? Int) == 2, "\(Self.children(restarted))")
        #expect(try restarted.https("alice.w.test", Self.path, cacert: root).status == 200, "\(Self.children(restarted))")
        #expect(Self.lines(askLog).count == asksBefore, "\(Self.lines(askLog).suffix(5))")
        #expect(config.orderLog().filter { $0 == "alice.w.test" } == ordersBefore.filter { $0 == "alice.w.test" })
        #expect(restarted.stop())
    }

    @Test(
        "site.yaml certificates: per-name and an allow file: listed names and patterns approved, others refused; a linked allow file is its site's no (shown in /sites) and pauses no other site; a wildcard site without per-name asks nothing"
    )
    func allowFile() throws {
        let config = try TestConfig()
        // No CA answers: approvals need none (orders fail and back off). The `ask` is down.
        let down = ReservedPort()
        defer { withExtendedLifetime(down) {} }
        try config.write(
            "config/aasad.yaml",
            Array(
                "acme:\n  directory: \"https://127.0.0.1:1/directory\"\n  storage: \"\(config.path("acme"))\"\n  ask: \"http://127.0.0.1:\(down.port)/ask\"\n"
                    .utf8))
        for site in ["*.v.test", "*.s.test", "*.d.test"] {
            try config.write("config/sites/\(site)/apple-app-site-association", config.wildcardAASA)
            try config.write("config/sites/\(site)/site.yaml", Array("certificates: per-name\n".utf8))
        }
        try config.write("config/sites/*.v.test/allowed-children", Array("# users\nok.v.test\nteam-*.v.test\n".utf8))
        // A symlink to a file outside the site (the loader's rule: refused on the descriptor).
        try config.write("elsewhere", Array("ok.s.test\n".utf8))
        try FileManager.default.createSymbolicLink(
            atPath: config.path("config/sites/*.s.test/allowed-children"), withDestinationPath: config.path("elsewhere"))
        let daemon = try TestDaemon(config: config)
        for name in ["ok.v.test", "team-blue.v.test", "no.v.test", "other.v.test", "ok.s.test", "x.w.test"] {
            _ = Self.hello(daemon, name)
        }
        #expect(
            eventually(attempts: 300) {
                Self.asks(daemon, "yes") == 2 && Self.asks(daemon, "no") == 3
            }, "\(Self.children(daemon))")
        // *.w.test (TestConfig's, without per-name) would have asked the `ask` that is down.
        #expect(Self.asks(daemon, "failed") == 0, "\(Self.children(daemon))")
        #expect((Self.children(daemon)["children"] as? Int) == 2)
        let refusing = Self.children(daemon)["refusing"] as? [String: String]
        #expect(refusing?.keys.sorted() == ["*.s.test"], "\(Self.children(daemon))")
        // *.w.test has no per-name: its names were never offered.
        let metrics = try Metrics(daemon)
        #expect(metrics["aasad_acme_ask_total", ["answer": "yes"]] == 2)
        // A flood under *.d.test, whose ask (no allow file) is down: asks pause after its first
        // failure, so the flood costs at most the parent's burst in asks, and nothing is ordered.
        let flood = Date()
        for i in 0..<1_000 { _ = Self.hello(daemon, "d\(i).d.test") }
        print("1,000 child SNI names with ask down in \(String(format: "%.2f", Date().timeIntervalSince(flood))) s")
        #expect(
            eventually(attempts: 300) {
                (Self.children(daemon)["inFlight"] as? Int) == 0 && (Self.children(daemon)["pending"] as? Int) == 0
            })
        #expect(Self.asks(daemon, "failed") <= 1 + 10, "\(Self.children(daemon))")
        #expect(((Self.children(daemon)["dropped"] as? [String: Int])?["paused"] ?? 0) > 0, "\(Self.children(daemon))")
        #expect((Self.children(daemon)["children"] as? Int) == 2)
        #expect(daemon.stop())
    }
}
