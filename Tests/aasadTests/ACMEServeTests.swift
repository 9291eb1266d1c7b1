import Foundation
import TestSupport
import Testing

/// `aasad serve` with automatic certificates, end to end against pebble: pebble's validation
/// reaches aasad's own listeners (pebble-challtestsrv as the DNS that resolves every name to
/// 127.0.0.1, pebble's tlsPort and httpPort set to aasad's ports), with its 5 % bad-nonce
/// rejections on.
@Suite("serve: automatic certificates against pebble", .serialized)
final class ACMEServeTests {
    let config: TestConfig
    let pebble: Pebble
    /// pebble's issuing root, as a file curl trusts.
    let root: String

    init() throws {
        (config, pebble, root) = try TestConfig.withPebble()
    }

    func settings(challenges: String, storage: String = "acme", extra: String = "") throws {
        try config.writeACMESettings(pebble, challenges: challenges, storage: storage, extra: extra)
    }

    /// junk.test: a tenant's site with eight aliases of its own choosing.
    func junkSite() throws {
        try config.write("config/sites/junk.test/apple-app-site-association", config.aasa)
        let aliases = (1...8).map { "alias\($0).junk.test" }.joined(separator: ", ")
        try config.write("config/sites/junk.test/site.yaml", Array("aliases: [\(aliases)]\n".utf8))
    }

    /// The names in `state`, from `/sites`.
    func names(_ server: RunningServer, _ state: String) -> Set<String> {
        Set(((try? Self.automatic(server)) ?? [:]).filter { $0.value["state"] as? String == state }.keys)
    }

    func serve(sharedWith replicas: [RunningServer] = []) throws -> RunningServer {
        try Self.serve(config, pebble, sharedWith: replicas)
    }

    /// serve on the ports pebble's validation reaches (its tlsPort and httpPort), which no process
    /// but it and `replicas` listens on.
    static func serve(_ config: TestConfig, _ pebble: Pebble, sharedWith replicas: [RunningServer] = []) throws -> RunningServer {
        let server = try RunningServer(
            config: config, extra: ["--https", "127.0.0.1:\(pebble.tlsPort)", "--http", "127.0.0.1:\(pebble.httpPort)"])
        try server.requireOwnListeners(sharedWith: replicas)
        return server
    }

    /// The `acme` entries of `/sites`, by name.
    static func automatic(_ server: RunningServer) throws -> [String: [String: Any]] { try server.automaticCertificates() }

    func describe(_ server: RunningServer) -> String { "\((try? Self.automatic(server)) ?? [:])" }

    /// Waits (60 s at most) until every name in `names` has a valid certificate.
    static func waitValid(_ server: RunningServer, _ names: [String]) -> Bool {
        eventually(attempts: 600, interval: 0.1) {
            let entries = (try? automatic(server)) ?? [:]
            return names.allSatisfy { entries[$0]?["state"] as? String == "valid" }
        }
    }

    /// The subject and issuer of the certificate served for an SNI name.
    func presented(_ server: RunningServer, _ name: String) throws -> String {
        let handshake = try Tool.run(
            "openssl", ["s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", name, "-brief"], input: [])
        return handshake.stderr
    }

