import AASA
import Foundation
import HTTPCore
import Hashing
import Reactor
import Served

/// Reads a config directory (its layout: README.md and docs/architecture.md).
public enum ConfigLoader {
    public static let aasaFileName = "apple-app-site-association"
    public static let assetLinksFileName = "assetlinks.json"
    /// Names a site directory may hold besides the served files.
    static let knownSiteEntries: Set<String> = [aasaFileName, assetLinksFileName, "site.yaml", "tls", allowedChildrenFileName]
    /// A `per-name` wildcard site's allow file: the child names (or first-label patterns) that get
    /// a certificate of their own (docs/acme.md, "Wildcard children"); read by the certificate
    /// approvals, not by the loader.
    public static let allowedChildrenFileName = "allowed-children"

    /// Scans `root/sites/` through the registry `serve` loads it with (one load path: the
    /// same aliases, conflicts and refusals), keeping every site's files and findings.
    /// `servedFirstFile`: serve's record of which site held each alias first, read if it can be.
    public static func scan(directory root: String, servedFirstFile: String? = nil) -> ConfigScan {
        let registry = SiteRegistry.inspecting(root: root, servedFirstFile: servedFirstFile)
        registry.reloadAll()
        return registry.scan()
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
        /// stat failed for a reason other than ENOENT and ENOTDIR (this one, e.g.
        /// `permission denied (EACCES)`).
        case unreadable(String)
    }

    /// Whether a name is a directory (following symlinks), something else, absent, or cannot
    /// be told (FileManager.fileExists says "absent" for a path it may not search: EACCES).
    static func examineKind(_ sitesPath: String, _ name: String) -> Kind {
        do {
            return try Files.status(sitesPath + "/" + name).kind == .directory ? .directory : .other
        } catch {
            return error.isNoSuchFile ? .missing : .unreadable(error.reason)
        }
    }

    /// The names of a site directory whose last good versions an unreadable directory keeps.
    static let siteEntries: Set<String> = [aasaFileName, assetLinksFileName, "site.yaml", "tls"]

    /// The most entries a site directory's listing takes: its files, `tls/` and
    /// `SiteSettings.maximumPages` pages fit several times over. A directory with more is not
    /// listed (`loadSite` then tries each file a site may hold), so that a tenant cannot make a
    /// reload hold, sort and warn about a million names.
    public static let maximumListedEntries = 64
    /// The ignored entries of a site that are each named in a warning; the rest are counted.
    static let maximumIgnoredNamed = 8

