import Foundation
public import Logging
import Reactor
import Synchronization

// Longer than 400 lines on purpose: inotify's watch table, the mapping of events to sites and the
// debounce share one state on the watcher's thread.

/// Follows the config directory with inotify and reports which sites changed.
///
/// Events are mapped to site names (`sites/NAME/...`), collected, and handed over once the
/// directory has been quiet for `debounce` (at most `maximumDelay` after the first event), so a
/// burst of writes is one reload. A site whose file was modified but not yet closed waits for the
/// close (at most `unclosedWriteGrace`), so a file written in several `write`s is read whole.
/// Queue overflow, a swap of a `..data` symlink (Kubernetes ConfigMap and Secret volumes), a
/// change of `sites/` itself, `requestFullRescan()` (SIGHUP) and the optional periodic timer
/// ask for a full rescan.
///
/// A directory is always watched before it is read (so no change between the read and the watch
/// is missed): a new site directory, a new
/// `tls/` inside one, a directory renamed into `sites/` or a symlink's new target gets its watch
/// as soon as its event arrives, and every site of a batch is watched again before the batch is
/// applied. A file written before the watch was added is read by the batch; one written after it
/// raises an event and a later batch. (Watching after reading lost files written in between until
/// the next full rescan: a recreated site answered 404 with its file on disk.)
public final class ConfigWatcher: @unchecked Sendable {
    // @unchecked: all state but the wake-up pipe and the stop flag is touched by one thread at a
    // time: `init`'s, then (with `sitesInBackground`) the thread watching the site directories,
    // whose work `waitForSites` orders before its caller's (a semaphore), then the watcher's own
    // thread from `start`. The `tls/` watches a first load adds wait in a Mutex until that thread
    // binds them, first thing.

    /// Quiet time before a batch of changes is applied.
    public static let debounce: Int64 = 100
    /// Longest a continuous burst of events may hold a reload back, in milliseconds.
    public static let maximumDelay: Int64 = 1_000
    /// Longest a file opened for writing and not closed holds its site back, in milliseconds.
    public static let unclosedWriteGrace: Int64 = 2_000
    /// Bytes read from inotify at once.
    static let eventBufferSize = 64 * 1024

    /// What changed: site names under `sites/`, a full rescan, or the default certificate.
    public struct Change: Sendable, Equatable {
        public var sites: Set<String> = []
        public var full = false
        public var defaultCertificate = false
        /// The server's settings file (aasad.yaml) at the top of the config directory changed.
        public var settings = false

        public var isEmpty: Bool { sites.isEmpty && !full && !defaultCertificate && !settings }
    }

    private enum Watched: Hashable {
        case root
        case sites
        case site(String)
        case siteTLS(String)
        case defaultTLS
        /// The directory holding a symlink on the way to the config directory (the path of the
        /// link): git-sync's `ROOT/LINK`, renamed over when a new commit is published.
        case link(String)
    }

    /// What one watch stands for.
    private enum Kinds {
        case one(Watched)
        case many(Set<Watched>)

        func forEach(_ body: (Watched) -> Void) {
            switch self {
            case .one(let kind): body(kind)
            case .many(let kinds): kinds.forEach(body)
            }
        }

        func inserting(_ kind: Watched) -> Kinds {
            switch self {
            case .one(kind): self
            case .one(let other): .many([other, kind])
            case .many(let kinds): .many(kinds.union([kind]))
            }
        }

        /// These kinds less `kind`; nil when none is left.
        func removing(_ kind: Watched) -> Kinds? {
            switch self {
            case .one(kind): return nil
            case .one: return self
            case .many(var kinds):
                kinds.remove(kind)
                if kinds.count == 1, let last = kinds.first { return .one(last) }
                return kinds.isEmpty ? nil : .many(kinds)
            }
        }
    }

    /// The watches of a site's directory and of its `tls/`; nil: not watched (gone, not a
    /// directory, or past the watch limit).
    private struct SiteWatch: Equatable {
        var directory: Int32?
        var tls: Int32?
    }

