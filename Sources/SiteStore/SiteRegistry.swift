import AASA
import Foundation
public import Logging
import Reactor

/// Every site as loaded over time: what is on disk, what is served, and why they differ. It turns
/// a set of changed names under `sites/` into a new snapshot at a cost that depends on the changed
/// sites only: one site's change is applied in the same time at 10 or 100,000 sites.
///
/// Rules (DESIGN.md, issue 4): a file whose new version is invalid keeps its last good version in
/// service; a deleted file or site stops being served; a site that never had a good version is
/// not served; which site holds which host is `HostOwnership`'s rule; each problem is logged once
/// per change. Not thread-safe: one reloader owns it.
public final class SiteRegistry {
    /// Says whether certificate files load and match; nil when they do, else why not. (The TLS
    /// layer answers; SiteStore does not link it.)
    public typealias CertificateCheck = @Sendable (CertificateFiles) -> String?

    /// A dictionary keeps its values inline in every bucket, used or not: the site as read and
    /// its settings (hundreds of bytes) live behind one reference each, so that 100,000 records
    /// cost their buckets' few words rather than a kilobyte each.
    struct Record {
        var host: HostName
        /// The site as last read from disk, until it is applied: serve keeps none of it after
        /// (`dropSource`; at 100,000 sites the emptied sources alone were 60 MB), the reporting
        /// commands keep it all.
        var source: SiteSource {
            get { boxedSource?.value ?? SiteSource(host: host, directory: "", aliases: [], problems: []) }
            set { boxedSource = Boxed(newValue) }
        }
        private var boxedSource: Boxed<SiteSource>?

        mutating func dropSource() { boxedSource = nil }
        /// The last good version, with all its claimed hosts.
        var served: ServedSite?
        /// Problems of the version on disk.
        var errors: [String] = []
        /// The site.yaml settings in force (the last that parsed).
        var settings: SiteSettings {
            get { boxedSettings.value }
            set { boxedSettings = Boxed(newValue) }
        }
        private var boxedSettings = noSettingsBox
        /// The Last-Modified last served for each file, kept when the file is deleted: a later
        /// content of that file is always served with a later one (see `choose`).
        var lastModified = LastModified()
        /// Fallback answers by platform, across the site's versions; made when the site first
        /// has a fallback (most sites never do: no allocation for them).
        var fallbackCounts: FallbackCounts?

        init(host: HostName, source: SiteSource) {
            self.host = host
            boxedSource = Boxed(source)
        }
    }

    /// The Last-Modified last served for each of a site's files (a dictionary per site cost
    /// a few hundred bytes at 100,000 sites).
    struct LastModified {
        var aasa: Int64?
        var assetLinks: Int64?
        var page: Int64?

        subscript(file: FileKind) -> Int64? {
            get {
                switch file {
                case .aasa: aasa
                case .assetLinks: assetLinks
                case .page: page
                }
            }
            set {
                switch file {
                case .aasa: aasa = newValue
                case .assetLinks: assetLinks = newValue
                case .page: page = newValue
                }
            }
        }
    }

    /// The files of a site that are served.
    enum FileKind {
        case aasa, assetLinks, page
    }

    /// An immutable value behind a reference; a record replaces the box to change it, so copies of
    /// a record never share a change.
    final class Boxed<Value> {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    public let root: String
    /// The physical tree the current reload reads (`root` resolved; see `ConfigTree`).
    var readRoot: String
    var sitesPath: String { readRoot + "/sites" }
    /// The tree the current reload pinned, and the last one loaded whole.
    var pinnedTree: ConfigTree?
    var loadedTree: ConfigTree?
    /// Runs after each chunk of a reload is read and before the tree is checked: where a test
    /// swaps the tree in the middle of a reload.
    var chunkRead: (() -> Void)?
    /// How files are served (Cache-Control); a change applies to every file at the next full reload.
    public var options: ServingOptions
    let logger: Logger
    let checkCertificate: CertificateCheck
    let clock: () -> Int64
    /// Keep every site's files and their findings after applying them (the reporting commands:
    /// `validate` and `match --config` need what serve threw away; serve keeps no file contents).
    let keepsSources: Bool

