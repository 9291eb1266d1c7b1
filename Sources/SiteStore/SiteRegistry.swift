import AASA
import Foundation
public import Logging
import Reactor
import Served

/// Every site as loaded over time: what is on disk, what is served, and why they differ. It turns
/// a set of changed names under `sites/` into a new snapshot at a cost that depends on the changed
/// sites only: one site's change is applied in the same time at 10 or 100,000 sites.
///
/// Rules (docs/architecture.md): a file whose new version is invalid keeps its last good version
/// in service; a deleted file or site stops being served; a site that never had a good version is
/// not served; which site holds which host is `HostOwnership`'s rule; each problem is logged once
/// per change. Not thread-safe: one reloader owns it.
///
/// It coordinates the jobs a reload needs, each a type of its own: the tree it reads (`TreePin`),
/// the names under `sites/` that cannot be sites (`EntryProblems`), the names sites claim
/// (`HostClaims`), a site's served version made from what was read (`SitePreparer`, with the
/// prepared contents, `ContentCache`, the verdicts kept between runs, `ValidityCache`, and the
/// pairs taken unchecked with their late verdicts, `LateCertificateChecks`), the default certificate
/// (`DefaultCertificate`), the snapshot and its generation (`SnapshotEditor`) and what the admin
/// view reads (`SiteTracking`). What stays here is the order of a reload and the sites' records.
/// One file of about 580 lines: a reload's order (read in chunks, check the tree, apply,
/// resolve; publishing is in SiteRegistry+Publish.swift) reads best in one place, and the public reading API at its end is short
/// reads of the records and the claims.
public final class SiteRegistry {
    /// Says whether certificate files load and match; nil when they do, else why not. (The TLS
    /// layer answers; SiteStore does not link it.)
    public typealias CertificateCheck = @Sendable (CertificateFiles) -> String?

    public let root: String
    /// The tree the current reload reads, and the last one loaded whole.
    var tree: TreePin
    var sitesPath: String { tree.sitesPath }
    /// Runs after each chunk of a reload is read and before the tree is checked: where a test
    /// swaps the tree in the middle of a reload.
    var chunkRead: (() -> Void)?
    /// Runs once a reload has listed and ordered the names it reads, before it reads any site's
    /// files: a start waits there for the watcher's watches on the site directories
    /// (`ConfigWatcher.waitForSites`), added meanwhile on a thread of their own.
    public var beforeReading: (() -> Void)?
    /// Called with a site's name under `sites/` before its `tls/` is read, on the reading
    /// threads, when its listing shows one or it could not be listed: a start's first load
    /// watches each `tls/` there (`ConfigWatcher.watchTLS(ofSite:)`, for a watcher made with
    /// `tlsByLoad`).
    public var watchesTLS: (@Sendable (String) -> Void)?
    /// How files are served (Cache-Control); a change applies to every file at the next full reload.
    public var options: ServingOptions {
        get { preparer.options }
        set { preparer.options = newValue }
    }
    let logger: Logger
    /// Keep every site's files and their findings after applying them (the reporting commands:
    /// `validate` and `match --config` need what serve threw away; serve keeps no file contents).
    let keepsSources: Bool