    private let root: String
    private let logger: Logger
    private let rescanInterval: Int64?
    /// Set by `start`, before the thread that calls it runs.
    private var apply: (Change) -> Void = { _ in }
    private let inotify: Inotify
    private static let clock = MonotonicClock()
    private let stopRequested = Atomic<Bool>(false)
    private let fullRescanRequested = Atomic<Bool>(false)
    /// What each watch stands for: one thing, inline (almost every watch: at 100,000 sites a set
    /// per watch was most of the watcher's memory), or several. One directory can stand for
    /// several names: a site and the alias symlinks that point at it share its inode, so inotify
    /// gives them one watch.
    private var watches: [Int32: Kinds] = [:]
    /// The watches each site name's directory and its `tls/` resolve to now, so that a name that
    /// moves on (deleted, renamed, replaced by a symlink, a symlink retargeted) stops being
    /// reported for the directory it left, and a watch no name uses is removed. One entry a
    /// site, its name stored once (the watches' kinds share its storage).
    private var siteWatches: [String: SiteWatch] = [:]
    /// The same for the config directory, `sites/` and `tls/` (keys "root", "sites", "tls"): a
    /// swapped tree leaves its old watches behind, which would report its deletion as changes.
    private var fixedWatches: [String: Int32] = [:]
    /// The watch on each symlink's directory, by the link's path.
    private var linkWatches: [String: Int32] = [:]
    /// Whether the watch limit has been reported since every directory was last watched: said
    /// once per shortage, and again if it comes back after a full pass watched everything.
    private var watchLimitReported = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled when the site directories `init` left to a thread of their own are watched; nil
    /// once waited for, or when `init` watched them itself.
    private var sitesWatched: DispatchSemaphore?
    /// How many site names are watched (for tests: read after `waitForSites`, which orders the
    /// watching thread's work before it).
    var watchedSites: Int { siteWatches.count }
    /// How many site names have their `tls/` watched (for tests, as `watchedSites`).
    var watchedSiteTLS: Int { siteWatches.values.count { $0.tls != nil } }

    /// The `tls/` watches a first load added (`watchTLS(ofSite:)`, from its reading threads),
    /// until the watcher's thread, started by `start`, binds them (nil from then on).
    private let loadTLSWatches = Mutex<[(name: String, watch: Result<Int32, SystemError>)]?>([])

    private var pending = Change()
    private var firstEvent: Int64?
    private var lastEvent: Int64 = 0
    /// Sites with a file modified and not yet closed, since when.
    private var openWrites: [String: Int64] = [:]
    private var lastRescan: Int64

    /// Watches the whole config directory: make it before the first load reads the directory, so
    /// that nothing written while the load runs goes unseen (its events wait in the kernel's queue
    /// until `start`).
    ///
    /// `sitesInBackground`: the config directory, `sites/` and `tls/` are watched before `init`
    /// returns, each site directory on a thread of its own meanwhile (at a million sites, seconds
    /// of path walks and bookkeeping that the first load's listing and ordering of `sites/` need
    /// not wait for); `waitForSites()` returns once they are all watched, and nothing may read a
    /// site's files before it has. Otherwise every watch is added before `init` returns.
    ///
    /// `tlsByLoad`: that first pass leaves the sites' `tls/` folders alone; the first load watches
    /// each one its listing of a site shows, before it reads the pair (`watchTLS(ofSite:)`), and
    /// the watcher's thread takes those watches in when `start` starts it. A site without a `tls/` (most of them) then costs no failed
    /// path walk (2 µs each, docs/benchmarks.md); a `tls/` made after the load listed its site
    /// raises an event in the site's directory, watched before the listing, and is watched then.
    public convenience init(
        root: String, rescanInterval: Int64?, logger: Logger, sitesInBackground: Bool = false, tlsByLoad: Bool = false
    ) throws {
        try self.init(
            root: root, rescanInterval: rescanInterval, logger: logger, sitesInBackground: sitesInBackground, tlsByLoad: tlsByLoad,
            holding: nil)
    }

