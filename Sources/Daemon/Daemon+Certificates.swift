package import ACME
package import Foundation
package import Logging
package import SiteStore
package import TLS

/// serve's default certificate: the configured pair, the first site's, or the development one,
/// and keeping the TLS layer's default in step with the config directory.
extension Daemon {
    /// Keeps the TLS default in step with the config directory's `tls/`: a new pair becomes the
    /// default for new connections; without one, the start-up default (development or first site).
    static func followDefaultCertificate(_ snapshot: Snapshot, tls: TLSServer, fallback: TLSServer.CertificateSource, logger: Logger) {
        let wanted = snapshot.defaultCertificate?.source ?? fallback
        guard wanted.identity != tls.defaultContext.identity else { return }
        do {
            try tls.replaceDefault(wanted)
            logger.info("default certificate replaced", metadata: ["from": "\(wanted.label)"])
        } catch {
            logger.error("the new default certificate cannot be used; keeping the previous one", metadata: ["error": "\(error)"])
        }
    }

    /// What the SNI callback presents for `name` (lower case, at most 255 bytes, anything a client
    /// sent): the serving site's own pair, else the name's automatic certificate, else (with no
    /// default pair) a development leaf for the host the site serves it under (its wildcard
    /// pattern for a name under a wildcard site, so one leaf covers them all). Nil: the default.
    /// A name no site serves returns before anything is signed or cached.
    static func certificate(
        for name: String, snapshot: Snapshot, automatic: CertificateManager?, development: DevelopmentAuthority?,
        names: ACMENames? = nil
    ) -> TLSServer.CertificateSource? {
        guard let site = snapshot.site(forHost: name) else { return automatic?.certificate(for: name) }
        if let own = site.certificate { return own.source }
        // A child of a per-name wildcard site: its own certificate, or offered for approval
        // (Daemon+Children.swift), then what the site is served today.
        if let automatic, let names, site.containsHost(where: \.isWildcard),
            let own = Self.childCertificate(for: name, site: site, snapshot: snapshot, automatic: automatic, names: names)
        {
            return own
        }
        if let issued = automatic?.certificate(for: name) { return issued }
        // Someone wants this name now: a wanted name without a certificate goes ahead of names
        // nobody asked for. The handshake is not held; it gets what is served today.
        automatic?.demand(name)
        guard let development, snapshot.defaultCertificate == nil else { return nil }
        // The site's directory is its main host: the common case needs no walk over its aliases.
        if site.directory == name || site.containsHost(where: { $0.name == name }) { return development.source(for: name) }
        // A name under a wildcard site: the longest wildcard of the site that covers it, the one
        // `site(forHost:)` found it by.
        let pattern = site.hosts.filter { $0.isWildcard && $0.covers(name) }.max { $0.name.utf8.count < $1.name.utf8.count }
        return pattern.map { development.source(for: $0.name) } ?? nil
    }

    /// Hosts the development-certificate warning names; the rest are counted (a log line stays
    /// readable at 100,000 sites).
    static let hostsNamedInWarning = 10

    /// The first `hostsNamedInWarning` names in order, then how many more there are.
    static func named(_ names: [String]) -> String {
        let shown = firstNamed(names).joined(separator: " ")
        return names.count > hostsNamedInWarning ? "\(shown) (and \(names.count - hostsNamedInWarning) more)" : shown
    }

    /// The `hostsNamedInWarning` first names in order, in one pass: a million sites' names sorted
    /// only to show ten took a second of a start (perf, docs/benchmarks.md).
    static func firstNamed(_ names: [String]) -> [String] {
        var first: [String] = []
        first.reserveCapacity(hostsNamedInWarning + 1)
        for name in names where first.count < hostsNamedInWarning || name < first[first.count - 1] {
            first.insert(name, at: first.firstIndex { name < $0 } ?? first.count)
            if first.count > hostsNamedInWarning { first.removeLast() }
        }
        return first
    }

    struct Certificates {
        var defaultSource: TLSServer.CertificateSource
        /// The CA to trust, when the development certificate is in use.
        var developmentAuthority: String?
        /// Issues each uncovered host its own development leaf on first SNI; nil when the
        /// development certificate is not in use.
        var development: DevelopmentAuthority?
    }

