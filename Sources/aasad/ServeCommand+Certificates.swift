import ArgumentParser
import Foundation
import Logging
import SiteStore
import TLS

/// serve's default certificate: the configured pair, the first site's, or the development one,
/// and keeping the TLS layer's default in step with the config directory.
extension ServeCommand {
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

    /// Hosts the development-certificate warning names; the rest are counted (a log line stays
    /// readable at 100,000 sites).
    static let hostsNamedInWarning = 10

    struct Certificates {
        var defaultSource: TLSServer.CertificateSource
        /// The CA to trust, when the development certificate is in use.
        var developmentAuthority: String?
    }

    /// The default certificate: the configured one; else, when some site has no certificate of its
    /// own, a development certificate for those sites; else the first site's own. `automatic`:
    /// ACME is on, so the development certificate only bridges the time until each host's
    /// automatic certificate is issued (and serves connections without SNI).
    static func certificates(snapshot: Snapshot, state: String, automatic: Bool = false, logger: Logger) throws -> Certificates {
        if let files = snapshot.defaultCertificate {
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        let sites = snapshot.sites.values.sorted { $0.directory < $1.directory }
        let uncovered = sites.filter { $0.certificate == nil }
        if uncovered.isEmpty, let files = sites.compactMap(\.certificate).first {
            logger.notice(
                "no default certificate (config/tls/); connections without SNI get the first site's",
                metadata: ["site": "\(files.directory)"])
            return Certificates(
                defaultSource: files.source,
                developmentAuthority: nil)
        }
        let hosts = uncovered.flatMap(\.hosts).map(\.name)
        do {
            let issued = try DevelopmentCertificate.issue(directory: state + "/dev-tls", hosts: hosts)
            let files = CertificateFiles(directory: state + "/dev-tls", chainPEM: issued.chainPEM, keyPEM: issued.keyPEM)
            let shown = hosts.sorted().prefix(Self.hostsNamedInWarning).joined(separator: " ")
            if automatic {
                let message =
                    "\(hosts.count) host\(hosts.count == 1 ? "" : "s") without a certificate of their own get automatic certificates (acme); "
                    + "until each is issued, and for connections without SNI, the development certificate is served: \(shown)"
                logger.notice(
                    "\(message)",
                    metadata: ["certificate": "development", "ca": "\(issued.authorityPath)"])
                return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath)
            }
            // Loud, once per start: no client trusts this certificate unless told to, and Apple's
            // CDN never will, so a production server must not run on it unnoticed.
            let more = hosts.count > Self.hostsNamedInWarning ? " (and \(hosts.count - Self.hostsNamedInWarning) more)" : ""
            let message =
                "\(hosts.count) host\(hosts.count == 1 ? " is" : "s are") served with the DEVELOPMENT certificate, which no client trusts "
                + "unless told to (curl --cacert \(issued.authorityPath)) and Apple's CDN never will: \(shown)\(more). "
                + "Give each site a real certificate in sites/<host>/tls/cert.pem and key.pem, or a default pair covering them in tls/"
            logger.warning(
                "\(message)",
                metadata: [
                    "certificate": "development", "sites": "\(uncovered.count)", "ca": "\(issued.authorityPath)",
                    "caPermits": "\(issued.permittedNames.joined(separator: ","))",
                    "caExpires": "\(ConfigLoading.date(issued.authorityNotAfter))",
                    "leafExpires": "\(ConfigLoading.date(issued.leafNotAfter))",
                ])
            if issued.authorityCreated {
                logger.notice(
                    "made a new development CA; clients that trusted an earlier one must trust this one",
                    metadata: ["ca": "\(issued.authorityPath)", "caPermits": "\(issued.permittedNames.joined(separator: ","))"])
            }
            return Certificates(defaultSource: files.source, developmentAuthority: issued.authorityPath)
        } catch {
            logger.critical("cannot make a development certificate", metadata: ["error": "\(error)"])
            throw ExitCode(1)
        }
    }
}

extension CertificateFiles {
    /// The same files as the TLS layer takes them.
    var source: TLSServer.CertificateSource {
        TLSServer.CertificateSource(identity: identity, chainPEM: chainPEM, keyPEM: keyPEM, label: directory)
    }
}
