import Reactor
import Served

// A site's and the default certificate pair as the loader reads them (ConfigLoader.swift reads the
// rest of a site).
extension ConfigLoader {
    /// Reads `tls/cert.pem` and `tls/key.pem` under `directory` when that folder exists (`relative`
    /// names it in messages). Both files must be there; whether they load and match is the TLS
    /// layer's check.
    /// `unreadable` is set when the folder or a file is there but cannot be read (the
    /// caller then keeps the pair it had: a certificate is only gone when its files are).
    /// `site`: the name under `sites/` of the site whose `tls/` this is, kept by the pair rather
    /// than a path of its own. `in`: `directory` open (a site's `OpenedDirectory`): `tls/` and its
    /// files are then opened through it, one name walked each instead of the whole path (a
    /// linked `cert.pem`, as a Kubernetes Secret mounts it, followed from there).
    static func readCertificate(
        _ directory: String, _ relative: String, _ problems: inout [ConfigProblem], unreadable: inout Bool, site: String? = nil,
        in descriptor: Int32? = nil
    ) -> CertificateFiles? {
        let tls = Files.joined(directory, "/tls")
        var rules = FileRules()
        do throws(SystemError) {
            if let descriptor {
                // A link named tls/ is followed, as by its path: where it leads is the pair's
                // place (the TLS layer checks the pair against the site's names).
                rules.directory = (tls, try Files.openDirectoryLocation("tls", in: descriptor))
            } else if try Files.status(tls).kind != .directory {
                return nil
            }
        } catch {
            // Gone, or not a directory (ENOTDIR): no pair.
            if !error.isNoSuchFile {
                unreadable = true
                problems.append(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(error.reason)"))
            }
            return nil
        }
        defer { if let opened = rules.directory { Files.close(opened.descriptor) } }
        var files: [[UInt8]] = []
        for name in ["cert.pem", "key.pem"] {
            switch readFile(path: Files.joined(tls, "/", name), limit: CertificateFiles.maximumFileSize, rules: rules).map(\.bytes) {
            case .success(let bytes) where bytes.count > CertificateFiles.maximumFileSize:
                problems.append(
                    ConfigProblem(severity: .error, file: "\(relative)/\(name)", message: "larger than 1 MB; is it a certificate?"))
            case .success(let bytes):
                files.append(bytes)
            case .failure(let error):
                if !error.isMissing { unreadable = true }
                problems.append(
                    ConfigProblem(
                        severity: .error, file: "\(relative)/\(name)",
                        message: error.isMissing
                            ? "missing: a tls/ directory holds cert.pem (the chain, leaf first) and key.pem"
                            : "cannot read the file: \(error)"))
            }
        }
        guard files.count == 2 else { return nil }
        if let site, Files.joined("sites/", site, "/tls") == relative {
            return CertificateFiles(siteNamed: site, chainPEM: files[0], keyPEM: files[1])
        }
        return CertificateFiles(directory: relative, chainPEM: files[0], keyPEM: files[1])
    }
}
