import Foundation

extension TestConfig {
    /// `count` orders of this hour in the shared order log (`acme/orders.log`), as another
    /// replica's: the budget is then that much spent.
    package func seedOrders(_ count: Int) throws {
        let now = Int(Date().timeIntervalSince1970)
        try write("acme/orders.log", Array((0..<count).map { "\(now) other\($0).example\n" }.joined().utf8))
    }

    /// The names of the order log, oldest first.
    package func orderLog() -> [String] {
        let log = (try? String(contentsOfFile: path("acme/orders.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
    }

    /// A config with a pebble of its own whose validation reaches every name on loopback, and
    /// the path of pebble's issuing root written into the config's folder (for curl's --cacert).
    package static func withPebble() throws -> (TestConfig, Pebble, String) {
        let config = try TestConfig()
        let pebble = try Pebble(resolveEverythingToLoopback: true)
        try config.write("pebble-root.pem", try pebble.issuingRoot())
        return (config, pebble, config.path("pebble-root.pem"))
    }

    /// Writes config/aasad.yaml with an `acme` section aimed at `pebble` (its directory and CA,
    /// storage under this config's folder), `challenges` as YAML list items and `extra` lines of
    /// that section (two spaces in).
    package func writeACMESettings(_ pebble: Pebble, challenges: String, storage: String = "acme", extra: String = "") throws {
        try write(
            "config/aasad.yaml",
            Array(
                """
                acme:
                  directory: "\(pebble.directory)"
                  directory-ca: "\(pebble.caFile)"
                  storage: "\(path(storage))"
                  challenges: [\(challenges)]
                  email: ops@example.com
                \(extra)

                """.utf8))
    }
}

extension AdminPages {
    /// The `acme` entries of `/sites`, by name.
    package func automaticCertificates() throws -> [String: [String: Any]] {
        let page = try admin("/sites")
        let json = try JSONSerialization.jsonObject(with: Data(page.body)) as? [String: Any]
        var byName: [String: [String: Any]] = [:]
        for site in json?["sites"] as? [[String: Any]] ?? [] {
            for entry in site["acme"] as? [[String: Any]] ?? [] { byName[entry["name"] as? String ?? ""] = entry }
        }
        return byName
    }

    /// The order budget's tiers from `/sites`' `acme` summary: each tier's queued names and the
    /// oldest one's wait in seconds.
    package func acmeTiers() throws -> [String: (queued: Int, oldestWaitSeconds: Int)] {
        let page = try JSONSerialization.jsonObject(with: Data(try admin("/sites").body)) as? [String: Any]
        let tiers = (page?["acme"] as? [String: Any])?["tiers"] as? [String: [String: Int]] ?? [:]
        return tiers.mapValues { ($0["queued"] ?? -1, $0["oldestWaitSeconds"] ?? -1) }
    }
}