    /// `holding`: run first on the thread that watches the site directories (a test holds it there).
    init(
        root: String, rescanInterval: Int64?, logger: Logger, sitesInBackground: Bool, tlsByLoad: Bool = false,
        holding: (@Sendable () -> Void)?
    ) throws {
        self.root = root
        self.rescanInterval = rescanInterval
        self.logger = logger
        do {
            inotify = try Inotify()
        } catch {
            throw WatchError("\(error)")
        }
        lastRescan = Self.milliseconds()
        watchFixedParts()
        if sitesInBackground {
            let watching = DispatchSemaphore(value: 0)
            sitesWatched = watching
            // The thread's work happens before `waitForSites` returns (the semaphore orders it):
            // the watcher's state stays one thread's at a time.
            let t = Thread { [self] in
                holding?()
                watchListedSites(tls: !tlsByLoad)
                watching.signal()
            }
            t.name = "aasad-watching"
            t.start()
        } else {
            watchListedSites(tls: !tlsByLoad)
        }
    }

    /// Watches the `tls/` of the site `name` (`sites/NAME/tls`, followed where it leads): what a
    /// first load does for each site whose listing shows one, before it reads the pair, when
    /// `init` was told `tlsByLoad`. Safe on any thread, while the load runs (`inotify_add_watch`
    /// alone); the watcher's thread binds the watches to their sites before it reads an event.
    /// For the load only, which ends before `start`: once the watcher's thread has bound them,
    /// nothing (a `tls/` is then watched by the watcher's own passes), and a call racing that
    /// binding may leave a watch bound to no site (its events ignored until a pass watches it).
    public func watchTLS(ofSite name: String) {
        // The path walk outside the lock: the reading threads add theirs at once.
        guard loadTLSWatches.withLock({ $0 != nil }) else { return }
        let result = Self.addWatch(inotify, Files.joined(root + "/sites/", name, "/tls"), Self.siteMask)
        loadTLSWatches.withLock { $0?.append((name, result)) }
    }

    /// Binds the watches the load added (`watchTLS(ofSite:)`) to their sites, on the thread that
    /// owns the tables from `start` on (the watcher's own, before it reads an event: an event of
    /// one of these watches waits in the queue until then). Not on `start`'s thread: 0.04 s at
    /// 100,000 sites with half a pair that a start would wait for (docs/benchmarks.md).
    private func bindLoadTLSWatches() {
        let added = loadTLSWatches.withLock { added in
            defer { added = nil }
            return added ?? []
        }
        // As `watchSites`: every new binding first, then the release of the old ones, so that a
        // watch another name has just resolved to (a `tls/` two sites share through a link) is
        // never removed as unused.
        for case (let name, .success(let wd)) in added { note(wd, standsFor: .siteTLS(name)) }
        var unwatched = 0
        for (name, result) in added {
            switch result {
            case .success(let wd):
                var watch = siteWatches[name] ?? SiteWatch()
                watch.tls = wd
                bind(site: name, to: watch)
            case .failure(let error):
                if error.isWatchLimit { unwatched += 1 }
            }
        }
        if unwatched > 0 { noteWatchLimit(unwatchedSites: unwatched) }
    }

    /// Returns once every site directory listed at `init` is watched (at once unless `init` was
    /// told to watch them in the background). Safe to call more than once, from one thread at a time.
    public func waitForSites() {
        guard let watching = sitesWatched else { return }
        watching.wait()
        sitesWatched = nil
    }

    public struct WatchError: Error, CustomStringConvertible {
        public var description: String
        init(_ d: String) { description = d }
    }

    /// Starts following changes: `apply` runs on the watcher's thread with each batch, the first
    /// one holding whatever changed since `init`.
    public func start(apply: @escaping (Change) -> Void) {
        waitForSites()
        self.apply = apply
        let t = Thread { [self] in
            bindLoadTLSWatches()
            run()
            finished.signal()
        }
        t.name = "aasad-watcher"
        thread = t
        t.start()
    }