    var records: [String: Record] = [:]
    /// Alias entries: alias name → (its host, its target site).
    var aliases: [String: (host: HostName, target: String)] = [:]
    /// The same, by target: site name → its alias names.
    var aliasesByTarget: [String: Set<String>] = [:]
    /// Names under `sites/` that cannot be sites, with why.
    var entryProblems: [String: ConfigProblem] = [:]
    /// Those of them that are symlinks to a sibling name that is not a site (yet), by that name:
    /// an alias made before its site. When the site appears, they are read again with it, as a
    /// full scan would read them.
    var danglingAliases: [String: Set<String>] = [:]
    /// The same, by symlink name.
    var danglingTargets: [String: String] = [:]
    /// Which site holds which host (the names every site claims, and the decisions).
    var ownership: HostOwnership
    /// Where `ownership.remembered` is kept between runs (`ServedFirst`); nil: memory only.
    let servedFirstFile: String?
    /// `ownership.rememberedVersion` when it was last written there (or read, at start).
    var servedFirstStored = 0
    /// Whether a failed write was logged already.
    var servedFirstWriteFailed = false
    /// Why the file could not be read at start, if it could not (`validate` says so).
    public internal(set) var servedFirstProblem: String?
    var contents = ContentCache()
    /// Sites by state, kept as they change (a metrics scrape must not walk 100,000 records).
    public internal(set) var stateCounts: [SiteState: Int] = [:]
    /// Names refused to a site because another site holds them (`HostOwnership`).
    public var conflictingHosts: Int { ownership.refusedCount }
    /// Problems the last reload found: sites it read that have errors, names under `sites/` that
    /// cannot be sites, and (for a full reload) an unusable default certificate. Zero when every
    /// change it read was applied.
    public internal(set) var lastReloadProblems = 0
    var defaultCertificateProblem = false
    /// Why `sites/` itself could not be listed at the last full reload, if it could not.
    var sitesDirectoryProblem: ConfigProblem?
    /// What the last read of `aliases-allowed` found wrong (the policy before it stays in force).
    public internal(set) var aliasPolicyProblem: ConfigProblem?
    /// Whether a read of `aliases-allowed` ever succeeded (a missing file is one): until then, a
    /// broken file allows no alias.
    var aliasPolicyRead = false
    /// What the last read of the default certificate (`tls/`) found wrong.
    public internal(set) var defaultCertificateProblems: [ConfigProblem] = []
    /// Sites whose status may have changed since `takeTouched` last ran (those a reload read,
    /// updated, removed or republished for a conflict): an admin view re-encodes only these.
    var touchedSinceTaken = Set<String>()
    public internal(set) var snapshot: Snapshot
    var generation: UInt64
    /// Contents whose verdict is known valid, so that loads skip validating them again; nil in a
    /// registry that keeps sources (the reporting commands report every finding of every file).
    var knownValid: KnownValid?
    /// Where `knownValid` is kept between runs, and the binary it belongs to; nil: memory only.
    let knownValidFile: (path: String, identity: String)?
    /// What was last written there (nothing is written when nothing changed).
    var knownValidStored: Set<String> = []
    /// Whether a failed write was logged already (a state directory that cannot be written
    /// would otherwise log at every rescan).
    var knownValidWriteFailed = false

    /// `knownValidFile`: where verdicts of valid contents are kept between runs (`KnownValid`),
    /// with the running binary's identity; serve passes one under its state directory.
    /// `servedFirstFile`: where the alias names held are kept between runs (`ServedFirst`), read
    /// at start; written after each reload that changed them, unless `keepsSources` or not
    /// `storesServedFirst` (the reporting commands read it and never write it).
    public init(
        root: String, options: ServingOptions = ServingOptions(), logger: Logger, generation: UInt64 = 0,
        checkCertificate: @escaping CertificateCheck = { _ in nil }, clock: (() -> Int64)? = nil, keepsSources: Bool = false,
        knownValidFile: (path: String, identity: String)? = nil, servedFirstFile: String? = nil, storesServedFirst: Bool = true
    ) {
        var prior: [HostName: String] = [:]
        if let servedFirstFile {
            switch ServedFirst.load(path: servedFirstFile) {
            case .success(let held):
                prior = held
            case .failure(let problem):
                servedFirstProblem = problem.description
                if !problem.isMissing {
                    logger.warning(
                        "ignoring the record of which site held each alias first; contests are decided as on a first start",
                        metadata: ["path": "\(servedFirstFile)", "error": "\(problem)"])
                }
            }
        }
        ownership = HostOwnership(prior: prior)
        // A record read is written again after the first reload (the names may have moved while
        // the server was down); none read and none held: nothing to write.
        servedFirstStored = prior.isEmpty ? ownership.rememberedVersion : -1
        self.servedFirstFile = keepsSources || !storesServedFirst ? nil : servedFirstFile
        self.root = root
        readRoot = root
        self.keepsSources = keepsSources
        self.knownValidFile = keepsSources ? nil : knownValidFile
        if !keepsSources {
            knownValid = knownValidFile.map { KnownValid.load(path: $0.path, identity: $0.identity) } ?? KnownValid()
            knownValidStored = knownValid?.keys ?? []
        }
        self.options = options
        self.logger = logger
        self.checkCertificate = checkCertificate
        self.clock = clock ?? { Int64(Date().timeIntervalSince1970) }
        self.generation = generation
        snapshot = Snapshot(generation: generation, sites: [], defaultCertificate: nil)
    }