    /// The default certificate: the configured one; else, when some site has no certificate of its
    /// own, a development certificate for those sites; else `defaultPair`'s site's, or the first
    /// site's own. `automatic`: ACME is on, so the development certificate only bridges the time
    /// until each host's automatic certificate is issued (and serves connections without SNI).
    /// `isUnchecked`: whether a pair (by identity) was taken unchecked, to be checked after readiness
    /// (Daemon+LateChecks.swift). A pair waiting for its check is never the default (a broken one
    /// would stop the start), nor is one `isRefused` (failed its check, yet still served by a
    /// site whose read without it could not happen: the config root unresolved, a load given up).
    /// `checkDefaultCandidates` settles the first sites' pairs before this runs and names the one
    /// that passed (`defaultPair`). Leaving out waiting and refused pairs is what keeps a broken
    /// pair from being the default, and already makes the first remaining site by name hold
    /// `defaultPair` (every site before it holds a refused pair); preferring `defaultPair`'s site
    /// is a second safeguard. `failedEarly`: sites whose pair that walk refused while another
    /// passed; they count as sites whose pair fails after start (they get the default, the pair
    /// that passed), not as sites without a pair.
    static func certificates(
        snapshot: Snapshot, state: String, automatic: Bool = false, isUnchecked: (String) -> Bool = { _ in false },
        isRefused: (String) -> Bool = { _ in false },
        defaultPair: String? = nil, failedEarly: Set<String> = [], logger: Logger
    ) throws -> Certificates {
        if let files = snapshot.defaultCertificate {
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        // One pass over every site (a sort of 100,000 sites was 3 % of a start): the hosts of
        // those without a certificate of their own, and the first by name of those with one.
        var uncovered = 0
        var hosts: [String] = []
        var first: ServedSite?
        var chosen: ServedSite?
        // Sites whose pair waits for its check, or failed it and is still served. Their hosts are
        // not given to the development CA: one whose pair fails later is a host the CA does not
        // permit, as a host added after start is (`noteUnpermitted`), and a tenant's names are
        // not written into a CA that nobody asked for.
        var pending = 0
        var stillRefused = 0
        for site in snapshot.sites.values {
            guard let identity = site.certificateIdentity else {
                if failedEarly.contains(site.directory) { continue }
                uncovered += 1
                for host in site.hosts { hosts.append(host.name) }
                continue
            }
            if isUnchecked(identity) {
                pending += 1
            } else if isRefused(identity) {
                stillRefused += 1
            } else {
                // `first` already holds `defaultPair` when there is one; `chosen` is a second
                // safeguard (the refused and waiting pairs left out above are the first one).
                if first.map({ site.directory < $0.directory }) ?? true { first = site }
                if identity == defaultPair, chosen.map({ site.directory < $0.directory }) ?? true { chosen = site }
            }
        }
        if uncovered == 0, let files = (chosen ?? first)?.certificate {
            logger.notice(
                "no default certificate (config/tls/); connections without SNI get the first site's that passed its check",
                metadata: ["site": "\(files.directory)"])
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        if pending > 0 {
            // With a site without a pair, none was checked before readiness (the development
            // certificate is needed anyway).
            let why = uncovered > 0 ? "" : " and none checked before passed"
            logger.notice(
                "\(pending) site\(pending == 1 ? "'s" : "s'") certificate pairs are checked after the server is ready\(why); connections without SNI get the development certificate",
                metadata: ["certificate": "development"])
        }
        if stillRefused > 0 {
            logger.notice(
                "\(stillRefused) site\(stillRefused == 1 ? " serves a" : "s serve") certificate pair that failed its check until \(stillRefused == 1 ? "it is" : "they are") read again; connections without SNI get the development certificate",
                metadata: ["certificate": "development"])
        }
        do {
            let development = try DevelopmentAuthority(directory: state + "/dev-tls", hosts: hosts)
            let issued = development.issued
            let files = CertificateFiles(directory: state + "/dev-tls", chainPEM: issued.chainPEM, keyPEM: issued.keyPEM)
            // Only pairs waiting for their check, or refused and still served until their sites
            // are read again: the notices above say what is served.
            if hosts.isEmpty, pending + stillRefused > 0 {
                if issued.authorityCreated {
                    logger.notice(
                        "made a new development CA; clients that trusted an earlier one must trust this one",
                        metadata: ["ca": "\(issued.authorityPath)", "caPermits": "\(issued.permittedNames.joined(separator: ","))"])
                }
                return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath, development: development)
            }
            if automatic {
                let shown = Self.firstNamed(hosts).joined(separator: " ")
                let message =
                    "\(hosts.count) host\(hosts.count == 1 ? "" : "s") without a certificate of their own get automatic certificates (acme); "
                    + "until each is issued, and for connections without SNI, the development certificate is served: \(shown)"
                logger.notice(
                    "\(message)",
                    metadata: ["certificate": "development", "ca": "\(issued.authorityPath)"])
                Self.noteOmitted(issued, logger: logger)
                return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath, development: development)
            }
            // Loud, once per start: no client trusts this certificate unless told to, and Apple's
            // CDN never will, so a production server must not run on it unnoticed. With no site
            // yet, only connections without a served name get it: say that, not "0 hosts".
            let message =
                hosts.isEmpty
                ? "no site is configured yet: until one is, connections get the DEVELOPMENT certificate, which no client trusts "
                    + "unless told to (curl --cacert \(issued.authorityPath)). Add sites/<host>/apple-app-site-association, "
                    + "and a real certificate in sites/<host>/tls/ or a default pair in tls/"
                : "\(hosts.count) host\(hosts.count == 1 ? " is" : "s are") served with the DEVELOPMENT certificate (a leaf per host, issued on first use), which no client trusts "
                    + "unless told to (curl --cacert \(issued.authorityPath)) and Apple's CDN never will: \(Self.named(hosts)). "
                    + "Give each site a real certificate in sites/<host>/tls/cert.pem and key.pem, or a default pair covering them in tls/"
            logger.warning(
                "\(message)",
                metadata: [
                    "certificate": "development", "sites": "\(uncovered)", "ca": "\(issued.authorityPath)",
                    "caPermits": "\(issued.permittedNames.joined(separator: ","))",
                    "caExpires": "\(ConfigLoading.date(issued.authorityNotAfter))",
                    "leafExpires": "\(ConfigLoading.date(issued.leafNotAfter))",
                ])
            if issued.authorityCreated {
                logger.notice(
                    "made a new development CA; clients that trusted an earlier one must trust this one",
                    metadata: ["ca": "\(issued.authorityPath)", "caPermits": "\(issued.permittedNames.joined(separator: ","))"])
            }
            Self.noteOmitted(issued, logger: logger)
            return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath, development: development)
        } catch {
            logger.critical("cannot make a development certificate", metadata: ["error": "\(error)"])
            throw StartFailure()
        }
    }
}