    /// Examines one name under `sites/`: the same question for a full scan and for the watcher's
    /// single-site reloads. `isSite` tells whether a sibling name is a site directory.
    /// `known`: contents whose verdict is known (serve's loads); nil validates everything and
    /// keeps every finding (the reporting commands).
    /// `options`: the server's serving options, to prepare each valid file for serving as it is
    /// read (`SiteFile.prepared`); nil prepares nothing.
    /// `shared`: the contents the registry serves already; a file with the same bytes takes that
    /// content and lets its own buffer go at once (`siteFile`).
    /// `sites`: `sitesPath` open as a directory (`Files.openDirectory`), when the caller has it.
    /// `configRoot`: `configRoot(of: sitesPath)`, when the caller has it (a batch works it out
    /// once for all its names rather than once per site).
    /// `watchTLS`: called with the name before a site's `tls/` is read, when its listing shows one
    /// or it could not be listed (a start's first load: `ConfigWatcher.watchTLS(ofSite:)`).
    public static func examine(
        sitesPath: String, name: String, isSite: (String) -> Bool, known: KnownValid? = nil, options: ServingOptions? = nil,
        shared: ContentCache? = nil, sites: Int32? = nil, configRoot: String? = nil, watchTLS: (@Sendable (String) -> Void)? = nil
    ) -> Entry {
        if name.hasPrefix(".") { return .ignored }
        let relative = Files.joined("sites/", name)
        let full = Files.joined(sitesPath, "/", name)
        let read = { (host: HostName, opened: OpenedDirectory?, plainDirectory: Bool) -> Entry in
            siteEntry(
                host: host, name: name, directory: full, relative: relative, known: known, options: options,
                configRoot: configRoot ?? Self.configRoot(of: sitesPath), plainDirectory: plainDirectory, shared: shared,
                opened: opened, watchTLS: watchTLS)
        }
        // A plain directory of a valid name, nearly every name, is opened at once through `sites`
        // without following a link: the kernel says it is a directory (no lstat) and its own files
        // are opened in that very directory, by names relative to it, whatever its path is swapped
        // for meanwhile, its `tls/` too; a link among them is followed from there, under the file
        // rules. A link, a file, a bad name (which might hold a `/`), a name gone or one that
        // cannot be opened is looked at below, as a path.
        if let sites, case .success(let host) = parsedHost(name, relative),
            let descriptor = try? Files.openDirectoryNotFollowing(name, in: sites)
        {
            defer { Files.close(descriptor) }
            let names = try? Files.entries(in: descriptor, interned: internedNames, limit: maximumListedEntries + 1)
            return read(host, OpenedDirectory(descriptor: descriptor, names: names), true)
        }
        let fm = FileManager.default
        let entry: FileStatus
        do {
            entry = try Files.linkStatus(full)
        } catch {
            if error.isNoSuchFile { return .missing }
            return .unreadable(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(error.reason)"))
        }
        let host: HostName
        switch parsedHost(name, relative) {
        case .success(let parsed): host = parsed
        case .failure(let invalid): return .problem(invalid.problem)
        }
        // A symlink to a sibling site directory is an alias of that site.
        if entry.kind == .symbolicLink, let target = try? fm.destinationOfSymbolicLink(atPath: full) {
            let resolved = URL(fileURLWithPath: target.hasPrefix("/") ? target : sitesPath + "/" + target).standardizedFileURL
            if resolved.deletingLastPathComponent().path == URL(fileURLWithPath: sitesPath).standardizedFileURL.path,
                resolved.lastPathComponent != name, isSite(resolved.lastPathComponent)
            {
                return .alias(host, target: resolved.lastPathComponent)
            }
        }
        // What lstat said is the answer, but for a symlink: then where it leads.
        let kind: Kind =
            switch entry.kind {
            case .symbolicLink: examineKind(sitesPath, name)
            case .directory: .directory
            case .regular, .other: .other
            }
        switch kind {
        case .unreadable(let reason):
            return .unreadable(ConfigProblem(severity: .error, file: relative, message: "cannot be examined: \(reason)"))
        case .missing:
            return .problem(ConfigProblem(severity: .error, file: relative, message: "a symlink whose target does not exist"))
        case .other:
            return .problem(
                ConfigProblem(
                    severity: .error, file: relative,
                    message: "not a directory; each site is a directory holding its apple-app-site-association"))
        case .directory:
            // With `sites` open, the open above refused it an instant ago: a name being swapped,
            // whose files are checked as a link's (where each leads), not trusted as plain.
            return read(host, nil, entry.kind == .directory && sites == nil)
        }
    }

    /// The host a name under `sites/` serves, or why it cannot be one.
    private static func parsedHost(_ name: String, _ relative: String) -> Result<HostName, InvalidName> {
        do {
            return .success(try HostName(parsing: name))
        } catch {
            let problem = ConfigProblem(severity: .error, file: relative, message: "not a valid site name: \(error)")
            return .failure(InvalidName(problem: problem))
        }
    }

    /// Why a name under `sites/` cannot be a site's.
    private struct InvalidName: Error {
        var problem: ConfigProblem
    }

    /// `examine`'s answer for a site directory: `loadSite`, with a word on a name not in lower
    /// case.
    private static func siteEntry(
        host: HostName, name: String, directory: String, relative: String, known: KnownValid?, options: ServingOptions?,
        configRoot: String, plainDirectory: Bool, shared: ContentCache?, opened: OpenedDirectory?,
        watchTLS: (@Sendable (String) -> Void)?
    ) -> Entry {
        var site = loadSite(
            host: host, directory: directory, relative: relative, known: known, options: options, configRoot: configRoot,
            plainDirectory: plainDirectory, shared: shared, opened: opened, siteName: name, watchTLS: watchTLS)
        if host.name != name && host.name + "." != name {
            site.problems.append(
                ConfigProblem(
                    severity: .warning, file: relative,
                    message: "served as \(host.name); host names are lower case, so name the directory that way"))
        }
        return .site(site)
    }

    /// Reads and validates one site directory. `configRoot`: the config directory it is in (nil
    /// for a lone site directory), whose `tls/` folders no site file is read from.
    /// `plainDirectory`: the site is a directory under `sites/`, not a symbolic link to one (see
    /// `FileRules.plainDirectory`).
    public static func loadSite(
        host: HostName, directory: String, relative: String, known: KnownValid? = nil, options: ServingOptions? = nil,
        configRoot: String? = nil, plainDirectory: Bool = false, shared: ContentCache? = nil
    ) -> SiteSource {
        loadSite(
            host: host, directory: directory, relative: relative, known: known, options: options, configRoot: configRoot,
            plainDirectory: plainDirectory, shared: shared, opened: nil, siteName: nil)
    }

    /// A site directory open for reading: its descriptor, through which its own
    /// files and its `tls/` are opened (`FileRules.directory`), and the names it listed (nil when it could
    /// not be listed).
    struct OpenedDirectory {
        var descriptor: Int32
        var names: [String]?
    }

    /// `loadSite`, reading the site through `opened` when it is open already; `siteName`: the
    /// site's name under `sites/`, which its certificate pair keeps (`CertificateFiles`);
    /// `watchTLS`: called with `siteName` before its `tls/` is read (`examine`).
    static func loadSite(
        host: HostName, directory: String, relative: String, known: KnownValid?, options: ServingOptions?,
        configRoot: String?, plainDirectory: Bool, shared: ContentCache?, opened: OpenedDirectory?, siteName: String?,
        watchTLS: (@Sendable (String) -> Void)? = nil
    ) -> SiteSource {
        var site = SiteSource(host: host, directory: relative, aliases: [], aasa: nil, assetLinks: nil, certificate: nil, problems: [])
        // The listing says which of the site's files exist, so that a missing one costs no failed
        // open (most sites have no site.yaml, assetlinks.json or tls/). A name created after the
        // listing raises its own watcher event and a read of its own. When the directory cannot
        // be listed, each file is tried, and tells itself why it cannot be read.
        var listed = opened.map(\.names) ?? (try? Files.entries(of: directory, limit: maximumListedEntries + 1))
        if let names = listed, names.count > maximumListedEntries {
            // A tenant's directory of a million files costs every reload of it one listing
            // buffer, never a million names, their sort and a warning each.
            listed = nil
            site.problems.append(
                ConfigProblem(
                    severity: .warning, file: relative,
                    message:
                        "holds more than \(maximumListedEntries) entries, so it is not listed: its files are opened by name, and stray or misnamed files in it are not reported"
                ))
        }
        let entries = listed ?? []
        // A name listed in another case may be the file on a case-insensitive filesystem (vfat,
        // SMB, ext4 with casefold): it is tried, and an open of the exact name says.
        func mayExist(_ name: String) -> Bool {
            guard let listed else { return true }
            return listed.contains { $0 == name || ($0.utf8.count == name.utf8.count && $0.lowercased() == name.lowercased()) }
        }
        // Every file a site names is a regular file outside every tls/ folder, checked on the
        // descriptor: a symlink or hard link from site.yaml, the association files or the page
        // to a key must never be read, whatever would then quote or serve it.
        var rules = FileRules(siteDirectory: directory, configRoot: configRoot, plainDirectory: plainDirectory)
        rules.directory = opened.map { (directory, $0.descriptor) }
        // site.yaml first: it names the page, which is then one of the site's files.
        if mayExist("site.yaml") { readSettings(directory, relative, &site, rules) }
        let prepareWith = options.map { options in
            var options = options
            if let cacheControl = site.settings.cacheControl { options.cacheControl = cacheControl }
            return options
        }
        let pageNames = Set(site.settings.pageNames)
        var ignored = 0
        for entry in entries.sorted()
        where !knownSiteEntries.contains(entry) && !pageNames.contains(entry) && (!entry.hasPrefix(".") || entry == ".well-known") {
            let message: String
            switch entry {
            case "apple-app-site-association.json":
                message = "not served: the file must be named apple-app-site-association, without .json"
            case ".well-known", "well-known":
                message = "not served: put apple-app-site-association directly in the site directory"
            default:
                // A few named, then a count: the warnings are kept with the site.
                ignored += 1
                guard ignored <= maximumIgnoredNamed else { continue }
                message =
                    "ignored: a site directory holds apple-app-site-association, assetlinks.json, site.yaml, tls/ and the pages site.yaml names"
            }
            site.problems.append(ConfigProblem(severity: .warning, file: "\(relative)/\(entry)", message: message))
        }
        if ignored > maximumIgnoredNamed {
            site.problems.append(
                ConfigProblem(
                    severity: .warning, file: relative, message: "\(ignored - maximumIgnoredNamed) more entries ignored, not named here"))
        }
        // The association files may be hard links (`rsync --link-dest` and `cp -al` deploys make
        // them): only JSON of their shape is ever served, and a key is not JSON (a PEM file
        // fails at its first byte, and no JSON error quotes more than one byte of it).
        if mayExist(aasaFileName),
            let file = readSiteFile(directory, relative, aasaFileName, AppSiteAssociation.maximumFileSize, &site, rules)
        {
            site.aasa = siteFile(file, .aasa, known, prepareWith, shared, AppSiteAssociation.validate)
        }
        if mayExist(assetLinksFileName),
            let file = readSiteFile(directory, relative, assetLinksFileName, AssetLinks.maximumFileSize, &site, rules)
        {
            site.assetLinks = siteFile(file, .assetLinks, known, prepareWith, shared, AssetLinks.validate)
        }
        readPages(directory, relative, &site, rules)
        var certificateUnreadable = false
        if mayExist("tls") {
            // Watched before it is read: a pair changed after the read raises an event.
            if let watchTLS, let siteName { watchTLS(siteName) }
            site.certificate = readCertificate(
                directory, Files.joined(relative, "/tls"), &site.problems, unreadable: &certificateUnreadable, site: siteName,
                in: opened?.descriptor)
        }
        if certificateUnreadable { site.unreadable.insert("tls") }
        if site.aasa == nil && site.assetLinks == nil && !site.problems.contains(where: { $0.severity == .error }) {
            site.problems.append(
                ConfigProblem(
                    severity: .error, file: relative, message: "the site has neither apple-app-site-association nor assetlinks.json"))
        }
        return site
    }

    /// A file read from a site, validated unless `known` holds its content's verdict already,
    /// and prepared for serving with `options` when valid. A file whose bytes are a content in
    /// `shared` (another site serves them, or another read of the batch prepared them:
    /// `ContentCache.batch`, all a start has) takes that content and its body, and its own buffer
    /// goes here, on the reading thread: no copy is kept for the registry to drop.
    private static func siteFile<D>(
        _ file: (path: String, bytes: [UInt8], modified: Int64), _ kind: KnownValid.Kind, _ known: KnownValid?,
        _ options: ServingOptions?, _ shared: ContentCache?, _ validate: ([UInt8]) -> ValidationResult<D>
    ) -> SiteFile<D> {
        guard let known else {
            return SiteFile(relativePath: file.path, bytes: file.bytes, modified: file.modified, result: validate(file.bytes))
        }
        let hash = Digest.sha256(file.bytes)
        let digest = Hex.string(hash)
        let content = shared?.content(digest: digest, bytes: file.bytes)
        let bytes = content?.body ?? file.bytes
        var read: SiteFile<D>
        if known.contains(kind, sha256: hash) {
            read = SiteFile(
                relativePath: file.path, bytes: bytes, modified: file.modified,
                result: ValidationResult(document: nil, diagnostics: []),
                sha256: hash, validatedEarlier: true)
            read.verdictKnown = true
        } else {
            // Serve keeps no parsed model (the registry drops each site's source once applied),
            // but a full load holds every site's source until it is applied: the model of a valid
            // file, and the JSON under it, is dropped here on the reading core, as a verdict known
            // from earlier holds none. At 10,000 sites they were 77 of a first start's 110 MB of
            // peak heap (heaptrack), which the process kept as RSS.
            let result = validate(bytes)
            read = SiteFile(
                relativePath: file.path, bytes: bytes, modified: file.modified,
                result: result.isValid ? ValidationResult(document: nil, diagnostics: result.diagnostics) : result, sha256: hash,
                validatedEarlier: result.isValid)
        }
        if let options, read.isValid {
            // The heads, made here on every core rather than by the registry on its one thread
            // (the gzip form is made later, after a request asks for it); an option that cannot
            // make a head leaves it to the registry, which reports it.
            // Kept for the batch's other reads, or the one another thread kept first, with its buffer.
            let made = content ?? PreparedContent(body: bytes, sha256: hash, digest: digest)
            let served = shared?.keep(made) ?? made
            read.bytes = served.body
            read.prepared = try? PreparedFile(content: served, modified: file.modified, options: options)
        }
        return read
    }

    /// Reads and parses `site.yaml` when there is one.
    private static func readSettings(_ directory: String, _ relative: String, _ site: inout SiteSource, _ rules: FileRules) {
        switch readFile(path: directory + "/site.yaml", limit: SiteSettings.maximumFileSize, rules: rules).map(\.bytes) {
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
    }

    /// Reads a file if it exists. Reads at most `limit + 1` bytes, so an oversized file is
    /// reported by the validator without being loaded whole. A file that is there but cannot be
    /// read is a problem and is marked unreadable on the site (its last good version stays).
    static func readSiteFile(
        _ directory: String, _ relative: String, _ name: String, _ limit: Int, _ site: inout SiteSource, _ rules: FileRules
    ) -> (path: String, bytes: [UInt8], modified: Int64)? {
        let relativePath = Files.joined(relative, "/", name)
        switch readFile(path: Files.joined(directory, "/", name), limit: limit, rules: rules) {
        case .success(let file):
            return (relativePath, file.bytes, file.modified)
        case .failure(let error) where error.isMissing:
            return nil
        case .failure(let error):
            site.unreadable.insert(name)
            if error.isTransient { site.transientlyUnreadable.insert(name) }
            site.problems.append(ConfigProblem(severity: .error, file: relativePath, message: "cannot read the file: \(error)"))
            return nil
        }
    }
}