    /// Stops following changes and waits for the watcher's thread. The thread's closure and
    /// `apply` hold this watcher (and whatever `apply` captured), so both are let go here: a
    /// stopped watcher is freed and closes its inotify descriptor, of which a user has only
    /// `fs.inotify.max_user_instances` (128 by default), even when one process starts and stops
    /// many daemons (Tests/DaemonTesting).
    public func stop() {
        waitForSites()
        stopRequested.store(true, ordering: .releasing)
        wake()
        if thread != nil {
            finished.wait()
            thread = nil
        }
        apply = { _ in }
    }

    /// Asks for a full rescan (SIGHUP); safe from any thread.
    public func requestFullRescan() {
        fullRescanRequested.store(true, ordering: .releasing)
        wake()
    }

    private func wake() {
        inotify.wake()
    }

    static func milliseconds() -> Int64 {
        clock.milliseconds()
    }

    // MARK: - Watches

    private static let directoryMask: Inotify.Mask = [
        .created, .deleted, .movedFrom, .movedTo, .attributes, .deletedSelf, .movedSelf, .closedAfterWrite, .modified,
    ]

    @discardableResult
    private func add(_ path: String, _ kind: Watched) -> Int32? {
        switch Self.addWatch(inotify, path, Self.directoryMask) {
        case .success(let wd):
            note(wd, standsFor: kind)
            return wd
        case .failure(let error):
            noteFailure(error)
            return nil
        }
    }

    /// inotify_add_watch alone: safe on any thread (the bookkeeping is the caller's).
    private static func addWatch(_ inotify: Inotify, _ path: String, _ mask: Inotify.Mask) -> Result<Int32, SystemError> {
        do throws(SystemError) {
            return .success(try inotify.addWatch(path, mask))
        } catch {
            return .failure(error)
        }
    }

    private func noteFailure(_ error: SystemError) {
        if error.isWatchLimit { noteWatchLimit(unwatchedSites: 0) }
    }

    private func note(_ wd: Int32, standsFor kind: Watched) {
        watches[wd] = watches[wd]?.inserting(kind) ?? .one(kind)
    }

    /// Records that `kind` now resolves to `wd` (nil: to nothing); the watch it left loses it, and
    /// is removed when nothing else stands for it.
    private func bind(_ table: inout [String: Int32], _ name: String, to wd: Int32?, _ kind: Watched) {
        let old = table[name]
        guard old != wd else { return }
        table[name] = wd
        release(old, kind)
    }

    /// `bind` for a site's directory and its `tls/`.
    private func bind(site name: String, to watch: SiteWatch) {
        let old = siteWatches[name] ?? SiteWatch()
        guard old != watch else { return }
        siteWatches[name] = watch == SiteWatch() ? nil : watch
        if old.directory != watch.directory { release(old.directory, .site(name)) }
        if old.tls != watch.tls { release(old.tls, .siteTLS(name)) }
    }

    /// `kind` no longer resolves to `wd`: the watch is removed when nothing else stands for it.
    private func release(_ wd: Int32?, _ kind: Watched) {
        guard let wd, let kinds = watches[wd] else { return }
        if let left = kinds.removing(kind) {
            watches[wd] = left
        } else {
            watches[wd] = nil
            inotify.removeWatch(wd)
        }
    }

    /// Watches the root, `sites/`, every site directory and its `tls/`, and the default `tls/`.
    /// inotify_add_watch returns the existing watch for a directory already watched.
    private func watchEverything() {
        watchFixedParts()
        watchListedSites()
    }

    /// The first part of `watchEverything`: what leads to the config directory, the directory
    /// itself, `sites/` and the default `tls/`.
    private func watchFixedParts() {
        watchLinks()
        watchFixed("root", root, .root)
        watchFixed("tls", root + "/tls", .defaultTLS)
        watchFixed("sites", root + "/sites", .sites)
    }

