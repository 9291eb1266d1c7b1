import AASA
import CAASALinux
import Foundation
import Glibc
public import Logging

/// How a site stands (issue 4, `/sites` and `aasad sites`).
public enum SiteState: String, Sendable, Codable {
    /// Every file on disk is valid and served.
    case serving
    /// A file on disk is invalid; its previous good version goes on being served.
    case servingLastGood = "serving-last-good"
    /// Nothing good was ever loaded (or the last good file was deleted): not served.
    case refused
}

/// One site's state, as listed for operators.
public struct SiteStatus: Sendable, Codable {
    public var directory: String
    /// Names it answers for.
    public var hosts: [String]
    /// Names it claims that another site claims too: served by neither.
    public var conflictingHosts: [String]
    public var state: SiteState
    /// ETag of the AASA file served, if any.
    public var etag: String?
    /// When the served version was loaded, seconds since the epoch.
    public var loadedAt: Int64?
    /// The last problems found, one line each (file, JSON path, rule).
    public var errors: [String]
}

/// Every site as loaded over time: what is on disk, what is served, and why they differ. It turns
/// a set of changed names under `sites/` into a new snapshot at a cost that depends on the changed
/// sites only: one site's change is applied in the same time at 10 or 100,000 sites.
///
/// Rules (DESIGN.md, issue 4): a file whose new version is invalid keeps its last good version in
/// service; a deleted file or site stops being served; a site that never had a good version is
/// not served; a host claimed by two sites is served by neither and reported on both; each
/// problem is logged once per change. Not thread-safe: one reloader owns it.
public final class SiteRegistry {
    /// Says whether certificate files load and match; nil when they do, else why not. (The TLS
    /// layer answers; SiteStore does not link it.)
    public typealias CertificateCheck = (CertificateFiles) -> String?

    struct Record {
        var host: HostName
        /// The site as last read from disk.
        var source: SiteSource
        /// The last good version, with all its claimed hosts.
        var served: ServedSite?
        /// Problems of the version on disk.
        var errors: [String] = []
        /// Hosts it claims, for conflict bookkeeping.
        var claims: [HostName] = []
        /// The site.yaml settings in force (the last that parsed).
        var settings = SiteSettings()
        /// The Last-Modified last served for each file (by name), kept when the file is deleted:
        /// a later content of that file is always served with a later one (see `choose`).
        var lastModified: [String: Int64] = [:]
    }

    public let root: String
    private var sitesPath: String { root + "/sites" }
    private let options: ServingOptions
    private let logger: Logger
    private let checkCertificate: CertificateCheck
    private let clock: () -> Int64

    private var records: [String: Record] = [:]
    /// Alias entries: alias name → (its host, its target site).
    private var aliases: [String: (host: HostName, target: String)] = [:]
    /// The same, by target: site name → its alias names.
    private var aliasesByTarget: [String: Set<String>] = [:]
    /// Names under `sites/` that cannot be sites, with why.
    private var entryProblems: [String: ConfigProblem] = [:]
    /// Those of them that are symlinks to a sibling name that is not a site (yet), by that name:
    /// an alias made before its site. When the site appears, they are read again with it, as a
    /// full scan would read them.
    private var danglingAliases: [String: Set<String>] = [:]
    /// The same, by symlink name.
    private var danglingTargets: [String: String] = [:]
    /// Host → the sites claiming it.
    private var claims: [HostName: Set<String>] = [:]
    private var contents = ContentCache()
    /// Sites by state, kept as they change (a metrics scrape must not walk 100,000 records).
    public private(set) var stateCounts: [SiteState: Int] = [:]
    /// Hosts claimed by more than one site (served by none).
    public private(set) var conflictingHosts = 0
    /// Problems the last reload found: sites it read that have errors, names under `sites/` that
    /// cannot be sites, and (for a full reload) an unusable default certificate. Zero when every
    /// change it read was applied.
    public private(set) var lastReloadProblems = 0
    private var defaultCertificateProblem = false
    /// Sites whose status may have changed since `takeTouched` last ran (those a reload read,
    /// updated, removed or republished for a conflict): an admin view re-encodes only these.
    private var touchedSinceTaken = Set<String>()
    public private(set) var snapshot: Snapshot
    private var generation: UInt64