    // MARK: - Reloading

    /// Re-reads everything: every name now under `sites/`, every name known before (to notice
    /// deletions), and the default certificate. Returns the new snapshot. Everything is read
    /// from the one tree `root` names when the reload starts; if it is swapped meanwhile (git-sync),
    /// the reload starts again on the new tree, so the snapshot is never made of two trees.
    @discardableResult
    public func reloadAll() -> Snapshot {
        var loaded = false
        for _ in 1...Self.maximumTreeAttempts {
            if pinTree() == .unresolved { return snapshot }
            if loadEverything() {
                loaded = true
                break
            }
            logger.warning("the config directory was replaced while it was read; reading the new tree", metadata: ["tree": "\(root)"])
        }
        guard loaded else {
            // An attempt that saw a swap changed no served site (`apply` defers what changes the
            // snapshot until the whole tree is read): the sites served before stay, and the
            // watcher's event for the last swap brings the next full reload.
            logger.error(
                "the config directory kept being replaced while it was read; the sites loaded before stay in service",
                metadata: ["tree": "\(root)", "attempts": "\(Self.maximumTreeAttempts)"])
            return snapshot
        }
        rememberValidContents()
        // Parsing on every core leaves freed memory in per-thread malloc arenas; give it back.
        Memory.trim()
        return snapshot
    }

    /// One full read of the pinned tree; false when the tree was swapped before the read was
    /// applied (what was applied came from the pinned tree only).
    private func loadEverything() -> Bool {
        let listed: [String]
        do {
            listed = try FileManager.default.contentsOfDirectory(atPath: sitesPath)
            sitesDirectoryProblem = nil
        } catch {
            listed = []
            let problem: ConfigProblem
            switch ConfigLoader.examineKind(readRoot, "sites") {
            case .missing, .other:
                problem = ConfigProblem(
                    severity: .error, file: "sites",
                    message: "no sites/ directory; create sites/<host>/apple-app-site-association for each host")
            case .directory, .unreadable:
                // Known sites are still examined one by one below; any that cannot be read keep
                // their last good version.
                problem = ConfigProblem(
                    severity: .error, file: "sites", message: "cannot list the directory: \(ConfigLoader.describe(error))")
            }
            logger.error("sites/: \(problem.message)")
            sitesDirectoryProblem = problem
            if let loaded = loadedTree, pinnedTree != loaded {
                // A new tree (a git-sync commit, a deploy) without a usable sites/ is refused
                // whole: the last good one stays in service until a good tree replaces it.
                lastReloadProblems = 1
                return true
            }
        }
        let names = Set(listed).union(records.keys).union(aliases.keys).union(entryProblems.keys)
        readDefaultCertificate()
        readAliasPolicy()
        guard apply(names) else { return false }
        if defaultCertificateProblem { lastReloadProblems += 1 }
        if aliasPolicyProblem != nil { lastReloadProblems += 1 }
        loadedTree = pinnedTree
        return true
    }

    /// Re-reads the named entries of `sites/` (directory names, as the watcher reports them) and
    /// returns the new snapshot. Sites an alias points to are re-read with it.
    @discardableResult
    public func reload(_ names: Set<String>) -> Snapshot {
        switch pinTree() {
        case .unresolved: return snapshot
        // Another tree was published since the last full reload: it may differ anywhere.
        case .moved: return reloadAll()
        case .same: return apply(names) ? snapshot : reloadAll()
        }
    }