    /// The second: every name listed in `sites/` now (watched after `sites/` itself, so that a
    /// name made after the listing raises an event there) and every one watched before; `tls`:
    /// their `tls/` too (not in the first pass of `init(tlsByLoad:)`).
    private func watchListedSites(tls: Bool = true) {
        let listed = ((try? Files.entries(of: root + "/sites")) ?? []).filter { !$0.hasPrefix(".") }
        // Names watched before and gone now let go of their watches too. The first time, the
        // tables are grown once for every name (at a million sites their doublings were a third
        // of the bookkeeping, perf in docs/benchmarks.md).
        if siteWatches.isEmpty {
            siteWatches.reserveCapacity(listed.count)
            watches.reserveCapacity(watches.count + listed.count)
        }
        let unwatched = watchSites(siteWatches.isEmpty ? listed : Array(Set(listed).union(siteWatches.keys)), tls: tls)
        if unwatched == 0 && watchLimitReported && fixedWatches.count == 3 {
            watchLimitReported = false
            logger.info("every site directory is watched again", metadata: ["watched": "\(watches.count)"])
        }
    }

    /// Watches what a fixed part of the config directory resolves to now, letting go of what it
    /// resolved to before.
    private func watchFixed(_ key: String, _ path: String, _ kind: Watched) {
        bind(&fixedWatches, key, to: add(path, kind), kind)
    }

    /// Watches the directory of every symlink on the way to the config directory: inotify
    /// follows links when a watch is added, so the watches below see the tree the link named
    /// then, and a new tree published by renaming a link over it (git-sync, a deploy job) raises
    /// no event in them. The rename does raise one in the link's own directory.
    private func watchLinks() {
        let absolute = root.hasPrefix("/") ? root : FileManager.default.currentDirectoryPath + "/" + root
        var links: [String] = []
        var prefix = ""
        for component in absolute.split(separator: "/") where component != "." {
            prefix += "/" + component
            if (try? Files.linkStatus(prefix))?.kind == .symbolicLink { links.append(prefix) }
        }
        for link in links {
            let parent = String(link[..<(link.lastIndex(of: "/") ?? link.startIndex)])
            bind(&linkWatches, link, to: add(parent.isEmpty ? "/" : parent, .link(link)), .link(link))
        }
        for link in Set(linkWatches.keys).subtracting(links) {
            bind(&linkWatches, link, to: nil, .link(link))
        }
    }

    /// Watches what `sites/NAME` and its `tls/` resolve to now (following symlinks: an alias, or
    /// a Kubernetes `..data/NAME`), or nothing when they are gone.
    private func watchSite(_ name: String) {
        watchSites([name])
    }

    /// The same for many names. The watches are added on every core for a large batch (at
    /// 100,000 sites, one path walk each is seconds on one); the bookkeeping follows on this
    /// thread: first every new binding, then the release of the old ones, so that a watch
    /// another name has just resolved to is never removed as unused.
    /// Returns how many of the names could not be watched for inotify's watch limit.
    @discardableResult
    private func watchSites(_ names: [String], tls: Bool = true) -> Int {
        let inotify = self.inotify
        let sites = root + "/sites/"
        let resolve: @Sendable (String) -> (site: Result<Int32, SystemError>, tls: Result<Int32, SystemError>?) = { name in
            // Each path made with one allocation (`+` makes one a step, three a site).
            let path = Files.joined(sites, name)
            let site = Self.addWatch(inotify, path, Self.siteMask)
            guard case .success = site, tls else { return (site, nil) }
            return (site, Self.addWatch(inotify, Files.joined(path, "/tls"), Self.siteMask))
        }
        let resolved = Parallel.map(names, threshold: Self.parallelThreshold, resolve)
        for (name, watched) in zip(names, resolved) {
            if case .success(let wd) = watched.site { note(wd, standsFor: .site(name)) }
            if case .success(let wd) = watched.tls { note(wd, standsFor: .siteTLS(name)) }
        }
        var unwatched = 0
        for (name, watched) in zip(names, resolved) {
            // Gone, or not a directory: ENOENT and ENOTDIR are no failure.
            // A site counts once, whether its directory or only its tls/ went unwatched (when
            // its directory fails, its tls/ is not tried).
            let failures = [watched.site, watched.tls].compactMap { result -> SystemError? in
                if case .failure(let error) = result, !error.isNoSuchFile { return error }
                return nil
            }
            if failures.contains(where: \.isWatchLimit) { unwatched += 1 }
            bind(site: name, to: SiteWatch(directory: try? watched.site.get(), tls: watched.tls.flatMap { try? $0.get() }))
        }
        if unwatched > 0 { noteWatchLimit(unwatchedSites: unwatched) }
        return unwatched
    }

