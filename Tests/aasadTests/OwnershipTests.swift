import Foundation
import TestSupport
import Testing

/// Only names a site holds are ordered from the CA: an alias refused to a tenant gets no order,
/// and its victim keeps its certificate (pebble, as ACMEServeTests).
@Suite("Host ownership: certificates are ordered only for held names (pebble)", .serialized)
final class OwnershipACMETests {
    let config: TestConfig
    let pebble: Pebble
    let root: String

    init() throws {
        (config, pebble, root) = try TestConfig.withPebble()
        try config.writeACMESettings(pebble, challenges: "tls-alpn-01")
    }

    @Test("an alias under another's wildcard or on another's name gets no order; the victim keeps its certificate and AASA")
    func noOrderForRefusedAliases() throws {
        try config.write("config/sites/evil.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/evil.test/site.yaml", Array("aliases: [x.w.test, a.test, mine.test]\n".utf8))
        let server = try ACMEServeTests.serve(config, pebble)
        let valid = ACMEServeTests.waitValid(server, ["a.test", "www.a.test", "evil.test", "mine.test"])
        let entries = try ACMEServeTests.automatic(server)
        #expect(valid, "\(entries)\n\(server.log())")
        #expect(entries["x.w.test"] == nil, "a refused alias was ordered: \(entries)")
        let fetched = try server.https("a.test", "/.well-known/apple-app-site-association", cacert: root)
        #expect(fetched.status == 200 && fetched.body == config.aasa)
        // x.w.test is the wildcard site's (its certificate needs a DNS hook; nothing was issued for it).
        #expect(entries["*.w.test"]?["state"] as? String == "needs-dns-hook")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("aasad_acme_orders_total{result=\"issued\"} 4"), "\(metrics)")
        #expect(server.stop() == 0)
    }
}