    /// Reads and applies the named entries from the pinned tree; false, with nothing served
    /// changed, when the tree was swapped while it was read.
    private func apply(_ names: Set<String>) -> Bool {
        var names = names
        for name in names where !danglingAliases.isEmpty && isDirectory(name) {
            names.formUnion(danglingAliases[name] ?? [])
        }
        var touched = Set<String>()
        // Site directories first, so that aliases find their targets.
        let candidates = Array(names)
        let sitesPath = self.sitesPath
        let kinds = Parallel.map(candidates, threshold: Self.parallelThreshold) { name in
            Self.isDirectory(sitesPath, name)
        }
        let directories = Set(zip(candidates, kinds).lazy.filter(\.1).map(\.0))
        let ordered = directories.sorted() + names.subtracting(directories).sorted()
        // In chunks, so that at most one chunk of parsed files is held at once. Nothing that
        // changes the snapshot happens before the last chunk is read and the tree checked:
        // removals wait in `removals`, and sites are updated after the loop. An attempt that
        // sees a swap leaves what is served as it was.
        var removals: [String] = []
        var entries: [ConfigLoader.Entry] = []
        var entryBase = 0
        for (index, name) in ordered.enumerated() {
            if index - entryBase >= entries.count {
                entryBase = index
                entries = examine(Array(ordered[index..<min(ordered.count, index + Self.chunkSize)]))
                chunkRead?()
                if !treeStillPinned() { return false }
            }
            let entry = entries[index - entryBase]
            if case .unreadable(let problem) = entry {
                // Whatever the name was, it stays so until it can be read again.
                keepUnreadable(name, problem)
                touched.insert(aliases[name]?.target ?? name)
                continue
            }
            if let old = aliases.removeValue(forKey: name) {
                touched.insert(old.target)
                aliasesByTarget[old.target]?.remove(name)
            }
            if entryProblems.removeValue(forKey: name) != nil {
                if records[name] == nil { touched.insert(name) }
                forgetDangling(name)
            }
            switch entry {
            case .site(let source):
                if var record = records[name] {
                    record.source = source
                    records[name] = record
                } else {
                    records[name] = Record(host: source.host, source: source)
                    stateCounts[.refused, default: 0] += 1  // until its first update
                }
                touched.insert(name)
            case .alias(let host, let target):
                aliases[name] = (host, target)
                aliasesByTarget[target, default: []].insert(name)
                touched.insert(target)
                // Directories come first in `ordered`: a target without a record now is no site.
                if records[target] == nil { logger.error("sites/\(name): an alias of \(target), which is not a site") }
                removals.append(name)
            case .problem(let problem):
                entryProblems[name] = problem
                if let target = siblingTarget(of: name) {
                    danglingAliases[target, default: []].insert(name)
                    danglingTargets[name] = target
                }
                logger.error("\(problem.file): \(problem.message)")
                removals.append(name)
            case .ignored, .missing:
                removals.append(name)
            case .unreadable:
                break  // handled above
            }
        }
        // A site touched only through an alias is read again too: records keep no file contents.
        let reread = touched.subtracting(names).subtracting(removals).filter { records[$0] != nil }.sorted()
        let rereadEntries = examine(reread)
        if !reread.isEmpty && !treeStillPinned() { return false }
        for name in removals where records[name] != nil { remove(name) }
        for (name, entry) in zip(reread, rereadEntries) {
            switch entry {
            case .site(let source): records[name]?.source = source
            case .unreadable(let problem): keepUnreadable(name, problem)
            default: remove(name)
            }
        }
        var republish = Set<String>()
        for name in touched.sorted() where records[name] != nil {
            republish.formUnion(update(name))
        }
        republish.formUnion(ownership.resolve())
        for name in republish { publish(name) }
        rememberServedFirst()
        lastReloadProblems =
            touched.count { records[$0].map { !$0.errors.isEmpty } ?? false } + names.count { entryProblems[$0] != nil }
        return true
    }

    /// Batches larger than this are read on every core: a full load of 100,000 sites is file reads,
    /// JSON parsing and gzip, all independent per site.
    static let parallelThreshold = 64
    /// Entries read before they are applied and their parsed files dropped.
    static let chunkSize = 1024