    /// Says once per shortage how many sites went unwatched and what limit would cover them:
    /// past `fs.inotify.max_user_watches` (often 8,192 to about 200,000, sized by the machine's
    /// memory) a change to those sites is seen only by a full rescan. The limit counts every
    /// watch of this user id in every process (other aasad processes, editors, file indexers),
    /// so the advice is the limit now plus what this process still needs: two watches a site
    /// (its directory and its `tls/`) at most, and a tenth more.
    private func noteWatchLimit(unwatchedSites: Int) {
        guard !watchLimitReported else { return }
        watchLimitReported = true
        let limit = (try? ConfigLoader.readBounded(path: "/proc/sys/fs/inotify/max_user_watches", limit: 64).get())
            .flatMap { Int(String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) }
        let more = max(2 * unwatchedSites, 16)
        let advice = limit.map { "to at least \($0 + more + ($0 + more) / 10)" } ?? "by at least \(more + more / 10)"
        let what =
            unwatchedSites > 0
            ? "\(unwatchedSites) sites are not watched (their directory or its tls/)"
            : "a directory of the config is not watched"
        logger.warning(
            "inotify watch limit reached: \(what), and changes there are seen only by --rescan-interval or SIGHUP; the limit counts every watch of this user in every process; raise fs.inotify.max_user_watches (sysctl) \(advice)",
            metadata: [
                "unwatched_sites": "\(unwatchedSites)", "watches": "\(watches.count)", "limit": "\(limit.map(String.init) ?? "unknown")",
            ])
    }

    /// What a site's directory and its `tls/` are watched for.
    static let siteMask = directoryMask.union(.onlyDirectory)

    /// Batches of names larger than this are watched on every core.
    static let parallelThreshold = 256

    /// A watch inotify dropped (its directory deleted or unmounted): the names it stood for no
    /// longer resolve to it.
    private func forget(_ wd: Int32) {
        guard let kinds = watches.removeValue(forKey: wd) else { return }
        kinds.forEach { kind in
            switch kind {
            case .site(let name) where siteWatches[name]?.directory == wd: forget(site: name) { $0.directory = nil }
            case .siteTLS(let name) where siteWatches[name]?.tls == wd: forget(site: name) { $0.tls = nil }
            case .link(let path) where linkWatches[path] == wd: linkWatches[path] = nil
            case .root where fixedWatches["root"] == wd: fixedWatches["root"] = nil
            case .sites where fixedWatches["sites"] == wd: fixedWatches["sites"] = nil
            case .defaultTLS where fixedWatches["tls"] == wd: fixedWatches["tls"] = nil
            default: break
            }
        }
    }

    private func forget(site name: String, _ change: (inout SiteWatch) -> Void) {
        guard var watch = siteWatches[name] else { return }
        change(&watch)
        siteWatches[name] = watch == SiteWatch() ? nil : watch
    }