extension Daemon {
    /// Says, once at start, which public names the development CA leaves out (past its bound).
    static func noteOmitted(_ issued: DevelopmentCertificate.Issued, logger: Logger) {
        guard !issued.omittedNames.isEmpty else { return }
        logger.warning(
            "the development CA permits at most \(DevelopmentCertificate.maximumPermittedPublicNames) public names; \(issued.omittedNames.count) are left out and get the default development certificate, which clients refuse for them: \(Self.named(issued.omittedNames)). Use names under .test or .localhost for development, or give these sites real certificates",
            metadata: ["certificate": "development", "ca": "\(issued.authorityPath)"])
    }

    /// After a reload: hosts now served with the development certificate that the CA (made at
    /// start, and never again while serving, since clients trust that one) does not permit. They
    /// get the default development leaf, which clients refuse for them; a restart makes a CA
    /// that permits them (and clients must trust it again). `directories`: the sites changed
    /// (nil: all). Says nothing when every such host is permitted.
    static func noteUnpermitted(
        _ snapshot: Snapshot, directories: [String]?, development: DevelopmentAuthority, logger: Logger
    ) {
        guard snapshot.defaultCertificate == nil else { return }
        var refused: [String] = []
        func check(_ site: ServedSite) {
            guard site.certificate == nil else { return }
            for host in site.hosts where !development.defaultCovers(host.name) && !development.permits(host.name) {
                refused.append(host.name)
            }
        }
        if let directories {
            for directory in directories { if let site = snapshot.sites[directory] { check(site) } }
        } else {
            for site in snapshot.sites.values { check(site) }
        }
        guard !refused.isEmpty else { return }
        logger.warning(
            "\(refused.count) host\(refused.count == 1 ? " is" : "s are") outside the development CA's name constraints and get the default development certificate, which clients refuse for them: \(Self.named(refused)). The CA is not made again while serving (clients trust this one); restart to make one that permits them, then trust the new ca.pem",
            metadata: ["certificate": "development", "ca": "\(development.issued.authorityPath)"])
    }
}

extension CertificateFiles {
    /// The same files as the TLS layer takes them.
    var source: TLSServer.CertificateSource {
        TLSServer.CertificateSource(identity: identity, chainPEM: chainPEM, keyPEM: keyPEM, label: directory)
    }
}