    public init(
        root: String, options: ServingOptions = ServingOptions(), logger: Logger, generation: UInt64 = 0,
        checkCertificate: @escaping CertificateCheck = { _ in nil }, clock: (() -> Int64)? = nil
    ) {
        self.root = root
        self.options = options
        self.logger = logger
        self.checkCertificate = checkCertificate
        self.clock = clock ?? { Int64(Date().timeIntervalSince1970) }
        self.generation = generation
        snapshot = Snapshot(generation: generation, sites: [], defaultCertificate: nil)
    }

    // MARK: - Reloading

    /// Re-reads everything: every name now under `sites/`, every name known before (to notice
    /// deletions), and the default certificate. Returns the new snapshot.
    @discardableResult
    public func reloadAll() -> Snapshot {
        let listed: [String]
        do {
            listed = try FileManager.default.contentsOfDirectory(atPath: sitesPath)
        } catch {
            listed = []
            if ConfigLoader.examineKind(root, "sites") == .missing {
                logger.error("sites/: no sites/ directory; create sites/<host>/apple-app-site-association for each host")
            } else {
                // Known sites are still examined one by one below; any that cannot be read keep
                // their last good version.
                logger.error("sites/: cannot list the directory: \(ConfigLoader.describe(error))")
            }
        }
        let names = Set(listed).union(records.keys).union(aliases.keys).union(entryProblems.keys)
        reloadDefaultCertificate()
        let snapshot = reload(names)
        if defaultCertificateProblem { lastReloadProblems += 1 }
        // Parsing on every core leaves freed memory in per-thread malloc arenas; give it back.
        malloc_trim(0)
        return snapshot
    }

    /// Re-reads the named entries of `sites/` (directory names, as the watcher reports them) and
    /// returns the new snapshot. Sites an alias points to are re-read with it.
    @discardableResult
    public func reload(_ names: Set<String>) -> Snapshot {
        var names = names
        for name in names where !danglingAliases.isEmpty && isDirectory(name) {
            names.formUnion(danglingAliases[name] ?? [])
        }
        var touched = Set<String>()
        // Site directories first, so that aliases find their targets.
        let directories = names.filter(isDirectory)
        let ordered = directories.sorted() + names.subtracting(directories).sorted()
        // In chunks, so that at most one chunk of parsed files is held at once.
        var entries: [ConfigLoader.Entry] = []
        var entryBase = 0
        for (index, name) in ordered.enumerated() {
            if index - entryBase >= entries.count {
                entryBase = index
                entries = examine(Array(ordered[index..<min(ordered.count, index + Self.chunkSize)]))
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
                if records[name] != nil { remove(name) }
            case .problem(let problem):
                entryProblems[name] = problem
                if let target = siblingTarget(of: name) {
                    danglingAliases[target, default: []].insert(name)
                    danglingTargets[name] = target
                }
                logger.error("\(problem.file): \(problem.message)")
                if records[name] != nil { remove(name) }
            case .ignored, .missing:
                if records[name] != nil { remove(name) }
            case .unreadable:
                break  // handled above
            }
        }
        // A site touched only through an alias is read again too: records keep no file contents.
        let reread = touched.subtracting(names).filter { records[$0] != nil }.sorted()
        for (name, entry) in zip(reread, examine(reread)) {
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
        for name in republish { publish(name) }
        lastReloadProblems =
            touched.count { records[$0].map { !$0.errors.isEmpty } ?? false } + names.count { entryProblems[$0] != nil }
        return snapshot
    }

    /// Batches larger than this are read on every core: a full load of 100,000 sites is file reads,
    /// JSON parsing and gzip, all independent per site.
    static let parallelThreshold = 64
    /// Entries read before they are applied and their parsed files dropped.
    static let chunkSize = 1024

    /// Reads and validates entries, in parallel for large batches; the results are applied in order
    /// on the calling thread.
    private func examine(_ names: [String]) -> [ConfigLoader.Entry] {
        let sitesPath = self.sitesPath
        let known = Set(records.keys)
        let isSite: @Sendable (String) -> Bool = { name in
            known.contains(name) || ConfigLoader.examineKind(sitesPath, name) == .directory
        }
        guard names.count > Self.parallelThreshold else {
            return names.map { ConfigLoader.examine(sitesPath: sitesPath, name: $0, isSite: isSite) }
        }
        let results = UnsafeMutableBufferPointer<ConfigLoader.Entry>.allocate(capacity: names.count)
        defer { results.deallocate() }
        let chunks = max(1, ProcessInfo.processInfo.activeProcessorCount * 4)
        let size = (names.count + chunks - 1) / chunks
        nonisolated(unsafe) let output = results
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let range = min(names.count, chunk * size)..<min(names.count, (chunk + 1) * size)
            for i in range {
                (output.baseAddress! + i).initialize(to: ConfigLoader.examine(sitesPath: sitesPath, name: names[i], isSite: isSite))
            }
        }
        let array = Array(results)
        _ = results.deinitialize()
        return array
    }

