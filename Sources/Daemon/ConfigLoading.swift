package import AASA
import Foundation
package import Glibc
import Logging
package import SiteStore
package import TLS

/// The loading code `serve` and `validate` share (nginx's `-t` runs the same code as the server):
/// scan the directory, then check that every certificate pair loads and matches.
package enum ConfigLoading {
    /// Whether certificate files load and match: nil when they do, else why not.
    package static func check(_ files: CertificateFiles) -> String? {
        do {
            try TLSContext.check(chainPEM: files.chainPEM, keyPEM: files.keyPEM, source: files.directory)
            return nil
        } catch {
            return error.description
        }
    }

    /// `automatic`: aasad.yaml turns ACME on, so hosts the default pair does not cover get
    /// automatic certificates rather than a refused handshake.
    /// Contests between aliases are reported as serve decided them, from the state directory
    /// aasad.yaml names (`servedFirstFile`), when it can be read.
    package static func load(_ directory: String) -> ConfigScan {
        let settings = ServerSettings.load(configDirectory: directory).0
        var scan = ConfigLoader.scan(directory: directory, servedFirstFile: servedFirstFile(state: settings.state))
        let automatic = settings.acme.directory != nil
        var checked: [String: TLSError?] = [:]
        func check(_ files: CertificateFiles) -> TLSError? {
            if let known = checked[files.identity] { return known }
            var result: TLSError?
            do {
                _ = try TLSContext(chainPEM: files.chainPEM, keyPEM: files.keyPEM, identity: files.identity, source: files.directory)
            } catch {
                result = error
            }
            checked[files.identity] = result
            return result
        }
        let now = Int64(time(nil))
        // The default pair's own findings once; whether it covers a site, per site that uses it.
        var defaultInfo: CertificateInfo?
        if let files = scan.defaultCertificate {
            if let error = check(files) {
                scan.problems.append(ConfigProblem(severity: .error, file: error.file ?? files.directory, message: error.reason))
            } else {
                let (info, problems) = inspect(files, now: now)
                defaultInfo = info
                scan.problems += problems
            }
        }
        for i in scan.sites.indices {
            // A name refused to the site is another's: its certificate need not cover it.
            let hosts = scan.sites[i].unrefusedHosts.map(\.name)
            if let files = scan.sites[i].certificate {
                if let error = check(files) {
                    scan.sites[i].problems.append(
                        ConfigProblem(severity: .error, file: error.file ?? files.directory, message: error.reason))
                    continue
                }
                let (info, problems) = inspect(files, now: now)
                scan.sites[i].problems += problems
                if let info, !info.covers(hosts) {
                    scan.sites[i].problems.append(
                        ConfigProblem(
                            severity: .error, file: files.directory + "/cert.pem",
                            message: Self.notCovered(info, hosts: hosts, what: "the site's certificate")))
                }
            } else if let files = scan.defaultCertificate, let info = defaultInfo, !info.covers(hosts), !automatic {
                // Served with the default pair (SNI picks it for a site without its own), which
                // clients refuse for a name it is not for.
                scan.sites[i].problems.append(
                    ConfigProblem(
                        severity: .error, file: scan.sites[i].directory,
                        message: Self.notCovered(
                            info, hosts: hosts, what: "the site has no tls/ pair and the default certificate (\(files.directory)/cert.pem)")
                            + "; give the site its own tls/cert.pem and tls/key.pem"))
            }
        }
        return scan
    }

    /// What `aasad validate` reads of a directory: a config directory (`load`), or a lone site
    /// directory (one holding the well-known files itself and no `sites/`), whose name need not
    /// be a host name since nothing is served from it.
    package static func load(directoryOrSite path: String) -> ConfigScan {
        let fm = FileManager.default
        let isSite = [ConfigLoader.aasaFileName, ConfigLoader.assetLinksFileName].contains { fm.fileExists(atPath: path + "/" + $0) }
        guard !fm.fileExists(atPath: path + "/sites") && isSite else { return load(path) }
        let trimmed = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
        let name = (trimmed as NSString).lastPathComponent
        let host = (try? HostName(parsing: name)) ?? (try! HostName(parsing: "localhost"))
        let site = ConfigLoader.loadSite(host: host, directory: trimmed, relative: name)
        return ConfigScan(root: (trimmed as NSString).deletingLastPathComponent, sites: [site], problems: [])
    }

    /// A lone file given to `aasad validate`: read bounded and validated as a Digital Asset Links
    /// list when named assetlinks.json, else as an apple-app-site-association file; `kind` is
    /// the file name it was taken for.
    package static func validate(file path: String) -> Result<
        (kind: String, valid: Bool, diagnostics: [Diagnostic]), ConfigLoader.ReadError
    > {
        let isAssetLinks = (path as NSString).lastPathComponent == ConfigLoader.assetLinksFileName
        let limit = isAssetLinks ? AssetLinks.maximumFileSize : AppSiteAssociation.maximumFileSize
        return ConfigLoader.readBounded(path: path, limit: limit).map { bytes in
            guard isAssetLinks else {
                let result = AppSiteAssociation.validate(bytes)
                return (ConfigLoader.aasaFileName, result.isValid, result.diagnostics)
            }
            let result = AssetLinks.validate(bytes)
            return (ConfigLoader.assetLinksFileName, result.isValid, result.diagnostics)
        }
    }

    /// The registry `aasad sites` reports: serve's load with serve's certificate check, run
    /// once, nothing logged, the files kept prepared as serve serves them and not their sources,
    /// and serve's record of which site held each alias first (read, never written), so that
    /// contests are reported as serve decided them.
    package static func sitesRegistry(config: String) -> SiteRegistry {
        var logger = Logger(label: "aasad", factory: { _ in SwiftLogNoOpLogHandler() })
        logger.logLevel = .critical
        let state = ServerSettings.load(configDirectory: config).0.state
        let registry = SiteRegistry(
            root: config, logger: logger, checkCertificate: check, servedFirstFile: servedFirstFile(state: state),
            storesServedFirst: false)
        registry.reloadAll()
        return registry
    }

    /// Where serve keeps which site held each alias first (`ServedFirst`), under its state directory.
    package static func servedFirstFile(state: String) -> String { state + "/served-first" }

    /// Days before its end from which a certificate is reported as expiring: ACME clients renew
    /// 30 days ahead, so a certificate this close to its end has missed its renewal.
    package static let expiryWarningDays: Int64 = 14

    /// A loadable pair's leaf: its validity period against `now`.
    package static func inspect(_ files: CertificateFiles, now: Int64) -> (CertificateInfo?, [ConfigProblem]) {
        let file = files.directory + "/cert.pem"
        let info: CertificateInfo
        do {
            info = try CertificateInfo(leafPEM: files.chainPEM)
        } catch {
            return (nil, [ConfigProblem(severity: .error, file: file, message: error.reason)])
        }
        let end = Self.date(info.notAfter)
        if info.notAfter <= now {
            return (info, [ConfigProblem(severity: .error, file: file, message: "the certificate expired on \(end); clients refuse it")])
        }
        if info.notBefore > now {
            return (
                info,
                [
                    ConfigProblem(
                        severity: .error, file: file,
                        message: "the certificate is not valid before \(Self.date(info.notBefore)); clients refuse it until then")
                ]
            )
        }
        let left = (info.notAfter - now) / 86_400
        if left < expiryWarningDays {
            return (
                info,
                [
                    ConfigProblem(
                        severity: .warning, file: file,
                        message: "the certificate expires on \(end), in \(left) day\(left == 1 ? "" : "s"); renew it")
                ]
            )
        }
        return (info, [])
    }

    package static func notCovered(_ info: CertificateInfo, hosts: [String], what: String) -> String {
        let missing = hosts.filter { !info.covers($0) }
        let names = info.dnsNames.isEmpty ? "no DNS names (subjectAltName)" : info.dnsNames.joined(separator: ", ")
        return "\(what) does not cover \(missing.joined(separator: ", ")); it is for \(names)"
    }

    /// A time as `2026-11-23 09:00:00 UTC`.
    package static func date(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return
            "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }
}

extension CertificateInfo {
    /// Whether every name is covered.
    package func covers(_ hosts: [String]) -> Bool { hosts.allSatisfy(covers) }
}
