import SiteStore
import TLS

/// The loading code `serve` and `validate` share (nginx's `-t` runs the same code as the server):
/// scan the directory, then check that every certificate pair loads and matches.
enum ConfigLoading {
    /// Whether certificate files load and match: nil when they do, else why not.
    static func check(_ files: CertificateFiles) -> String? {
        do {
            _ = try TLSContext(chainPEM: files.chainPEM, keyPEM: files.keyPEM, identity: files.identity, source: files.directory)
            return nil
        } catch {
            return error.description
        }
    }

    static func load(_ directory: String) -> ConfigScan {
        var scan = ConfigLoader.scan(directory: directory)
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
        for i in scan.sites.indices {
            if let files = scan.sites[i].certificate, let error = check(files) {
                scan.sites[i].problems.append(ConfigProblem(severity: .error, file: error.file ?? files.directory, message: error.reason))
            }
        }
        if let files = scan.defaultCertificate, let error = check(files) {
            scan.problems.append(ConfigProblem(severity: .error, file: error.file ?? files.directory, message: error.reason))
        }
        return scan
    }
}