    // MARK: - The loop

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.eventBufferSize, alignment: 8)
        defer { buffer.deallocate() }
        while !stopRequested.load(ordering: .acquiring) {
            if inotify.wait(milliseconds: nextTimeout()) { readEvents(buffer) }
            let now = Self.milliseconds()
            if fullRescanRequested.exchange(false, ordering: .acquiring) {
                note(now) { $0.full = true }
            }
            if let interval = rescanInterval, now - lastRescan >= interval * 1000 {
                note(now) { $0.full = true }
            }
            flushIfDue(now)
        }
    }

    /// How long poll may sleep: until the batch is due, the periodic rescan, or 1 s.
    private func nextTimeout() -> Int64 {
        var timeout: Int64 = 1000
        if let first = firstEvent {
            let now = Self.milliseconds()
            timeout = max(0, min(lastEvent + Self.debounce, first + Self.maximumDelay) - now)
            if !openWrites.isEmpty { timeout = min(timeout, 50) }
        }
        return timeout
    }

    private func note(_ now: Int64, _ change: (inout Change) -> Void) {
        change(&pending)
        if firstEvent == nil { firstEvent = now }
        lastEvent = now
    }

    private func readEvents(_ buffer: UnsafeMutableRawBufferPointer) {
        let now = Self.milliseconds()
        do {
            try inotify.readEvents(into: buffer) { handle($0, now: now) }
        } catch {
            // Events are lost: read everything again.
            logger.warning("cannot read inotify events; rescanning everything", metadata: ["error": "\(error)"])
            note(now) { $0.full = true }
        }
    }

    private func handle(_ event: Inotify.Event, now: Int64) {
        let mask = event.mask
        if mask.contains(.overflow) {
            logger.warning("inotify queue overflowed; rescanning everything")
            note(now) { $0.full = true }
            return
        }
        // A watch removed (its directory deleted, or a ConfigMap's old target cleaned up) still
        // says which site to re-read.
        guard let kinds = watches[event.watch] else { return }
        if mask.contains(.ignored) { forget(event.watch) }
        kinds.forEach { handle($0, mask: mask, name: event.name, now: now) }
    }

    private func handle(_ kind: Watched, mask: Inotify.Mask, name: String, now: Int64) {
        let entryChanged = !mask.isDisjoint(with: [.created, .movedTo, .deleted, .movedFrom, .attributes])
        switch kind {
        case .root:
            if name == "sites" || name.hasPrefix("..") {
                // Watched now, before the full rescan reads it (watchEverything again then).
                if name == "sites" && entryChanged { watchFixed("sites", root + "/sites", .sites) }
                note(now) { $0.full = true }
            } else if name == "tls" {
                if entryChanged { watchFixed("tls", root + "/tls", .defaultTLS) }
                note(now) { $0.defaultCertificate = true }
            } else if name == "aasad.yaml" {
                note(now) { $0.settings = true }
            } else if name == AliasPolicy.fileName {
                // Read by a full reload, which decides every alias again.
                note(now) { $0.full = true }
            }
        case .sites:
            if !mask.isDisjoint(with: [.deletedSelf, .movedSelf]) || name.hasPrefix("..") {
                // The directory itself moved, or a ConfigMap swapped ..data under it.
                note(now) { $0.full = true }
            } else if !name.hasPrefix(".") {
                // A new (or renamed, or re-pointed) entry is watched before the batch reads it.
                if entryChanged { watchSite(name) }
                note(now) { $0.sites.insert(name) }
            }
        case .site(let site), .siteTLS(let site):
            if case .site = kind, name == "tls", entryChanged { watchSite(site) }
            if mask.contains(.modified) {
                openWrites[site] = openWrites[site] ?? now
            }
            if mask.contains(.closedAfterWrite) {
                openWrites[site] = nil
            }
            note(now) { $0.sites.insert(site) }
        case .defaultTLS:
            note(now) { $0.defaultCertificate = true }
        case .link(let path):
            // Another tree published (or the link's directory itself moved): the new tree is
            // read whole, as one snapshot.
            if name == path.split(separator: "/").last.map(String.init) || !mask.isDisjoint(with: [.deletedSelf, .movedSelf]) {
                note(now) { $0.full = true }
            }
        }
    }

    private func flushIfDue(_ now: Int64) {
        guard let first = firstEvent else { return }
        guard now - lastEvent >= Self.debounce || now - first >= Self.maximumDelay else { return }
        // Sites still being written wait for their close, within the grace period.
        var held = Set<String>()
        for (site, since) in openWrites {
            if now - since < Self.unclosedWriteGrace { held.insert(site) } else { openWrites[site] = nil }
        }
        var batch = pending
        batch.sites.subtract(held)
        pending = Change(sites: held)
        firstEvent = held.isEmpty ? nil : now
        guard !batch.isEmpty else { return }
        if batch.full { lastRescan = now }
        // Watch first, then read: a change after the watch is an event for the next batch.
        if batch.full {
            watchEverything()
        } else {
            batch.sites.sorted().forEach(watchSite)
            if batch.defaultCertificate { watchFixed("tls", root + "/tls", .defaultTLS) }
        }
        apply(batch)
    }
}
