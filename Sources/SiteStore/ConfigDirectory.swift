public import AASA
import Foundation
import Glibc

/// A finding about the config directory itself or one of its files, outside any JSON document:
/// a bad directory name, a missing file, an unreadable file, a host claimed twice.
public struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    public var severity: Diagnostic.Severity
    /// The file or directory, relative to the config directory (e.g. `sites/a.com`).
    public var file: String
    public var message: String

    public init(severity: Diagnostic.Severity, file: String, message: String) {
        self.severity = severity
        self.file = file
        self.message = message
    }

    public var description: String { "\(file): \(message)" }
}

/// One file of a site as read from disk, with its validation.
public struct SiteFile<Document: Sendable>: Sendable {
    /// Relative to the config directory, e.g. `sites/a.com/apple-app-site-association`.
    public var relativePath: String
    public var bytes: [UInt8]
    /// The file's time, seconds since the epoch: the later of its mtime and ctime (the basis of
    /// `Last-Modified`; see `ConfigLoader.readFile`).
    public var modified: Int64
    public var result: ValidationResult<Document>
}

/// A certificate chain and its private key, as PEM bytes read from a `tls/` directory.
public struct CertificateFiles: Sendable, Equatable {
    /// The directory they came from, relative to the config directory (e.g. `sites/a.com/tls`).
    public var directory: String
    /// Leaf first, then intermediates.
    public var chainPEM: [UInt8]
    public var keyPEM: [UInt8]

    /// Largest PEM file read: a chain of a few certificates is under 10 KB.
    public static let maximumFileSize = 1 << 20

    public init(directory: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        self.directory = directory
        self.chainPEM = chainPEM
        self.keyPEM = keyPEM
    }

    /// Identifies the pair by content: sites with the same bytes share one TLS context.
    public var identity: String { Digest.hex(Digest.sha256(chainPEM + [0] + keyPEM)) }
}

/// One site directory (or symlinked site) found under `sites/`.
public struct SiteSource: Sendable {
    public var host: HostName
    /// Relative to the config directory, e.g. `sites/links.example.com`.
    public var directory: String
    /// More names for the same site: symlinks in `sites/` pointing at this directory.
    public var aliases: [HostName]
    public var aasa: SiteFile<AppSiteAssociation>?
    public var assetLinks: SiteFile<AssetLinks>?
    /// The site's own certificate (`tls/cert.pem` and `tls/key.pem`), if it has one.
    public var certificate: CertificateFiles?
    /// What `site.yaml` says (more host names, cache policy).
    public var settings = SiteSettings()
    /// Problems with the site's directory (missing files, unreadable files, conflicts).
    public var problems: [ConfigProblem]
    /// Entries of the site that exist but could not be read (`apple-app-site-association`,
    /// `assetlinks.json`, `site.yaml`, `tls`): their last good versions stay in service, since
    /// only ENOENT means gone (issue 10).
    public var unreadable: Set<String> = []

    /// Every host name the site answers for: its directory's, its alias symlinks', site.yaml's.
    public var hosts: [HostName] { [host] + aliases + settings.aliases }

    /// The directory's own name, e.g. `links.example.com` for `sites/links.example.com`.
    public var name: String { String(directory.split(separator: "/").last ?? Substring(directory)) }

    /// True when everything the site has may be served.
    public var isValid: Bool {
        !problems.contains { $0.severity == .error } && aasa?.result.isValid != false && assetLinks?.result.isValid != false
    }
}

/// Everything found in a config directory: the sites and the problems. `aasad validate` prints it;
/// `serve` builds its snapshot from the valid sites (DESIGN.md: validate runs the load code of serve).
public struct ConfigScan: Sendable {
    public var root: String
    public var sites: [SiteSource]
    /// Problems not tied to one site (missing `sites/`, bad names in it).
    public var problems: [ConfigProblem]
    /// The default certificate (`tls/` at the top of the config directory), for sites without
    /// their own and for connections without SNI.
    public var defaultCertificate: CertificateFiles?