    @Test("TLS-ALPN-01: each uncovered host gets a CA certificate; own tls/ left alone; a new site too; wildcard needs a hook")
    func tlsALPN() throws {
        try settings(challenges: "tls-alpn-01")
        let server = try serve()
        #expect(Self.waitValid(server, ["a.test", "www.a.test"]), "\(describe(server))\n\(server.log())")
        for host in ["a.test", "www.a.test"] {
            let fetched = try server.https(host, "/.well-known/apple-app-site-association", cacert: root)
            #expect(fetched.status == 200, "\(host)")
        }
        // own.test keeps its own pair; no order was placed for it.
        #expect(try presented(server, "own.test").contains("CN = own.test"))
        let entries = try Self.automatic(server)
        #expect(entries["own.test"] == nil)
        #expect(entries["*.w.test"]?["state"] as? String == "needs-dns-hook")
        #expect(entries["bad.test"] == nil)
        // A site added while serving is served over a CA certificate moments later.
        let added = Date()
        try config.write("config/sites/new.test/apple-app-site-association", config.aasa)
        #expect(Self.waitValid(server, ["new.test"]), "\(describe(server))")
        #expect(try server.https("new.test", "/apple-app-site-association", cacert: root).status == 200)
        print("new.test: added to served with a CA certificate in \(String(format: "%.1f", Date().timeIntervalSince(added))) s")
        let page = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let summary = (page?["acme"] as? [String: Any])?.compactMapValues { $0 as? Int }
        #expect(summary?["names"] == 4 && summary?["queued"] == 0, "\(String(describing: summary))")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("aasad_acme_orders_total{result=\"issued\"} 3"), "\(metrics)")
        #expect(metrics.contains("aasad_acme_names{state=\"needs-dns-hook\"} 1"))
        #expect(!metrics.contains("aasad_acme_challenge_handshakes_total 0"))
        #expect(try presented(server, "a.test").contains("Pebble Intermediate"))
        // The acme section changed while serving: a new manager on the same storage
        // keeps what was issued and orders the next site over the challenge now configured.
        try settings(challenges: "http-01")
        #expect(server.waitForLog("aasad.yaml applied"))
        #expect(Self.waitValid(server, ["a.test", "www.a.test", "new.test"]), "\(describe(server))")
        try config.write("config/sites/later.test/apple-app-site-association", config.aasa)
        #expect(Self.waitValid(server, ["later.test"]), "\(describe(server))")
        #expect(try server.https("later.test", "/apple-app-site-association", cacert: root).status == 200)
        #expect(server.stop() == 0)
        #expect(server.log().contains("certificate issued"))
        // aasad sites reads the same storage without a server.
        let sites = try Tool.run(AASAD.binary.path, ["sites", "--config", config.config])
        #expect(sites.text.contains("acme:a.test=until "), "\(sites.text)")
        #expect(sites.text.contains("acme:new.test=until "), "\(sites.text)")
        #expect(!sites.text.contains("acme:own.test"), "\(sites.text)")
    }

    @Test("a tenant's eight junk aliases under a backlog share of 8 orders leave no new site queued: sites take turns")
    func fairAcrossSites() throws {
        // 10 an hour: names nobody asked for may spend 8 (OrderBudget keeps 2 for renewals and demand).
        try settings(challenges: "tls-alpn-01", extra: "  orders-per-hour: 10")
        try junkSite()
        // A new customer's site, whose name sorts after every junk alias (first in, first out by
        // name ordered the eight aliases and left it queued for the hour).
        try config.write("config/sites/new.test/apple-app-site-association", config.aasa)
        let server = try serve()
        // Twelve names want a certificate (a.test, www.a.test, junk.test and its eight aliases,
        // new.test); the budget allows eight, then the rest wait for the hour.
        #expect(eventually(attempts: 900, interval: 0.1) { self.names(server, "valid").count == 8 }, "\(describe(server))")
        #expect(eventually(attempts: 50, interval: 0.1) { self.names(server, "queued").count == 4 }, "\(describe(server))")
        let valid = names(server, "valid")
        #expect(valid.isSuperset(of: ["a.test", "www.a.test", "new.test", "junk.test"]), "\(describe(server))")
        #expect(names(server, "queued").allSatisfy { $0.hasSuffix(".junk.test") }, "\(describe(server))")
        #expect(try server.https("new.test", "/apple-app-site-association", cacert: root).status == 200)
        let log = try String(contentsOfFile: config.path("acme/orders.log"), encoding: .utf8).split(separator: "\n")
        #expect(log.count == 8, "\(log)")
        #expect(server.stop() == 0)
    }

