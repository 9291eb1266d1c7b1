import Foundation
import Served
import SiteStore
import StrictJSON

/// The ownership check's part of the API (docs/api.md, "Ownership check"): which writes create
/// and remove records, and `GET /v1/sites/{host}/verification`.
extension TenantAPI {
    /// Before a PUT's rename into place: a site the API creates gets a record for its name; each
    /// alias it names that it did not hold before gets one too (an alias is a name a certificate
    /// would cover). Written first, so that no reload, crash or failed write ever serves a name
    /// the API added without its record (the certificate manager decides a name's order when a
    /// reload publishes it: Sources/Daemon/Daemon+ACME.swift). A site replaced keeps its
    /// records, and a name the operator wrote by hand (a site that existed without a record)
    /// stays `not-required`: the API did not add it. Returns the names whose records this call
    /// made (to take back when the write fails); throws, having taken them back, when one cannot
    /// be written.
    func createChecks(_ host: String, created: Bool, namedBefore: Set<String>, aliases: [HostName]) throws(VerificationError)
        -> [String]
    {
        guard let store = configuration.verification else { return [] }
        let now = Date().timeIntervalSince1970
        var names = created ? [host] : []
        // Wildcards too: a wildcard's certificate is ordered over DNS-01, and its check asks a
        // random child of it (VerificationChecker.fetchedName).
        for alias in aliases where !namedBefore.contains(alias.name) { names.append(alias.name) }
        var made: [String] = []
        // As the disk has it: another replica on the volume may have made (or verified) it; a
        // file that is no record (`VerificationStore.placeholder`) is replaced by one.
        for name in names where store.reread(name).map(\.token.isEmpty) ?? true {
            do {
                try store.create(name, now: now)
            } catch {
                logger.error("cannot write a verification record; nothing was written", metadata: ["host": "\(host)", "error": "\(error)"])
                for name in made { store.remove(name) }
                throw error
            }
            made.append(name)
        }
        return made
    }

    /// After a PUT's rename into place: aliases the site no longer names lose their records, and
    /// unverified names are due again now. Called in the section of the rename, so that another
    /// site's write that takes a dropped alias makes its record after this removal, not before.
    func settleChecks(_ host: String, namedBefore: Set<String>, aliases: [HostName]) {
        guard let store = configuration.verification else { return }
        let now = Date().timeIntervalSince1970
        let named = Set(aliases.map(\.name) + [host])
        for old in namedBefore where !named.contains(old) { store.remove(old) }
        for name in named { store.dueNow(name, now: now) }
        configuration.verificationDue?()
    }

    /// The names the site on disk names (its own and site.yaml's aliases), read before a write
    /// replaces or removes it: the served ownership may not have caught up with the last write.
    func namesForChecks(_ host: String) -> Set<String> {
        guard configuration.verification != nil else { return [] }
        return Set(problems(host, directory.sitesPath + "/" + host).aliases.map(\.name) + [host])
    }

    /// After a DELETE, in the section of the removal: the records of the names the site named.
    func forgetChecks(_ names: Set<String>) {
        guard let store = configuration.verification else { return }
        for name in names { store.remove(name) }
    }

    /// The state shown in the site state and the list: `verified`, `unverified` or `not-required`.
    func verificationState(_ host: String) -> String {
        configuration.verification?.state(host) ?? "not-required"
    }

    /// `GET /v1/sites/{host}/verification`: 404 when no site directory holds the name.
    func verification(_ host: String) -> APIResponse {
        switch directory.current(host, strict: false) {
        case .absent: return Self.error(404, "not-found", "no site directory holds \(host)")
        case .foreign(let reason): return Self.error(404, "not-found", "no site directory holds \(host): \(reason)")
        case .site:
            // The aliases site.yaml names are names too, each with its own check.
            let aliases = problems(host, directory.sitesPath + "/" + host).aliases.map(\.name)
            func one(_ name: String) -> String {
                configuration.verification?.json(name, port: configuration.verifyPort)
                    ?? VerificationStore.notRequiredJSON(name)
            }
            var body = one(host)
            body.removeLast()
            body += ",\"aliases\":[\(aliases.map(one).joined(separator: ","))]}"
            return Self.json(200, body)
        }
    }
}