    public init(root: String, sites: [SiteSource], problems: [ConfigProblem], defaultCertificate: CertificateFiles? = nil) {
        self.root = root
        self.sites = sites
        self.problems = problems
        self.defaultCertificate = defaultCertificate
    }

    public var isValid: Bool {
        !problems.contains { $0.severity == .error } && sites.allSatisfy(\.isValid)
    }

    /// The site that answers for a host: an exact name (or alias) first, then the wildcard with the
    /// longest suffix (DESIGN.md "What it serves").
    public func site(for host: String) -> SiteSource? {
        let host = host.lowercased()
        if let exact = sites.first(where: { $0.hosts.contains { !$0.isWildcard && $0.name == host } }) {
            return exact
        }
        var best: (SiteSource, Int)?
        for site in sites {
            for name in site.hosts where name.isWildcard && name.covers(host) {
                let length = name.name.utf8.count
                if length > (best?.1 ?? -1) { best = (site, length) }
            }
        }
        return best?.0
    }
}

/// Reads a config directory (DESIGN.md "Config directory").
public enum ConfigLoader {
    public static let aasaFileName = "apple-app-site-association"
    public static let assetLinksFileName = "assetlinks.json"
    /// Names a site directory may hold besides the served files.
    static let knownSiteEntries: Set<String> = [aasaFileName, assetLinksFileName, "site.yaml", "tls"]

    /// Scans `root/sites/`, reading and validating every site's files.
    public static func scan(directory root: String) -> ConfigScan {
        var scan = ConfigScan(root: root, sites: [], problems: [])
        scan.defaultCertificate = readCertificate(root, "tls", &scan.problems)
        let fm = FileManager.default
        let sitesPath = root + "/sites"
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: sitesPath, isDirectory: &isDirectory), isDirectory.boolValue else {
            scan.problems.append(
                ConfigProblem(
                    severity: .error, file: "sites",
                    message: "no sites/ directory; create sites/<host>/apple-app-site-association for each host"))
            return scan
        }
        let names: [String]
        do {
            names = try fm.contentsOfDirectory(atPath: sitesPath).sorted()
        } catch {
            scan.problems.append(ConfigProblem(severity: .error, file: "sites", message: "cannot list the directory: \(describe(error))"))
            return scan
        }

        var aliasLinks: [(name: String, host: HostName, target: String)] = []
        let siteNames = Set(names.filter { examineKind(sitesPath, $0) == .directory })
        for name in names {
            switch examine(sitesPath: sitesPath, name: name, isSite: { siteNames.contains($0) }) {
            case .site(let site): scan.sites.append(site)
            case .alias(let host, let target): aliasLinks.append((name, host, target))
            case .problem(let problem), .unreadable(let problem): scan.problems.append(problem)
            case .ignored, .missing: break
            }
        }