    private func isDirectory(_ name: String) -> Bool {
        ConfigLoader.examineKind(sitesPath, name) == .directory
            && (try? FileManager.default.destinationOfSymbolicLink(atPath: sitesPath + "/" + name)) == nil
    }

    /// A name under `sites/` that cannot be examined (EACCES, EMFILE...) keeps what it was: a
    /// site keeps its last good files, certificate and settings, with the problem as its error;
    /// an alias stays an alias; an unknown name is reported.
    private func keepUnreadable(_ name: String, _ problem: ConfigProblem) {
        if var record = records[name] {
            record.source.aasa = nil
            record.source.assetLinks = nil
            record.source.certificate = nil
            record.source.problems = [problem]
            record.source.unreadable = ConfigLoader.siteEntries
            records[name] = record
        } else if aliases[name] == nil {
            if entryProblems[name] != problem { logger.error("\(problem.file): \(problem.message)") }
            entryProblems[name] = problem
        }
    }

    /// The sibling name a symlink under `sites/` points to, if it points to one.
    private func siblingTarget(of name: String) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: sitesPath + "/" + name) else { return nil }
        let resolved = URL(fileURLWithPath: target.hasPrefix("/") ? target : sitesPath + "/" + target).standardizedFileURL
        guard resolved.deletingLastPathComponent().path == URL(fileURLWithPath: sitesPath).standardizedFileURL.path else { return nil }
        return resolved.lastPathComponent
    }

    private func forgetDangling(_ name: String) {
        guard let target = danglingTargets.removeValue(forKey: name), var names = danglingAliases[target] else { return }
        names.remove(name)
        danglingAliases[target] = names.isEmpty ? nil : names
    }

    /// A site directory went away: it stops being served.
    private func remove(_ name: String) {
        guard let record = records.removeValue(forKey: name) else { return }
        touchedSinceTaken.insert(name)
        stateCounts[Self.state(of: record), default: 0] -= 1
        var republish = Set<String>()
        for host in record.claims {
            republish.formUnion(release(host, from: name))
        }
        contents.release(record.served?.aasa)
        contents.release(record.served?.assetLinks)
        bump()
        snapshot = snapshot.replacing(name, with: nil, generation: generation)
        logger.info("site removed", metadata: ["site": "\(name)"])
        for other in republish { publish(other) }
    }

    /// Applies a site's new source: per file, the new version if valid, else the last good one.
    /// Returns the sites whose served hosts may have changed (conflicts appearing or clearing).
    private func update(_ name: String) -> Set<String> {
        guard var record = records[name] else { return [] }
        touchedSinceTaken.insert(name)
        let before = Self.state(of: record)
        let source = record.source
        var errors: [String] = []
        for problem in source.problems where problem.severity == .error { errors.append("\(problem.file): \(problem.message)") }

        // site.yaml errors leave its previous settings in force (and the files served under them).
        let settingsBroken =
            source.unreadable.contains("site.yaml") || source.problems.contains { $0.severity == .error && $0.file.hasSuffix("/site.yaml") }
        let settings = settingsBroken ? record.settings : source.settings
        record.settings = settings
        var siteOptions = options
        if let cacheControl = settings.cacheControl { siteOptions.cacheControl = cacheControl }
        let aasa = choose(
            source.aasa, name: ConfigLoader.aasaFileName, unreadable: source.unreadable, previous: record.served?.aasa,
            record: &record, options: siteOptions, errors: &errors)
        let assetLinks = choose(
            source.assetLinks, name: ConfigLoader.assetLinksFileName, unreadable: source.unreadable, previous: record.served?.assetLinks,
            record: &record, options: siteOptions, errors: &errors)
        var certificate = source.certificate
        if certificate == nil && source.unreadable.contains("tls") {
            certificate = record.served?.certificate  // there but unreadable: not gone
        }
        if let files = certificate, let problem = checkCertificate(files) {
            errors.append("\(files.directory): \(problem)")
            certificate = record.served?.certificate  // the last pair that loaded
        }
        if record.served?.aasa !== aasa { contents.release(record.served?.aasa) }
        if record.served?.assetLinks !== assetLinks { contents.release(record.served?.assetLinks) }

        // Claimed hosts: the directory's own, its alias symlinks'.
        let hosts = [source.host] + settings.aliases + (aliasesByTarget[name] ?? []).compactMap { aliases[$0]?.host }.sorted()
        var affected = Set<String>()
        for host in Set(record.claims).subtracting(hosts) {
            affected.formUnion(release(host, from: name))
        }
        for host in Set(hosts).subtracting(record.claims) {
            affected.formUnion(claim(host, for: name))
        }
        record.claims = hosts

        let unchanged = record.served.map { $0.aasa === aasa && $0.assetLinks === assetLinks && $0.certificate == certificate } ?? false
        if aasa == nil && assetLinks == nil {
            record.served = nil
        } else if !unchanged {
            record.served = ServedSite(
                directory: name, hosts: hosts, aasa: aasa, assetLinks: assetLinks, certificate: certificate, loadedAt: clock())
        }
        if errors != record.errors {
            for line in errors { logger.error("\(line)") }
            if errors.isEmpty && !record.errors.isEmpty { logger.info("site fixed", metadata: ["site": "\(name)"]) }
            if !errors.isEmpty {
                logger.error(record.served == nil ? "not served: \(name)" : "serving the last good version: \(name)")
            }
        }
        record.errors = errors
        // What was read is applied: keep no file contents or parsed models (memory at 100,000 sites).
        record.source.aasa = nil
        record.source.assetLinks = nil
        records[name] = record
        stateCounts[before, default: 0] -= 1
        stateCounts[Self.state(of: record), default: 0] += 1
        affected.insert(name)
        return affected
    }

    /// Adds a site's claim on a host; returns the sites that claimed it before.
    private func claim(_ host: HostName, for name: String) -> Set<String> {
        let others = claims[host] ?? []
        claims[host, default: []].insert(name)
        if others.count == 1 && !others.contains(name) { conflictingHosts += 1 }
        return others
    }

    /// Removes a site's claim on a host; returns the sites still claiming it.
    private func release(_ host: HostName, from name: String) -> Set<String> {
        guard var holders = claims[host], holders.remove(name) != nil else { return claims[host] ?? [] }
        if holders.count == 1 { conflictingHosts -= 1 }
        claims[host] = holders.isEmpty ? nil : holders
        return holders
    }

    private static func state(of record: Record) -> SiteState {
        record.served == nil ? .refused : (record.errors.isEmpty ? .serving : .servingLastGood)
    }

    /// The file to serve: the new one when valid; the previous one when the new one is invalid
    /// or cannot be read (only a file that is gone stops being served); none when it is gone.
    ///
    /// Last-Modified rule (issue 10): it moves whenever the content (and so the ETag) changes,
    /// and only then. A new content gets the file's time (the later of mtime and ctime, see
    /// `ConfigLoader.readFile`), but never a time at or before the one last served for that
    /// file: then the last one plus a second. Two edits within a second, or a roll-back whose
    /// ctime ties, still move forward, and a client's If-Modified-Since of an older version
    /// never gets 304 for a newer one. Unchanged content keeps its Last-Modified (a chmod or a
    /// touch changes nothing a client sees). Across restarts the ctime carries the rule.
    private func choose<D>(
        _ file: SiteFile<D>?, name: String, unreadable: Set<String>, previous: PreparedFile?, record: inout Record,
        options: ServingOptions, errors: inout [String]
    ) -> PreparedFile? {
        guard let file else { return unreadable.contains(name) ? previous : nil }
        guard file.result.isValid else {
            for d in file.result.diagnostics.errors { errors.append("\(file.relativePath): \(d)") }
            return previous
        }
        var modified = file.modified
        if let previous, previous.content.body == file.bytes {
            if previous.options == options { return previous }
            modified = previous.lastModified
        } else if let last = record.lastModified[name], modified <= last {
            modified = last + 1
        }
        do {
            let prepared = try contents.prepare(file, modified: modified, options: options)
            if let prepared { record.lastModified[name] = prepared.lastModified }
            return prepared
        } catch {
            // The settings' checks refuse such a value first; never build a head from one.
            errors.append("\(file.relativePath): not served: \(error)")
            return previous
        }
    }

    /// Puts a site's current served version into the snapshot, answering for its hosts that no
    /// other site claims.
    private func publish(_ name: String) {
        bump()
        touchedSinceTaken.insert(name)
        guard let record = records[name], let served = record.served else {
            snapshot = snapshot.replacing(name, with: nil, generation: generation)
            return
        }
        let hosts = record.claims.filter { (claims[$0]?.count ?? 0) <= 1 }
        let conflicted = record.claims.filter { (claims[$0]?.count ?? 0) > 1 }
        for host in conflicted {
            let others = (claims[host] ?? []).subtracting([name]).sorted().joined(separator: ", ")
            logger.error("sites/\(name): the host \(host) is also claimed by \(others); neither serves it until one lets go")
        }
        snapshot = snapshot.replacing(name, with: served.hosts == hosts ? served : served.with(hosts: hosts), generation: generation)
    }

    private func bump() {
        generation += 1
    }

    /// Re-reads `tls/` at the top of the config directory.
    public func reloadDefaultCertificate() {
        var problems: [ConfigProblem] = []
        var unreadable = false
        var files = ConfigLoader.readCertificate(root, "tls", &problems, unreadable: &unreadable)
        for p in problems { logger.error("\(p.file): \(p.message)") }
        defaultCertificateProblem = problems.contains { $0.severity == .error }
        if unreadable {
            logger.error("tls: cannot be read; keeping the previous default certificate")
            files = snapshot.defaultCertificate
        }
        if let f = files, let problem = checkCertificate(f) {
            defaultCertificateProblem = true
            logger.error("\(f.directory): \(problem); keeping the previous default certificate")
            files = snapshot.defaultCertificate
        }
        guard files != snapshot.defaultCertificate else { return }
        bump()
        snapshot = snapshot.with(defaultCertificate: files, generation: generation)
    }

    // MARK: - State

    /// Every site's state, sorted by directory name.
    public var statuses: [SiteStatus] { records.keys.sorted().compactMap(status(of:)) }

    /// One site's state; nil if no site has that directory name.
    public func status(of name: String) -> SiteStatus? {
        guard let r = records[name] else { return nil }
        let conflicted = r.claims.filter { (claims[$0]?.count ?? 0) > 1 }.map(\.name)
        return SiteStatus(
            directory: name, hosts: r.claims.map(\.name), conflictingHosts: conflicted, state: Self.state(of: r),
            etag: r.served?.aasa?.etag,
            loadedAt: r.served?.loadedAt, errors: r.errors)
    }

    /// The sites whose status may have changed since the last call (a full reload: all of them,
    /// and any removed), and forgets them. Costs nothing on the serving path: it is bookkeeping
    /// of the reloader's own changes.
    public func takeTouched() -> Set<String> {
        defer { touchedSinceTaken = [] }
        return touchedSinceTaken
    }

    /// Names under `sites/` that are not sites, with why.
    public var entryErrors: [ConfigProblem] { entryProblems.keys.sorted().map { entryProblems[$0]! } }

    /// Distinct prepared contents held (identical files counted once).
    public var distinctContents: Int { contents.count }
}