    @Test("acme.names-per-site: a site of N names gets them all, of N+1 and more the rest are capped, never ordered, and shown")
    func namesPerSite() throws {
        try settings(challenges: "tls-alpn-01", extra: "  names-per-site: 3")
        try junkSite()
        // new.test: exactly three names, the cap.
        try config.write("config/sites/new.test/apple-app-site-association", config.aasa)
        try config.write("config/sites/new.test/site.yaml", Array("aliases: [www.new.test, shop.new.test]\n".utf8))
        let server = try serve()
        let seated = [
            "a.test", "www.a.test", "junk.test", "alias1.junk.test", "alias2.junk.test", "new.test", "www.new.test", "shop.new.test",
        ]
        #expect(Self.waitValid(server, seated), "\(describe(server))\n\(server.log())")
        let capped = Set((3...8).map { "alias\($0).junk.test" })
        #expect(names(server, "capped") == capped, "\(describe(server))")
        let page = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let summary = (page?["acme"] as? [String: Any])?.compactMapValues { $0 as? Int }
        #expect(summary?["capped"] == 6 && summary?["queued"] == 0, "\(String(describing: summary))")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("aasad_acme_names{state=\"capped\"} 6"), "\(metrics)")
        #expect(metrics.contains("aasad_acme_orders_total{result=\"issued\"} 8"), "\(metrics)")
        let log = try String(contentsOfFile: config.path("acme/orders.log"), encoding: .utf8)
        for name in capped { #expect(!log.contains(" \(name)\n"), "\(log)") }
        #expect(server.stop() == 0)
        // aasad sites says the same without a server.
        let sites = try Tool.run(AASAD.binary.path, ["sites", "--config", config.config])
        #expect(sites.text.contains("acme:alias3.junk.test=capped none yet"), "\(sites.text)")
        #expect(sites.text.contains("acme:alias2.junk.test=until "), "\(sites.text)")
    }

    @Test("two servers on one port sharing storage, over HTTP-01: one order per name, the same certificate from both")
    func replicas() throws {
        try settings(challenges: "http-01")
        let one = try serve()
        let two = try serve(sharedWith: [one])
        #expect(Self.waitValid(one, ["a.test", "www.a.test"]), "\(describe(one))\n\(one.log())")
        #expect(Self.waitValid(two, ["a.test", "www.a.test"]), "\(describe(two))\n\(two.log())")
        let log = try String(contentsOfFile: config.path("acme/orders.log"), encoding: .utf8).split(separator: "\n")
        #expect(log.count == 2, "\(log)")
        for name in ["a.test", "www.a.test"] {
            let a = try Self.automatic(one)[name]?["notAfter"] as? Int
            let b = try Self.automatic(two)[name]?["notAfter"] as? Int
            #expect(a != nil && a == b)
            #expect(try Tool.fingerprint(ofFile: config.path("acme/certificates/\(name).pem")).isEmpty == false)
        }
    }

    @Test("the CA down: a restart serves the stored certificates at once; a new site's order fails and backs off")
    func caDown() throws {
        try settings(challenges: "tls-alpn-01")
        let first = try serve()
        #expect(Self.waitValid(first, ["a.test", "www.a.test"]), "\(describe(first))")
        #expect(first.stop() == 0)
        pebble.stop()
        try config.write("config/sites/later.test/apple-app-site-association", config.aasa)
        let again = try serve()
        // The first request after ready: the stored certificate, not the development one.
        #expect(try again.https("a.test", "/apple-app-site-association", cacert: root).status == 200)
        #expect(
            eventually(attempts: 300) { (try? Self.automatic(again))?["later.test"]?["state"] as? String == "failed" },
            "\(describe(again))")
        let failed = try Self.automatic(again)["later.test"] ?? [:]
        #expect((failed["error"] as? String)?.contains("no answer from the CA") == true, "\(failed)")
        let next = failed["nextAttempt"] as? Int ?? 0
        #expect(next - Int(Date().timeIntervalSince1970) > 40, "\(failed)")
        #expect(try Self.automatic(again)["a.test"]?["state"] as? String == "valid")
    }

    @Test("the DNS hook starts with descriptors 0-2 only, while aasad holds listeners and a live connection to the CA")
    func hookDescriptors() throws {
        // Each run lists its descriptors (ls inherits the shell's; the shell's own script
        // descriptor is close-on-exec), then sets the record through pebble-challtestsrv.
        try config.write(
            "hook",
            Array(
                """
                #!/bin/sh
                ls -l /proc/self/fd/ > "\(config.path("fds"))-$1-$$" 2>&1
                case "$1" in
                  add) curl -sS --fail -d "{\\"host\\":\\"$2.\\",\\"value\\":\\"$3\\"}" http://127.0.0.1:\(pebble.challengeManagementPort)/set-txt ;;
                  remove) curl -sS --fail -d "{\\"host\\":\\"$2.\\"}" http://127.0.0.1:\(pebble.challengeManagementPort)/clear-txt ;;
                esac

                """.utf8))
        chmod(config.path("hook"), 0o755)
        try settings(challenges: "tls-alpn-01, dns-01", extra: "  dns-hook: \"\(config.path("hook"))\"")
        let server = try serve()
        #expect(Self.waitValid(server, ["*.w.test"]), "\(describe(server))\n\(server.log())")
        let listings = try FileManager.default.contentsOfDirectory(atPath: config.root.path).filter { $0.hasPrefix("fds-") }
        #expect(listings.contains { $0.hasPrefix("fds-add-") }, "\(listings)")
        for name in listings {
            let text = try String(contentsOfFile: config.path(name), encoding: .utf8)
            var extra: [String] = []
            for line in text.split(separator: "\n") {
                guard let arrow = line.range(of: " -> "),
                    let fd = line[..<arrow.lowerBound].split(separator: " ").last.flatMap({ Int($0) })
                else { continue }
                // 1 is the listing's file; ls's own open of /proc/self/fd is the one other.
                if fd > 2 && !line.hasSuffix("/fd") { extra.append(String(line)) }
            }
            #expect(extra.isEmpty, "\(name) inherited: \(extra)")
        }
        #expect(server.stop() == 0)
    }
}