    /// Reads and validates entries, in parallel for large batches; the results are applied in order
    /// on the calling thread.
    func examine(_ names: [String]) -> [ConfigLoader.Entry] {
        let sitesPath = self.sitesPath
        // The records as they are now, shared rather than copied into a set (a set per chunk cost
        // O(sites) each: quadratic over a full load). Nothing changes them while `examine` runs:
        // the calling thread waits for the reads.
        nonisolated(unsafe) let sites = records
        let isSite: @Sendable (String) -> Bool = { name in
            sites[name] != nil || ConfigLoader.examineKind(sitesPath, name) == .directory
        }
        let known = knownValid
        let check = checkCertificate
        let options = self.options
        // A site's own certificate pair is checked here too, on every core, unless it passed
        // before (serve only): at 50,000 pairs the checks are most of a start (issue 14).
        let examineOne: @Sendable (String) -> ConfigLoader.Entry = { name in
            let entry = ConfigLoader.examine(sitesPath: sitesPath, name: name, isSite: isSite, known: known, options: options)
            guard let known, case .site(var source) = entry, let files = source.certificate else { return entry }
            let identity = files.identity
            source.checkedCertificate = (identity, known.contains(.certificate, digestHex: identity) ? nil : check(files))
            return .site(source)
        }
        return Parallel.map(names, threshold: Self.parallelThreshold, examineOne)
    }

    /// After a full load: the known verdicts become those of the contents now served (so that
    /// they never outgrow the config directory), written to `knownValidFile` when they changed.
    func rememberValidContents() {
        guard knownValid != nil else { return }
        var current = KnownValid()
        for record in records.values {
            if let file = record.served?.aasa { current.insert(.aasa, digestHex: file.content.digest) }
            if let file = record.served?.assetLinks { current.insert(.assetLinks, digestHex: file.content.digest) }
            if let identity = record.served?.certificateIdentity { current.insert(.certificate, digestHex: identity) }
        }
        if let identity = snapshot.defaultCertificateIdentity { current.insert(.certificate, digestHex: identity) }
        knownValid = current
        guard let file = knownValidFile, current.keys != knownValidStored else { return }
        do throws(SystemError) {
            try current.store(path: file.path, identity: file.identity)
            knownValidStored = current.keys
            knownValidWriteFailed = false
        } catch {
            // Only start-up time depends on it: say so once, and serve on.
            if !knownValidWriteFailed {
                logger.warning(
                    "cannot keep the validated contents for the next start", metadata: ["path": "\(file.path)", "error": "\(error)"])
            }
            knownValidWriteFailed = true
        }
    }

    /// Why a certificate pair cannot be used, or nil: asked of the TLS layer unless the same
    /// bytes passed before (`KnownValid`; the identity is their SHA-256).
    /// `checked`: the verdict the read already got for these very files (`examine`), with their
    /// identity, so that neither is computed again.
    func certificateProblem(_ files: CertificateFiles, checked: (identity: String, problem: String?)? = nil) -> String? {
        guard knownValid != nil else { return checkCertificate(files) }
        let identity = checked?.identity ?? files.identity
        if knownValid?.contains(.certificate, digestHex: identity) == true { return nil }
        let problem: String?
        if let checked {
            problem = checked.problem
        } else {
            problem = checkCertificate(files)
        }
        if problem == nil { knownValid?.insert(.certificate, digestHex: identity) }
        return problem
    }

    /// A directory itself, not a symlink to one: one `lstat` (a full load asks for every name).
    func isDirectory(_ name: String) -> Bool {
        Self.isDirectory(sitesPath, name)
    }

    /// The same for any thread (the parallel reads of a large batch).
    static func isDirectory(_ sitesPath: String, _ name: String) -> Bool {
        (try? Files.linkStatus(sitesPath + "/" + name))?.kind == .directory
    }

    /// A name under `sites/` that cannot be examined (EACCES, EMFILE...) keeps what it was: a
    /// site keeps its last good files, certificate and settings, with the problem as its error;
    /// an alias stays an alias; an unknown name is reported.
    func keepUnreadable(_ name: String, _ problem: ConfigProblem) {
        if var record = records[name] {
            // Nothing read, everything kept: the update that follows keeps every last good file,
            // the certificate in service and the settings in force.
            var kept = SiteSource(host: record.host, directory: "sites/\(name)", aliases: [], problems: [problem])
            kept.settings = record.settings
            kept.unreadable = ConfigLoader.siteEntries
            record.source = kept
            records[name] = record
        } else if aliases[name] == nil {
            if entryProblems[name] != problem { logger.error("\(problem.file): \(problem.message)") }
            entryProblems[name] = problem
        }
    }