        for link in aliasLinks {
            guard let i = scan.sites.firstIndex(where: { $0.directory == "sites/\(link.target)" }) else {
                scan.problems.append(
                    ConfigProblem(severity: .error, file: "sites/\(link.name)", message: "an alias of \(link.target), which is not a site"))
                continue
            }
            scan.sites[i].aliases.append(link.host)
        }
        reportConflicts(&scan)
        return scan
    }

    /// A host claimed by two sites is an error on both: serving either would be a silent pick.
    private static func reportConflicts(_ scan: inout ConfigScan) {
        var owners: [HostName: [Int]] = [:]
        for (i, site) in scan.sites.enumerated() {
            for host in Set(site.hosts) { owners[host, default: []].append(i) }
        }
        for (host, sites) in owners where sites.count > 1 {
            let dirs = sites.map { scan.sites[$0].directory }
            for i in sites {
                scan.sites[i].problems.append(
                    ConfigProblem(
                        severity: .error, file: scan.sites[i].directory,
                        message: "the host \(host) is claimed by \(dirs.joined(separator: " and ")); keep it in one site"))
            }
        }
    }

    /// What one name under `sites/` is.
    public enum Entry: Sendable {
        /// A site directory (or a symlink to a directory outside `sites/`), read and validated.
        case site(SiteSource)
        /// A symlink to a sibling site directory: another name for that site.
        case alias(HostName, target: String)
        /// A name that cannot be a site (bad host name, a plain file, a dangling symlink).
        case problem(ConfigProblem)
        /// Hidden entries (Kubernetes' `..data` and its timestamped directories among them).
        case ignored
        /// Nothing by that name (any more).
        case missing
        /// Something is there but cannot be examined (EACCES, EMFILE, EIO...): whatever it was
        /// before goes on being served, with this problem reported.
        case unreadable(ConfigProblem)
    }

    enum Kind: Equatable {
        case directory, other, missing
        /// stat failed with this errno, other than ENOENT and ENOTDIR.
        case unreadable(Int32)
    }

    /// Whether a name is a directory (following symlinks), something else, absent, or cannot
    /// be told (FileManager.fileExists says "absent" for a path it may not search: EACCES).
    static func examineKind(_ sitesPath: String, _ name: String) -> Kind {
        var info = stat()
        guard stat(sitesPath + "/" + name, &info) == 0 else {
            let code = errno
            return isMissing(code) ? .missing : .unreadable(code)
        }
        return info.st_mode & S_IFMT == S_IFDIR ? .directory : .other
    }

    /// The errors that mean "nothing by that name": the only ones that make a file count as
    /// deleted. Any other (EACCES after `--user`, EMFILE, EIO) leaves the last good version.
    static func isMissing(_ code: Int32) -> Bool { code == ENOENT || code == ENOTDIR }

    /// The names of a site directory whose last good versions an unreadable directory keeps.
    static let siteEntries: Set<String> = [aasaFileName, assetLinksFileName, "site.yaml", "tls"]

    /// Examines one name under `sites/`: the same question for a full scan and for the watcher's
    /// single-site reloads. `isSite` tells whether a sibling name is a site directory.
    public static func examine(sitesPath: String, name: String, isSite: (String) -> Bool) -> Entry {
        if name.hasPrefix(".") { return .ignored }
        let relative = "sites/\(name)"
        let full = sitesPath + "/" + name
        let fm = FileManager.default
        var info = stat()
        if lstat(full, &info) != 0 {
            let code = errno
            if isMissing(code) { return .missing }
            return .unreadable(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(errorName(code))"))
        }
        let host: HostName
        do {
            host = try HostName(parsing: name)
        } catch {
            return .problem(ConfigProblem(severity: .error, file: relative, message: "not a valid site name: \(error)"))
        }
        // A symlink to a sibling site directory is an alias of that site.
        if let target = try? fm.destinationOfSymbolicLink(atPath: full) {
            let resolved = URL(fileURLWithPath: target.hasPrefix("/") ? target : sitesPath + "/" + target).standardizedFileURL
            if resolved.deletingLastPathComponent().path == URL(fileURLWithPath: sitesPath).standardizedFileURL.path,
                resolved.lastPathComponent != name, isSite(resolved.lastPathComponent)
            {
                return .alias(host, target: resolved.lastPathComponent)
            }
        }
        switch examineKind(sitesPath, name) {
        case .unreadable(let code):
            return .unreadable(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(errorName(code))"))
        case .missing:
            return .problem(ConfigProblem(severity: .error, file: relative, message: "a symlink whose target does not exist"))
        case .other:
            return .problem(
                ConfigProblem(
                    severity: .error, file: relative,
                    message: "not a directory; each site is a directory holding its apple-app-site-association"))
        case .directory:
            var site = loadSite(host: host, directory: full, relative: relative)
            if host.name != name && host.name + "." != name {
                site.problems.append(
                    ConfigProblem(
                        severity: .warning, file: relative,
                        message: "served as \(host.name); host names are lower case, so name the directory that way"))
            }
            return .site(site)
        }
    }

    /// Reads and validates one site directory.
    public static func loadSite(host: HostName, directory: String, relative: String) -> SiteSource {
        var site = SiteSource(host: host, directory: relative, aliases: [], aasa: nil, assetLinks: nil, certificate: nil, problems: [])
        let fm = FileManager.default
        let entries = (try? fm.contentsOfDirectory(atPath: directory)) ?? []
        for entry in entries.sorted() where !knownSiteEntries.contains(entry) && (!entry.hasPrefix(".") || entry == ".well-known") {
            let message: String
            switch entry {
            case "apple-app-site-association.json":
                message = "not served: the file must be named apple-app-site-association, without .json"
            case ".well-known", "well-known":
                message = "not served: put apple-app-site-association directly in the site directory"
            default:
                message = "ignored: a site directory holds apple-app-site-association, assetlinks.json, site.yaml and tls/"
            }
            site.problems.append(ConfigProblem(severity: .warning, file: "\(relative)/\(entry)", message: message))
        }
        if let file = readSiteFile(directory, relative, aasaFileName, AppSiteAssociation.maximumFileSize, &site) {
            site.aasa = SiteFile(
                relativePath: file.path, bytes: file.bytes, modified: file.modified, result: AppSiteAssociation.validate(file.bytes))
        }
        if let file = readSiteFile(directory, relative, assetLinksFileName, AssetLinks.maximumFileSize, &site) {
            site.assetLinks = SiteFile(
                relativePath: file.path, bytes: file.bytes, modified: file.modified, result: AssetLinks.validate(file.bytes))
        }
        var certificateUnreadable = false
        site.certificate = readCertificate(directory, relative + "/tls", &site.problems, unreadable: &certificateUnreadable)
        if certificateUnreadable { site.unreadable.insert("tls") }
        switch readBounded(path: directory + "/site.yaml", limit: SiteSettings.maximumFileSize) {
        case .success(let bytes) where bytes.count > SiteSettings.maximumFileSize:
            site.problems.append(ConfigProblem(severity: .error, file: "\(relative)/site.yaml", message: "larger than 64 KB"))
        case .success(let bytes):
            let (settings, problems) = SiteSettings.parse(String(decoding: bytes, as: UTF8.self), file: "\(relative)/site.yaml")
            site.settings = settings
            site.problems += problems
        case .failure(let error) where error.isMissing:
            break  // optional
        case .failure(let error):
            site.unreadable.insert("site.yaml")
            site.problems.append(ConfigProblem(severity: .error, file: "\(relative)/site.yaml", message: "cannot read the file: \(error)"))
        }
        if site.aasa == nil && site.assetLinks == nil && !site.problems.contains(where: { $0.severity == .error }) {
            site.problems.append(
                ConfigProblem(
                    severity: .error, file: relative, message: "the site has neither apple-app-site-association nor assetlinks.json"))
        }
        return site
    }

    /// Reads a file if it exists. Reads at most `limit + 1` bytes, so an oversized file is
    /// reported by the validator without being loaded whole. A file that is there but cannot be
    /// read is a problem and is marked unreadable on the site (its last good version stays).
    private static func readSiteFile(
        _ directory: String, _ relative: String, _ name: String, _ limit: Int, _ site: inout SiteSource
    ) -> (path: String, bytes: [UInt8], modified: Int64)? {
        let relativePath = "\(relative)/\(name)"
        switch readFile(path: directory + "/" + name, limit: limit) {
        case .success(let file):
            return (relativePath, file.bytes, file.modified)
        case .failure(let error) where error.isMissing:
            return nil
        case .failure(let error):
            site.unreadable.insert(name)
            site.problems.append(ConfigProblem(severity: .error, file: relativePath, message: "cannot read the file: \(error)"))
            return nil
        }
    }

    /// Reads `tls/cert.pem` and `tls/key.pem` under `directory` when that folder exists (`relative`
    /// names it in messages). Both files must be there; whether they load and match is the TLS
    /// layer's check.
    static func readCertificate(_ directory: String, _ relative: String, _ problems: inout [ConfigProblem]) -> CertificateFiles? {
        var unreadable = false
        return readCertificate(directory, relative, &problems, unreadable: &unreadable)
    }

    /// The same; `unreadable` is set when the folder or a file is there but cannot be read (the
    /// caller then keeps the pair it had: a certificate is only gone when its files are).
    static func readCertificate(
        _ directory: String, _ relative: String, _ problems: inout [ConfigProblem], unreadable: inout Bool
    ) -> CertificateFiles? {
        let tls = directory + "/tls"
        var info = stat()
        guard stat(tls, &info) == 0 else {
            let code = errno
            if !isMissing(code) {
                unreadable = true
                problems.append(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(errorName(code))"))
            }
            return nil
        }
        guard info.st_mode & S_IFMT == S_IFDIR else { return nil }
        var files: [[UInt8]] = []
        for name in ["cert.pem", "key.pem"] {
            switch readBounded(path: tls + "/" + name, limit: CertificateFiles.maximumFileSize) {
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
        return CertificateFiles(directory: relative, chainPEM: files[0], keyPEM: files[1])
    }

    /// Why a file could not be read.
    public struct ReadError: Error, CustomStringConvertible, Sendable {
        public var description: String
        /// The errno of the call that failed, when one did.
        public var code: Int32?

        public init(description: String, code: Int32? = nil) {
            self.description = description
            self.code = code
        }

        /// ENOENT or ENOTDIR: there is no such file, so whatever it was is gone. Every other
        /// error (EACCES, EMFILE, EIO, a directory where a file should be) leaves it in place.
        public var isMissing: Bool { code.map(ConfigLoader.isMissing) ?? false }
    }

    /// Reads up to `limit + 1` bytes of a file: one byte more than allowed tells "too large" apart
    /// from "exactly at the limit" without reading a huge file.
    public static func readBounded(path: String, limit: Int) -> Result<[UInt8], ReadError> {
        readFile(path: path, limit: limit).map(\.bytes)
    }

    /// Reads up to `limit + 1` bytes of a regular file, with its time.
    ///
    /// The time is the later of the file's mtime and ctime (whole seconds), so that it moves
    /// whenever the file is replaced: `rsync -a`, `cp -p` and `touch -d` can set an mtime back
    /// (a roll-back to an older version), but not the ctime, which the kernel sets to now on
    /// every write, rename into place or attribute change. Last-Modified is built on it (with
    /// SiteRegistry's rule that a new content never gets an earlier or equal one), so a client's
    /// If-Modified-Since never matches a changed file (RFC 9110 §13.1.3). A chmod moves the
    /// ctime too; SiteRegistry keeps the Last-Modified of unchanged content.
    ///
    /// Opened with O_NONBLOCK and checked with fstat on the same descriptor: a FIFO or device put
    /// in the config directory is refused instead of blocking the reloader, and the time and the
    /// bytes are those of one file even when it is replaced meanwhile.
    public static func readFile(path: String, limit: Int) -> Result<(bytes: [UInt8], modified: Int64), ReadError> {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            return .failure(ReadError(description: errorName(code), code: code))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            return .failure(ReadError(description: errorName(code), code: code))
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .failure(ReadError(description: "a directory, not a file"))
        default: return .failure(ReadError(description: "not a regular file"))
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= limit {
            let wanted = min(chunk.count, limit + 1 - bytes.count)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, wanted) }
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                return .failure(ReadError(description: errorName(code), code: code))
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return .success((bytes, max(Int64(info.st_mtim.tv_sec), Int64(info.st_ctim.tv_sec))))
    }

    /// `permission denied (EACCES)`: the system's words and the name to search for.
    static func errorName(_ code: Int32) -> String {
        let names: [Int32: String] = [
            EACCES: "EACCES", EPERM: "EPERM", EMFILE: "EMFILE", ENFILE: "ENFILE", EIO: "EIO", ENOENT: "ENOENT", ENOTDIR: "ENOTDIR",
            ELOOP: "ELOOP", ENAMETOOLONG: "ENAMETOOLONG", ENOMEM: "ENOMEM", EISDIR: "EISDIR",
        ]
        let text = String(cString: strerror(code))
        let lowered = text.prefix(1).lowercased() + text.dropFirst()
        return lowered + " (\(names[code] ?? "errno \(code)"))"
    }

    static func describe(_ error: any Error) -> String {
        (error as NSError).localizedDescription
    }
}