    var records: [String: SiteRecord] = [:]
    /// Names under `sites/` that cannot be sites, and `sites/` itself, with why.
    var entryProblems = EntryProblems()
    /// Which site holds which host, alias symlinks, `aliases-allowed`, the served-first record.
    var claims: HostClaims
    /// A site's served version from what was read; the prepared contents and the verdicts.
    var preparer: SitePreparer
    /// Sites by state, and the sites changed since the admin view last looked.
    var tracking = SiteTracking()
    /// Sites by state, kept as they change.
    public var stateCounts: [SiteState: Int] { tracking.stateCounts }
    /// Why the served-first record could not be read at start, if it could not (`validate` says so).
    public var servedFirstProblem: String? { claims.servedFirstProblem }
    /// What the last read of `aliases-allowed` found wrong (the policy before it stays in force).
    public var aliasPolicyProblem: ConfigProblem? { claims.aliasPolicyProblem }
    /// Which site holds which host as of the last reload: a value, copied in O(1), whose copy a
    /// check may change off the reloader for what the change costs (`LayeredMap`): the tenant
    /// API checks a new version of a site on it (Sources/TenantAPI/PendingClaims.swift).
    public var hostOwnership: HostOwnership { claims.ownership }
    /// Names refused to a site because another site holds them (`HostOwnership`).
    public var conflictingHosts: Int { claims.ownership.refusedCount }
    /// Problems the last reload found: sites it read that have errors, names under `sites/` that
    /// cannot be sites, and (for a full reload) an unusable default certificate. Zero when every
    /// change it read was applied.
    public internal(set) var lastReloadProblems = 0
    var defaultCertificate = DefaultCertificate()
    /// What the last read of the default certificate (`tls/`) found wrong.
    public var defaultCertificateProblems: [ConfigProblem] { defaultCertificate.problems }
    var editor: SnapshotEditor
    /// Whether loads take the pairs of sites that have none in service unchecked, for
    /// `checkUncheckedCertificates` (or `settleCertificateChecks`) after (`LateCertificateChecks`).
    public var defersCertificateChecks: Bool {
        get { preparer.late.defers }
        set { preparer.late.defers = newValue }
    }
    /// The sites as served now.
    public var snapshot: Snapshot { editor.snapshot }

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
        claims = HostClaims(
            servedFirstFile: servedFirstFile, stores: !keepsSources && storesServedFirst, logger: logger)
        self.root = root
        tree = TreePin(root: root)
        self.keepsSources = keepsSources
        preparer = SitePreparer(
            validity: ValidityCache(file: knownValidFile, keepsSources: keepsSources), options: options,
            checkCertificate: checkCertificate, clock: clock ?? { Int64(Date().timeIntervalSince1970) })
        self.logger = logger
        editor = SnapshotEditor(generation: generation)
    }

    // MARK: - Reloading

    /// Re-reads everything: every name now under `sites/`, every name known before (to notice
    /// deletions), and the default certificate. Returns the new snapshot. Everything is read
    /// from the one tree `root` names when the reload starts; if it is swapped meanwhile (git-sync),
    /// the reload starts again on the new tree, so the snapshot is never made of two trees.
    /// `remembers`: the verdicts of what is served are recorded for the next start
    /// (`rememberVerdicts`) before it returns; a start passes false and records them after it is
    /// ready (a walk over every site and a rewrite of the state file: 0.14 to 0.21 s at 100,000
    /// sites, docs/benchmarks.md).
    @discardableResult
    public func reloadAll(remembers: Bool = true) -> Snapshot {
        var loaded = false
        for _ in 1...Self.maximumTreeAttempts {
            if case .unresolved = pinTree() { return snapshot }
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
        if remembers { rememberVerdicts() }
        // Parsing on every core leaves freed memory in per-thread malloc arenas; give it back.
        Memory.trim()
        return snapshot
    }

    /// One full read of the pinned tree; false when the tree was swapped before the read was
    /// applied (what was applied came from the pinned tree only).
    private func loadEverything() -> Bool {
        let listed = entryProblems.list(readRoot: tree.readRoot, logger: logger)
        if listed.failed && tree.pinnedIsNew {
            // A new tree (a git-sync commit, a deploy) without a usable sites/ is refused whole:
            // the last good one stays in service until a good tree replaces it.
            lastReloadProblems = 1
            return true
        }
        let names = Set(listed.entries.lazy.map(\.name)).union(records.keys).union(claims.aliases.keys).union(
            entryProblems.byName.keys)
        readDefaultCertificate()
        claims.readAliasPolicy(root: tree.readRoot, logger: logger)
        guard apply(names, listed: listed.entries) else { return false }
        if defaultCertificate.failed { lastReloadProblems += 1 }
        if aliasPolicyProblem != nil { lastReloadProblems += 1 }
        tree.markLoaded()
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
        case .same:
            // With no site before, `apply` is a first load, which adds no verdict one by one
            // (`ValidityCache.defersInserts`): they are recorded here.
            let first = records.isEmpty
            guard apply(names) else { return reloadAll() }
            if first { rememberVerdicts() }
            return snapshot
        }
    }

    /// How many times one reload starts again on a tree that was swapped while it read: a swap
    /// per reload is git-sync's `--period` at most (seconds), so three are plenty; past them the
    /// reload gives up, serving what it served before (never a mix of trees, never sites of a
    /// deleted tree taken as deleted), and the watcher's event for the last swap starts the next.
    static let maximumTreeAttempts = 3

    /// Pins the tree the reload reads (`TreePin`); when `root` no longer resolves, says so once
    /// and keeps every site loaded.
    func pinTree() -> TreePin.State {
        let state = tree.pin()
        if case .unresolved(let reason) = state {
            entryProblems.unresolved(root: root, reason: reason, logger: logger)
            lastReloadProblems = 1
        }
        return state
    }

    /// Reads and applies the named entries from the pinned tree; false, with nothing served
    /// changed, when the tree was swapped while it was read. `listed`: the entries a listing of
    /// `sites/` gave, with their types (`ConfigLoader.directoriesFirst`).
    private func apply(_ names: Set<String>, listed: [Files.Entry] = []) -> Bool {
        var names = names
        for name in names where !claims.danglingAliases.isEmpty && ConfigLoader.isDirectory(sitesPath, name) {
            names.formUnion(claims.danglingAliases[name] ?? [])
        }
        var touched = Set<String>()
        let ordered = ConfigLoader.directoriesFirst(names, sitesPath: sitesPath, listed: listed)
        // A first load (a start) reads the next two chunks on the other cores while this thread
        // applies and updates the one read (`FirstLoad`); later loads read a chunk, apply it,
        // and update every site touched once all are read.
        let first = records.isEmpty ? FirstLoad(reading: examiner(), late: preparer.late) : nil
        defer {
            // A first load given up (its tree swapped) forgets what it updated: the next attempt
            // is a first load again, and nothing unpublished is taken as served meanwhile.
            if let first, first.end() { discardFirstLoad(late: first.late) }
        }
        // Sites an alias symlink listed now points to: a first load updates them after the loop,
        // with their symlinks' names, rather than in their chunk and then again from a second
        // read (which would also check their pairs during the load instead of after it).
        let aliased =
            first == nil
            ? []
            : Set(listed.lazy.filter { $0.kind == .symbolicLink }.compactMap { HostClaims.siblingTarget(of: $0.name, in: self.sitesPath) })
        // A full load at start adds every site: grown once, not doubled (and rehashed) 17 times.
        // Only then: a later full load (a rescan, SIGHUP) lists sites the records mostly hold,
        // and reserving their sum would double the table for good.
        let defersBefore = preparer.validity.defersInserts
        if first != nil {
            records.reserveCapacity(ordered.count)
            claims.ownership.reserveCapacity(sites: ordered.count)
            // Its verdicts are recorded by the `remember` after it, all at once
            // (`ValidityCache.defersInserts`).
            preparer.validity.defersInserts = true
        }
        defer { preparer.validity.defersInserts = defersBefore }
        touched.reserveCapacity(ordered.count)
        // In chunks, so that a first load holds the parsed files of at most three chunks (and of the
        // sites aliases point to) at once; a later load holds those of the sites it reads until
        // the update after the loop. Nothing that
        // changes the snapshot happens before the last chunk is read and the tree checked:
        // removals wait in `removals`, and sites are published after the loop. An attempt that
        // sees a swap leaves what is served as it was.
        var removals: [String] = []
        var updated: [String] = []
        var failing = Set<String>()
        // Sites named by another entry (an alias, an unreadable name): a first load that updated
        // one before that entry was applied updates it again, its names changed.
        var named = Set<String>()
        // Those of them not among `names`: read again after the loop (the touched set less
        // `names` took a third of a second at a million sites).
        var beyond = Set<String>()
        func touchNamed(_ site: String) {
            touched.insert(site)
            named.insert(site)
            if !names.contains(site) { beyond.insert(site) }
        }
        beforeReading?()
        for start in stride(from: 0, to: ordered.count, by: Self.chunkSize) {
            let chunk = Array(ordered[start..<min(ordered.count, start + Self.chunkSize)])
            var entries = first?.read(chunk) ?? examine(chunk)
            chunkRead?()
            if !tree.stillPinned() { return false }
            first?.readAhead(after: start, in: ordered, size: Self.chunkSize)
            var sites: [String] = []
            for (i, name) in chunk.enumerated() {
                // Moved out of the array, not copied (a copy retained every reference in every
                // site's files, and the array's end released them again).
                var entry = ConfigLoader.Entry.ignored
                swap(&entry, &entries[i])
                if case .unreadable(let problem) = entry {
                    // Whatever the name was, it stays so until it can be read again.
                    keepUnreadable(name, problem)
                    let site = claims.aliases[name]?.target ?? name
                    touchNamed(site)
                    continue
                }
                if let old = claims.removeAlias(name) {
                    touchNamed(old.target)
                }
                if entryProblems.forget(name) {
                    if !hasRecord(name) { touched.insert(name) }
                    claims.forgetDangling(name)
                }
                // Consumed: its site's parts move into the record rather than being retained there
                // and released with the entry (0.14 s of the start's thread at 100,000 sites).
                switch consume entry {
                case .site(let source):
                    if let index = records.index(forKey: name) {
                        // In place: a record copied out and stored back retained and released each
                        // of its references, and looked the name up twice.
                        records.values[index].source = consume source
                    } else {
                        // Moved in (`consume`): passed as it was, the entry was copied whole,
                        // every reference in the site's files retained, then released with it.
                        let host = source.host
                        records[name] = SiteRecord(host: host, source: consume source)
                        tracking.move(from: nil, to: .refused)  // until its first update
                    }
                    touched.insert(name)
                    if !aliased.contains(name) { sites.append(name) }
                case .alias(let host, let target):
                    claims.addAlias(name, host: host, target: target)
                    touchNamed(target)
                    // Directories come first in `ordered`: a target without a record now is no site.
                    if !hasRecord(target) { logger.error("sites/\(name): an alias of \(target), which is not a site") }
                    removals.append(name)
                case .problem(let problem):
                    entryProblems.record(name, problem, logger: logger, logUnchanged: true)
                    if let target = HostClaims.siblingTarget(of: name, in: sitesPath) { claims.addDangling(name, target: target) }
                    removals.append(name)
                case .ignored, .missing:
                    removals.append(name)
                case .unreadable:
                    break  // handled above
                }
            }
            // A first load updates the chunk's sites now, while the next one is read.
            if first != nil {
                for name in sites {
                    if update(name) { failing.insert(name) }
                    updated.append(name)
                }
            }
        }
        // A site touched only through an alias is read again too: records keep no file contents.
        // So is one a first load updated before an alias of it was read (a symlink made or changed
        // since the listing): its names changed. (A first load made every record there is, and
        // updated each in its chunk but those in `aliased`.)
        let redo = first == nil ? [] : Set(named.lazy.filter { self.hasRecord($0) && !aliased.contains($0) })
        let reread = beyond.subtracting(removals).union(redo).filter { hasRecord($0) }.sorted()
        let rereadEntries = examine(reread)
        if !reread.isEmpty && !tree.stillPinned() { return false }
        for name in removals where hasRecord(name) { remove(name) }
        for (name, entry) in zip(reread, rereadEntries) {
            switch entry {
            case .site(let source): records[name]?.source = source
            case .unreadable(let problem): keepUnreadable(name, problem)
            default: remove(name)
            }
        }
        // A first load updated its sites chunk by chunk: only the aliased and those named since are left.
        for name in (first == nil ? touched : aliased.union(redo)).sorted() where hasRecord(name) {
            if update(name) { failing.insert(name) } else { failing.remove(name) }
            if !redo.contains(name) { updated.append(name) }
        }
        first?.applied = true
        // Every site updated is published, and every other site whose names or refusals the
        // decisions changed: at a full load, resolve returns every site, each already published
        // (gathering both in one set hashed every name twice more).
        let resolved = claims.ownership.resolve()
        publish(updated)
        for name in resolved where !touched.contains(name) || !hasRecord(name) { publish(name) }
        claims.settle(logger: logger)
        lastReloadProblems = failing.count { hasRecord($0) } + names.count { entryProblems.byName[$0] != nil }
        return true
    }

    /// Whether `name` has a record, found without copying it out (`records[name] != nil` copied
    /// the whole record, every reference in it retained and released, for each of the names a
    /// full load checks).
    func hasRecord(_ name: String) -> Bool { records.index(forKey: name) != nil }

    /// Entries read before they are applied and their parsed files dropped.
    static let chunkSize = 1024

    /// Reads and validates entries (`ConfigLoader.examine(_:…)`), in parallel for large batches.
    func examine(_ names: [String]) -> [ConfigLoader.Entry] {
        ConfigLoader.examine(
            names, sitesPath: sitesPath, records: records, known: preparer.validity.known, check: preparer.checkCertificate,
            options: options, deferChecks: preparer.late.defers, shared: preparer.contents, watchTLS: watchesTLS)
    }

    /// A name under `sites/` that cannot be examined (EACCES, EMFILE...) keeps what it was: a
    /// site keeps its last good files, certificate and settings, with the problem as its error;
    /// an alias stays an alias; an unknown name is reported.
    func keepUnreadable(_ name: String, _ problem: ConfigProblem) {
        if hasRecord(name) {
            records[name]?.keepEverything(name, problem)
        } else if claims.aliases[name] == nil {
            entryProblems.record(name, problem, logger: logger, logUnchanged: false)
        }
    }

    /// A site directory went away: it stops being served.
    func remove(_ name: String) {
        guard let record = records.removeValue(forKey: name) else { return }
        tracking.touch(name)
        tracking.move(from: record.state, to: nil)
        // The sites its names go to are published when the reload resolves them.
        claims.ownership.remove(name)
        preparer.release(record.served)
        editor.replace(name, with: nil)
        logger.info("site removed", metadata: ["site": "\(name)"])
    }

    /// Re-reads `tls/` at the top of the config directory. When the tree was swapped since the
    /// last full reload, nothing is read: the reload that follows reads the whole new tree.
    public func reloadDefaultCertificate() {
        guard pinTree() == .same else { return }
        readDefaultCertificate()
    }

    func readDefaultCertificate() {
        let current = snapshot.defaultCertificate
        let files = preparer.readDefault(&defaultCertificate, root: tree.readRoot, current: current, logger: logger)
        if files != current { editor.setDefaultCertificate(files) }
    }

    // MARK: - Certificate pairs taken unchecked

    /// The pairs loads took unchecked (`defersCertificateChecks`) and that wait for a verdict;
    /// their count and whether one waits, without copying them (100,000 at a large first start).
    public var uncheckedCertificates: [CertificateFiles] { Array(preparer.late.unchecked.values) }
    public var uncheckedCertificateCount: Int { preparer.late.unchecked.count }
    public func isUnchecked(_ identity: String) -> Bool { preparer.late.isUnchecked(identity) }

    /// Whether the pair `identity` names failed its late check: never one to choose as the
    /// default certificate, though a site may still serve it (`LateCertificateChecks`).
    public func isRefused(_ identity: String) -> Bool { preparer.late.isRefused(identity) }

    /// Applies late verdicts on pairs taken unchecked (`LateCertificateChecks.settle`) and reads
    /// again the sites serving a pair now refused; returns those, sorted. `remembers`: the
    /// verdicts are recorded for the next start (`rememberVerdicts`, a walk over every record);
    /// false for a few settled before readiness, which the settling of the rest records after.
    @discardableResult
    public func settleCertificateChecks(_ verdicts: [(identity: String, problem: String?)], remembers: Bool = true) -> [String] {
        // The verdicts are recorded by `rememberVerdicts` below, at once (`defersInserts`).
        let defersBefore = preparer.validity.defersInserts
        preparer.validity.defersInserts = remembers
        let names = preparer.settleLate(verdicts, records: records)
        preparer.validity.defersInserts = defersBefore
        if !names.isEmpty { reload(Set(names)) }
        if remembers { rememberVerdicts() }
        return names
    }

    /// Checks every pair taken unchecked, on every core, and applies the verdicts
    /// (`settleCertificateChecks`). Returns the sites read again. None waiting (every restart
    /// whose pairs were known valid, every config without pairs): nothing to settle, and no second
    /// walk over every record to record the verdicts the load just recorded (2 % of a restart's
    /// CPU at 100,000 sites).
    @discardableResult
    public func checkUncheckedCertificates() -> [String] {
        guard uncheckedCertificateCount > 0 else { return [] }
        return settleCertificateChecks(LateCertificateChecks.check(uncheckedCertificates, with: preparer.checkCertificate))
    }

    /// Records the verdicts of what is served now for the next start (`ValidityCache.remember`:
    /// a walk over every record and a rewrite of the state file, some megabytes at 100,000 sites).
    public func rememberVerdicts() {
        preparer.remember(
            served: records.values.lazy.compactMap(\.served), defaultCertificate: snapshot.defaultCertificateIdentity, logger: logger)
    }

    // MARK: - Applying what was read

    /// Applies what was read of the site `name` (`SitePreparer`); the names it claims are decided
    /// at the end of the reload (`HostOwnership.resolve`), and it is published after (which marks
    /// it changed for the admin view, `SiteTracking.touch`). Returns whether the version on disk
    /// has problems.
    @discardableResult
    func update(_ name: String) -> Bool {
        // The record is changed where it lies (`records.values[index]`), never copied out and
        // stored back: that retained and released each of its references and hashed the name
        // twice more, for every site of a full load. Read through one `inout` too: each read of
        // `records.values[index].field` copied the whole record (the getter returns it) to take
        // one field.
        guard let index = records.index(forKey: name) else { return false }
        return update(name, &records.values[index])
    }

    private func update(_ name: String, _ record: inout SiteRecord) -> Bool {
        let before = record.state
        // Claimed hosts: the directory's own, its alias symlinks', its site.yaml aliases (those
        // only while it serves: a site counts as holding a name from when it serves it).
        let symlinks = HostClaims.symlinks(of: name, aliases: claims.aliases, byTarget: claims.aliasesByTarget)
        // What was read is applied: keep no file contents or parsed models (memory at 100,000
        // sites), unless a reporting command asked for them.
        let errors = preparer.prepare(name, &record, symlinkHosts: symlinks.values.sorted(), takesSource: !keepsSources)
        if errors != record.errors {
            for line in errors { logger.error("\(line)") }
            if errors.isEmpty && !record.errors.isEmpty { logger.info("site fixed", metadata: ["site": "\(name)"]) }
            if !errors.isEmpty {
                logger.error(record.served == nil ? "not served: \(name)" : "serving the last good version: \(name)")
            }
        }
        record.errors = errors
        let aliases = record.served == nil ? [] : record.settings.aliases
        claims.ownership.set(name, HostOwnership.Names(host: record.host, symlinks: symlinks, aliases: aliases))
        tracking.move(from: before, to: record.state)
        return !errors.isEmpty
    }

    // MARK: - What the commands and the admin view read

    /// A registry for the reporting commands (`validate`, `match --config`, `sites`): serve's own
    /// load, run once, nothing logged, every site's files kept with their findings (nginx's `-t`
    /// and Caddy's `Validate` run the server's load code in the same way, so that a check never
    /// passes what serve refuses). `servedFirstFile`: serve's record of which site held each alias
    /// first (read, never written), so that contests are reported as the running server decided.
    public static func inspecting(
        root: String, checkCertificate: @escaping CertificateCheck = { _ in nil }, servedFirstFile: String? = nil
    ) -> SiteRegistry {
        SiteRegistry(
            root: root, logger: Logger(label: "aasad.inspect", factory: { _ in SwiftLogNoOpLogHandler() }),
            checkCertificate: checkCertificate, keepsSources: true, servedFirstFile: servedFirstFile)
    }

    /// A site as last read from disk, with the names the registry gave it: its alias symlinks
    /// and the site.yaml settings in force (a site.yaml with errors adds no names). Its files are
    /// there only in a registry that keeps sources (`inspecting`).
    public func source(of name: String) -> SiteSource? {
        guard let record = records[name] else { return nil }
        var site = record.source
        site.aliases = claims.symlinks(of: name).values.sorted()
        site.settings = record.settings
        return site
    }

    /// Everything the last load found, as `aasad validate` reports it: every site with its
    /// files and problems (`HostClaims.markRefusals`), and the problems of the directory itself
    /// (the default certificate, `sites/`, names that cannot be sites, aliases of no site).
    public func scan() -> ConfigScan {
        var scan = ConfigScan(
            root: root, sites: [], problems: defaultCertificateProblems + entryErrors, defaultCertificate: snapshot.defaultCertificate)
        var contested = false
        for name in records.keys.sorted() {
            guard var site = source(of: name) else { continue }
            if claims.markRefusals(of: name, on: &site) { contested = true }
            scan.sites.append(site)
        }
        if contested, let warning = claims.contestWarning() { scan.problems.append(warning) }
        return scan
    }

    /// Every site's state, sorted by directory name.
    public var statuses: [SiteStatus] { records.keys.sorted().compactMap(status(of:)) }

    /// Every site's directory name, in no order.
    public var siteNames: [String] { Array(records.keys) }

    /// One site's state; nil if no site has that directory name.
    public func status(of name: String) -> SiteStatus? {
        records[name].map { SiteStatus(directory: name, record: $0, ownership: claims.ownership) }
    }

    /// The sites whose status may have changed since the last call (a full reload: all of them,
    /// and any removed), and forgets them.
    public func takeTouched() -> Set<String> { tracking.take() }

    /// Names under `sites/` that are not sites, and aliases of a directory that is not one, with
    /// why (by name); first, `sites/` itself when it could not be listed.
    public var entryErrors: [ConfigProblem] {
        entryProblems.reported(with: claims.aliasesOfNoSite { hasRecord($0) } + (aliasPolicyProblem.map { [$0] } ?? []))
    }

    /// Distinct prepared contents held (identical files counted once).
    public var distinctContents: Int { preparer.contents.count }

    /// Why a host is answered as it is: the snapshot's own lookup first (exactly what `serve`
    /// does), then, for a host it does not serve, the site that holds the name (or the most
    /// specific wildcard above it).
    public enum HostAnswer: Sendable, Equatable {
        /// Served by this site (its directory name).
        case served(String)
        /// Held by this site, which serves nothing (it never had a valid file).
        case refused(String)
        /// No site holds it.
        case unclaimed
    }

    /// How `serve` answers a request for `host` (lower case, no port) right now, and why.
    public func answer(forHost host: String) -> HostAnswer {
        let host = host.lowercased()
        if let site = snapshot.site(forHost: host) { return .served(site.directory) }
        if let holder = claims.ownership.holder(serving: host) { return .refused(holder.site) }
        return .unclaimed
    }

    /// The names a site claims and does not hold, with who holds each and why.
    public func refusals(of name: String) -> [HostOwnership.Refusal] { claims.ownership.refusals(of: name) }
}