    /// A site directory went away: it stops being served.
    func remove(_ name: String) {
        guard let record = records.removeValue(forKey: name) else { return }
        touchedSinceTaken.insert(name)
        stateCounts[Self.state(of: record), default: 0] -= 1
        // The sites its names go to are published when the reload resolves them.
        ownership.remove(name)
        contents.release(record.served?.aasa)
        contents.release(record.served?.assetLinks)
        contents.release(record.served?.page)
        bump()
        replaceServed(name, with: nil)
        logger.info("site removed", metadata: ["site": "\(name)"])
    }

    /// Applies a site's new source: per file, the new version if valid, else the last good one.

    /// Re-reads `tls/` at the top of the config directory. When the tree was swapped since the
    /// last full reload, nothing is read: the reload that follows reads the whole new tree.
    public func reloadDefaultCertificate() {
        guard pinTree() == .same else { return }
        readDefaultCertificate()
    }

    /// Reads the config root's `aliases-allowed` (`AliasPolicy`): none, no bound; a file that
    /// cannot be read or parsed keeps the policy in force, as any other file keeps its last good
    /// version, and at start, when none was ever read, allows no alias at all (as a site that
    /// never had a good version is not served): an operator's bound never lapses into none
    /// because its file broke. Applied when the reload resolves ownership.
    func readAliasPolicy() {
        defer {
            if aliasPolicyProblem == nil {
                aliasPolicyRead = true
            } else if !aliasPolicyRead {
                ownership.setPolicy(AliasPolicy())
            }
        }
        let relative = AliasPolicy.fileName
        let keeps = aliasPolicyRead ? "the aliases allowed before stay" : "no site.yaml alias is served until it is fixed"
        switch ConfigLoader.readBounded(path: readRoot + "/" + relative, limit: AliasPolicy.maximumFileSize) {
        case .failure(let error) where error.isMissing:
            aliasPolicyProblem = nil
            ownership.setPolicy(nil)
        case .failure(let error):
            aliasPolicyProblem = ConfigProblem(
                severity: .error, file: relative, message: "cannot be read: \(error); \(keeps)")
        case .success(let bytes) where bytes.count > AliasPolicy.maximumFileSize:
            aliasPolicyProblem = ConfigProblem(
                severity: .error, file: relative,
                message: "larger than \(AliasPolicy.maximumFileSize) bytes; \(keeps)")
        case .success(let bytes):
            switch AliasPolicy.parse(String(decoding: bytes, as: UTF8.self)) {
            case .success(let policy):
                aliasPolicyProblem = nil
                ownership.setPolicy(policy)
            case .failure(let error):
                aliasPolicyProblem = ConfigProblem(
                    severity: .error, file: relative, message: "\(error); \(keeps)")
            }
        }
        if let problem = aliasPolicyProblem { logger.error("\(problem.file): \(problem.message)") }
    }

    func readDefaultCertificate() {
        var problems: [ConfigProblem] = []
        var unreadable = false
        var files = ConfigLoader.readCertificate(readRoot, "tls", &problems, unreadable: &unreadable)
        for p in problems { logger.error("\(p.file): \(p.message)") }
        defaultCertificateProblems = problems
        defaultCertificateProblem = problems.contains { $0.severity == .error }
        if unreadable {
            logger.error("tls: cannot be read; keeping the previous default certificate")
            files = snapshot.defaultCertificate
        }
        if let f = files, let problem = certificateProblem(f) {
            defaultCertificateProblem = true
            logger.error("\(f.directory): \(problem); keeping the previous default certificate")
            files = snapshot.defaultCertificate
        }
        guard files != snapshot.defaultCertificate else { return }
        bump()
        snapshot = snapshot.with(defaultCertificate: files, generation: generation)
    }
}

/// Default settings, one box for every record that has no site.yaml (never changed: records
/// replace their box).
nonisolated(unsafe) private let noSettingsBox = SiteRegistry.Boxed(SiteSettings())
