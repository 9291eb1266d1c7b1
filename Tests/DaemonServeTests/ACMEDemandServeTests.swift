import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Certificates on demand, end to end against pebble (PEBBLE_VA_NOSLEEP=1; its validation reaches
/// this daemon's listeners, every name resolving to 127.0.0.1): a wanted name without a
/// certificate that a client asks for (an SNI, Apple's CDN fetching its file) is ordered ahead of
/// 1,000 names nobody asked for, within the budget; renewals go first; names the config does not
/// hold never cause an order (docs/acme.md, "Tiers and demand").
@Suite("serve: certificates on demand against pebble")
final class ACMEDemandServeTests {
    let config: TestConfig
    let pebble: Pebble
    /// pebble's issuing root, as a file curl trusts.
    let root: String
    /// Sites nobody asks for: the backlog.
    static let backlog = 1_000
    /// The wanted names nobody asks for: the backlog and TestConfig's a.test and www.a.test.
    static let backlogNames = backlog + 2
    static let path = "/.well-known/apple-app-site-association"

    init() throws {
        (config, pebble, root) = try TestConfig.withPebble()
        for i in 0..<Self.backlog { try config.write("config/sites/q\(i).test/apple-app-site-association", config.aasa) }
    }

    /// The daemon on the ports pebble's validation reaches.
    func serve() throws -> TestDaemon {
        try TestDaemon(config: config, flags: ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"])
    }

    func state(_ daemon: TestDaemon, _ name: String) -> String? { (try? daemon.automaticCertificates())?[name]?["state"] as? String }

    func describe(_ daemon: TestDaemon) -> String {
        let entries = (try? daemon.automaticCertificates()) ?? [:]
        let shown = entries.filter { !$0.key.hasPrefix("q") }
        let page = (try? daemon.admin("/sites").body) ?? []
        return
            "tiers \((try? daemon.acmeTiers()) ?? [:]); \(shown); orders \(config.orderLog()); /sites ends \(String(decoding: page.suffix(300), as: UTF8.self))"
    }

    /// A ClientHello with `name` as its SNI; the size of the server's first answer.
    func hello(_ daemon: TestDaemon, _ name: String) -> Int { HandBuiltClientHello.send(serverName: name, port: daemon.httpsPort) }

    @Test("a new site's first SNI gets it a trusted certificate while 1,000 names wait; random and odd SNI names order nothing")
    func firstSNI() throws {
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 4")
        // Three orders this hour already: the backlog's share (3 of 4) is spent, one is kept.
        try config.seedOrders(3)
        let daemon = try serve()
        #expect(eventually(attempts: 300) { (try? daemon.acmeTiers())?["new"]?.queued == Self.backlogNames }, "\(describe(daemon))")

        // Hostile first: 10,000 SNI names the config does not hold (half under the wildcard site,
        // which the site look-up matches), and odd bytes and lengths. Each handshake is answered;
        // none is a demand.
        var answered = 0
        let random = 10_000
        let flood = Date()
        for i in 0..<random {
            let name = i % 2 == 0 ? "r\(i).w.test" : "r\(i).random.example"
            if hello(daemon, name) > 0 { answered += 1 }
        }
        #expect(answered == random)
        print("\(random) ClientHellos with random SNI in \(String(format: "%.1f", Date().timeIntervalSince(flood))) s")
        let odd = [
            "a.test\u{0}", "\r\nq1.test", "q1.test\r\n", String(repeating: "a", count: 255), String(repeating: "q", count: 300),
            "\u{202E}q1.test", "q1.tést", "*.w.test", "..", "",
        ]
        for name in odd { _ = hello(daemon, name) }
        // own.test (its own pair: not a name the manager wants, so this handshake is no demand).
        #expect(try daemon.https("own.test", Self.path, ["-k"]).status == 200)
        #expect(config.orderLog().count == 3, "\(config.orderLog())")
        #expect(try daemon.acmeTiers()["demanded"]?.queued == 0, "\(describe(daemon))")

        // The new customer's site.
        try config.write("config/sites/fresh.test/apple-app-site-association", config.aasa)
        #expect(eventually(attempts: 300) { self.state(daemon, "fresh.test") == "queued" }, "\(describe(daemon))")
        let start = Date()
        // Its first handshake is not held for the order: it gets the current (development) certificate.
        #expect(try daemon.https("fresh.test", Self.path).status == 200)
        // A client retrying a moment later gets the CA's.
        #expect(
            eventually(attempts: 600, interval: 0.05) { (try? daemon.https("fresh.test", Self.path, cacert: self.root))?.status == 200 })
        let seconds = Date().timeIntervalSince(start)
        print("fresh.test: first SNI to a trusted handshake in \(String(format: "%.2f", seconds)) s, \(Self.backlogNames) names waiting")
        #expect(config.orderLog() == ["other0.example", "other1.example", "other2.example", "fresh.test"], "\(describe(daemon))")
        let tiers = try daemon.acmeTiers()
        #expect(tiers["new"]?.queued == Self.backlogNames && (tiers["new"]?.oldestWaitSeconds ?? -1) >= 0, "\(describe(daemon))")
        #expect(tiers["demanded"]?.queued == 0 && tiers["renewal"]?.queued == 0, "\(describe(daemon))")
        let metrics = try Metrics(daemon)
        #expect(metrics["aasad_acme_tier_queue_length", ["tier": "new"]] == Double(Self.backlogNames))
        #expect(metrics.series("aasad_acme_tier_queue_length").count == 3)
        #expect(metrics.series("aasad_acme_tier_oldest_wait_seconds").count == 3)
        #expect(daemon.stop())
    }

    @Test("renewals go before demanded names; a name the CA always fails backs off while the others go on; Apple's CDN fetch demands")
    func renewalsFirst() throws {
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 4")
        // The whole budget spent: everything waits until it is raised.
        try config.seedOrders(4)
        // renew.test: a served certificate whose last third began days ago.
        var maker = try TestCertificates(root: config.root)
        let now = Date()
        try maker.make(
            in: config.path("made"), names: ["renew.test"], start: TestCertificates.stamp(now - 20 * 86_400),
            end: TestCertificates.stamp(now + 2 * 86_400))
        let pair =
            try String(contentsOfFile: config.path("made/cert.pem"), encoding: .utf8)
            + String(contentsOfFile: config.path("made/key.pem"), encoding: .utf8)
        try config.write("acme/certificates/renew.test.pem", Array(pair.utf8))
        for site in ["renew.test", "fresh.test", "fail.test", "cdn.test"] {
            try config.write("config/sites/\(site)/apple-app-site-association", config.aasa)
        }
        // fail.test resolves where nothing answers pebble's validation: every order fails.
        try pebble.resolve("fail.test", to: "127.0.0.2")
        let daemon = try serve()
        #expect(
            eventually(attempts: 300) {
                let tiers = (try? daemon.acmeTiers()) ?? [:]
                return tiers["renewal"]?.queued == 1 && tiers["new"]?.queued == Self.backlogNames + 3
            }, "\(describe(daemon))")
        let renewed = try #require(try daemon.automaticCertificates()["renew.test"]?["notAfter"] as? Int)

        // Asked for: fail.test and fresh.test by a handshake, cdn.test by Apple's CDN over plain
        // HTTP (no SNI there); q1.test by a browser over plain HTTP, which is no demand.
        #expect(try daemon.https("fail.test", Self.path).status == 200)
        #expect(try daemon.https("fresh.test", Self.path).status == 200)
        #expect(try daemon.http("cdn.test", Self.path, ["-A", "AASA-Bot/1.0.0"]).status == 200)
        #expect(try daemon.http("q1.test", Self.path, ["-A", "Mozilla/5.0"]).status == 200)
        #expect(eventually(attempts: 300) { (try? daemon.acmeTiers())?["demanded"]?.queued == 3 }, "\(describe(daemon))")
        #expect(try daemon.acmeTiers()["new"]?.queued == Self.backlogNames, "\(describe(daemon))")
        let metrics = try Metrics(daemon)
        #expect(metrics["aasad_acme_tier_queue_length", ["tier": "demanded"]] == 3)
        #expect(metrics["aasad_acme_tier_queue_length", ["tier": "renewal"]] == 1)
        #expect(config.orderLog().count == 4)

        // The budget raised to 8: 4 more orders, kept from the backlog (its share is 6, and the
        // log holds 4 already; the tiers go first while any is due).
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01", extra: "  orders-per-hour: 8")
        #expect(daemon.waitForLog("aasad.yaml applied"))
        #expect(
            eventually(attempts: 900) { self.state(daemon, "fresh.test") == "valid" && self.state(daemon, "cdn.test") == "valid" },
            "\(describe(daemon))")
        #expect(eventually(attempts: 300) { self.state(daemon, "renew.test") == "valid" }, "\(describe(daemon))")
        #expect(eventually(attempts: 300) { self.state(daemon, "fail.test") == "failed" }, "\(describe(daemon))")
        let placed = Array(config.orderLog().dropFirst(4))
        #expect(placed.first == "renew.test", "\(placed)")
        #expect(Set(placed.dropFirst()) == ["cdn.test", "fail.test", "fresh.test"], "\(placed)")
        #expect(placed.count == 4, "the backlog got none of the kept orders: \(placed)")
        let entries = try daemon.automaticCertificates()
        #expect((entries["renew.test"]?["notAfter"] as? Int ?? 0) != renewed)
        let nextAttempt = entries["fail.test"]?["nextAttempt"] as? Int ?? 0
        #expect(nextAttempt - Int(Date().timeIntervalSince1970) > 40, "\(entries["fail.test"] ?? [:])")
        for name in ["fresh.test", "cdn.test", "renew.test"] {
            #expect((try? daemon.https(name, Self.path, cacert: root))?.status == 200, "\(name)")
        }
        #expect(try daemon.acmeTiers()["new"]?.queued == Self.backlogNames, "\(describe(daemon))")
        #expect(daemon.stop())
    }
}
