import ACME
package import Served
import SiteStore
import TLS

/// One name's stored automatic certificate (`acme` in the JSON).
package struct StoredCertificate: Encodable {
    package var name: String
    /// Its end of validity, seconds since the epoch; nil when none is stored (or usable).
    package var notAfter: Int64?
    package var problem: String?
    /// Past its site's `acme.names-per-site`: never ordered (nil when not).
    package var capped: Bool?
}

/// The names automatic certificates are for, with what the storage holds for each (`aasad sites`;
/// the names and the cap by the daemon's own rules, ACMENames and OrderQueue).
package struct StoredCertificates {
    package var byName: [String: StoredCertificate]

    package func forSite(_ hosts: [String]) -> [StoredCertificate]? {
        let found = hosts.compactMap { byName[$0] }
        return found.isEmpty ? nil : found
    }

    /// What the storage holds for each name of the snapshot; nil when aasad.yaml does not turn
    /// automatic certificates on. Reads only: makes no directory.
    package static func read(config: String, snapshot: Snapshot) -> StoredCertificates? {
        let (settings, problems) = ServerSettings.load(configDirectory: config)
        guard problems.isEmpty, settings.acme.directory != nil,
            let storage = try? ACMEStorage(root: settings.acme.storage ?? settings.state + "/acme", create: false)
        else { return nil }
        var byName: [String: StoredCertificate] = [:]
        // As the server does: no order for a name whose ownership check has not passed.
        let checks = Daemon.verificationStates(config: config)
        let bySite = ACMENames(blocked: { checks[$0] == false }).names(in: snapshot)
        for name in bySite.values.joined() {
            var entry = StoredCertificate(name: name)
            do {
                if let file = try storage.certificate(for: name) {
                    guard let pair = ACMEStorage.split(file.bytes) else { throw ACMEError.storage("not a chain and one key") }
                    entry.notAfter = try CertificateInfo(leafPEM: pair.chainPEM).notAfter
                }
            } catch {
                entry.problem = "unusable: \(error)"
            }
            byName[name] = entry
        }
        // The server's rule (`OrderQueue`): seats go to names with a certificate first, then in
        // the site's order.
        var queue = OrderQueue(namesPerSite: settings.acme.namesPerSite)
        queue.want(bySite)
        for name in queue.capped(isServed: { byName[$0]?.notAfter != nil }) { byName[name]?.capped = true }
        return StoredCertificates(byName: byName)
    }
}
