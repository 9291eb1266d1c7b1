import ACME
import Check
import Foundation
import HTTPCore
import HTTPServer
import Hashing
import SafeText
import SiteStore
import Synchronization

/// The admin listener's status page: `/` lists the sites with a problem first (a refused file, a
/// failing or expiring certificate, Apple's CDN without the served file, names refused by the
/// ownership rule, names waiting for their ownership check), worst first, then every site,
/// searchable (`q`) and paged (`after`); `/?site=DIR` shows one site in detail.
///
/// Server-rendered HTML on the admin worker's thread (never a serving one), from the same view
/// `/sites` reads; the overview's sorted names and problem list come from an index built on a
/// queue of its own (`StatusIndex`), so a page never waits for one at 1,000,000 sites: it shows
/// the last one published and says how old it is. No external asset and no script but a constant auto-refresh one; the
/// Content-Security-Policy allows only that script and the page's style, by their SHA-256 (CSP
/// Level 3 §8.4), so markup that got into a value could not run anything either. Every value that
/// came from a file, a directory name, a CA or a client goes through `HTMLText.escaped`.
///
/// Bounded: a page has at most `rowsPerPage` rows a section, every value at most
/// `HTMLText.maximumScalars`, every list in a row at most `itemsPerCell` items, and the whole
/// body stops growing at `maximumBodyBytes`.
package final class StatusPages: Sendable {
    /// Rows in each section of a page: a screenful or two to scan, small enough to render in
    /// milliseconds whatever the number of sites.
    static let rowsPerPage = 100
    /// Hosts, errors or names shown in one cell of a list row (then "and N more"): a site may
    /// have thousands of aliases; its own page shows `detailItems`.
    static let itemsPerCell = 5
    /// Items of each list on a site's page.
    static let detailItems = 100
    /// Names compared per search request, directories and hosts together: a substring search of
    /// 1,000,000 sites goes on from where the last page stopped instead of comparing them all at
    /// once (about 20 ms a request). A site counts its directory and every host; a site whose
    /// names do not fit in what is left waits for the next request, unless it is the first one
    /// a request looks at (a site with more hosts than this is still searched, alone).
    static let searchBudget = 100_000
    /// A body stops at this size with a note: with the bounds above a page is far smaller; this
    /// holds whatever a future column adds.
    static let maximumBodyBytes = 4 << 20
    /// Longest decoded query value read (a directory name is at most 255 bytes); a longer one is
    /// refused with 400.
    static let maximumQueryValue = 1024
    /// A new index is started, when a source changed, only once this many times the last build
    /// time has passed since that build began: at 1,000,000 sites a build of a few seconds takes
    /// the index's queue a tenth of the time at most, leaving the cores to serving, and a small
    /// config is always current.
    static let refreshCostShare = 10.0
    /// Seconds between automatic reloads of the page by its script.
    static let refreshSeconds = 30
    /// Seconds the first overview request since start waits for the first index: a config of
    /// thousands of sites is indexed in milliseconds, so its first visit shows the whole page; a
    /// larger one gets a page that says the index is being built. Only that one request waits
    /// (`firstWaitTaken`): the page reloads itself and an operator may keep several open, and the
    /// probes that share the admin thread must not queue behind each of them (a kubelet probe's
    /// default timeout is one second).
    static let firstIndexWait = 0.5

    /// The last index built, replaced whole when a newer one is done: a page reads one index or
    /// the other, never one being built.
    private let published = PublishedIndex()
    /// What the queue is doing: the key of the build under way, and the newest source asked for
    /// since (one build waits at most, however many reloads or requests came meanwhile).
    private let work = Mutex(Work())
    /// Builds run here, one at a time, never on the admin or a serving thread; utility class, as
    /// gzip's queue (Served/Gzip.swift).
    private let queue = DispatchQueue(label: "aasad.status-index", qos: .utility)
    /// Indexes published since start.
    private let built = Atomic<Int>(0)
    /// Set by the request that waited `firstIndexWait`; later ones never wait.
    private let firstWaitTaken = Atomic<Bool>(false)
    /// Set by `stop`: nothing waiting is built any more.
    private let stopped = Atomic<Bool>(false)
    /// Called on the queue after an index is built and before it is published (tests hold a
    /// build there).
    let beforePublish = Mutex<(@Sendable () -> Void)?>(nil)

    private struct Work {
        var building: StatusIndex.Key?
        var pending: StatusSource?
        /// The queue waits out the cost share (`run`): `pending` is then the one source it will
        /// build, `building` its key, and a newer source replaces it. Only one source waits, so
        /// only one view older than the current one is held (a view holds every site's state).
        var delayed = false
        /// When the last build began (monotonic seconds) and what it cost.
        var lastStart: Double = 0
        var lastCost: Double = 0
    }

    init() {}

    /// Indexes built and published since start.
    package var builds: Int { built.load(ordering: .acquiring) }

    /// Whether a build is under way or waiting.
    package var isBuilding: Bool { work.withLock { $0.building != nil } }

    /// Whether the queue is waiting out the cost share before its next build (for tests).
    package var waitsForCostShare: Bool { work.withLock { $0.delayed } }

    /// Tests: the next build waits `seconds` from now, as if the last build began now and cost
    /// `seconds / refreshCostShare`.
    package func spaceNextBuild(_ seconds: Double) {
        work.withLock {
            $0.lastStart = StatusIndex.monotonic()
            $0.lastCost = seconds / Self.refreshCostShare
        }
    }

    /// The view generation of the index published now.
    package var publishedGeneration: UInt64? { published.current?.generation }

    /// Tests: `hook` runs on the queue after each index is built and before it is published
    /// (nil: none).
    package func holdBuilds(_ hook: (@Sendable () -> Void)?) { beforePublish.withLock { $0 = hook } }

    /// The index published now, if any.
    var index: StatusIndex? { published.current }

    /// Waits until an index for which `predicate` holds is published, at most `timeout` seconds.
    func waitForIndex(_ predicate: @escaping @Sendable (StatusIndex) -> Bool, timeout: Double) -> StatusIndex? {
        published.wait(until: predicate, timeout: timeout)
    }

    /// The published index for the overview, and a build asked for when `source` has changed
    /// since it was made. With no index yet, the first such request waits up to `firstIndexWait`
    /// for it; any other returns at once.
    func index(for source: StatusSource) -> StatusIndex? {
        let current = published.current
        if current?.key == source.key { return current }
        request(source)
        if current == nil, !firstWaitTaken.exchange(true, ordering: .acquiringAndReleasing) {
            return published.wait(until: { _ in true }, timeout: Self.firstIndexWait)
        }
        return current
    }

    /// The daemon stops: a build waiting for its turn (it holds a view and the sources) is
    /// dropped, and none starts after the one under way.
    func stop() {
        stopped.store(true, ordering: .releasing)
        work.withLock { $0.pending = nil }
    }

    /// Asks for an index of `source`: started now when the queue is idle, else kept as the one
    /// to build next in place of any asked for before (a burst of reloads costs the build under
    /// way and one more).
    func request(_ source: StatusSource) {
        let start = work.withLock { work -> Bool in
            if work.delayed {
                // Waiting out the cost share: the newest source is the one to build.
                work.pending = source
                work.building = source.key
                return false
            }
            if let building = work.building {
                // The newest source replaces any waiting one; the one being built needs no other.
                work.pending = building == source.key ? nil : source
                return false
            }
            work.building = source.key
            return true
        }
        if start { queue.async { self.run(source) } }
    }

    /// On the queue: waits out the cost share, builds from the newest source asked for, publishes,
    /// and goes on with the one asked for meanwhile, if any.
    private func run(_ asked: StatusSource) {
        guard !stopped.load(ordering: .acquiring) else {
            work.withLock {
                $0.building = nil
                $0.pending = nil
            }
            return
        }
        let delay = work.withLock { $0.lastStart + $0.lastCost * Self.refreshCostShare } - StatusIndex.monotonic()
        if delay > 0 {
            // The source waits in `work` alone, not in the timer's closure too: the closure held
            // `asked` while a newer source waited as `pending`, two older views (every site's
            // state, tens of megabytes at 1,000,000 sites) through the wait. A newer one asked
            // for while waiting replaces it (`request`).
            work.withLock { work in
                if work.pending == nil { work.pending = asked }
                work.building = work.pending?.key
                work.delayed = true
            }
            queue.asyncAfter(deadline: .now() + delay) { self.runWaiting() }
            return
        }
        let source = work.withLock { work -> StatusSource in
            guard let pending = work.pending else { return asked }
            work.pending = nil
            work.building = pending.key
            return pending
        }
        let fresh = StatusIndex(key: source.key, view: source.view, previous: published.current, lookups: source.lookups, now: Self.now())
        beforePublish.withLock { $0 }?()
        // Counted before it is published: whoever sees the index sees its count.
        built.add(1, ordering: .releasing)
        published.publish(fresh)
        let next = work.withLock { work -> StatusSource? in
            work.lastStart = fresh.builtAt
            work.lastCost = fresh.cost
            guard let pending = work.pending, pending.key != fresh.key else {
                work.pending = nil
                work.building = nil
                return nil
            }
            work.pending = nil
            work.building = pending.key
            return pending
        }
        if let next { queue.async { self.run(next) } }
    }

    /// On the queue, once the cost share is waited out: builds the source waiting, if `stop` left
    /// it.
    private func runWaiting() {
        let source = work.withLock { work -> StatusSource? in
            work.delayed = false
            guard let source = work.pending else {
                work.building = nil
                return nil
            }
            work.pending = nil
            return source
        }
        if let source { run(source) }
    }

    /// `target` is the request target as sent: `/` and a query.
    func answer(target: String, source: StatusSource) -> AdminEndpoint.Answer {
        guard let query = Query(target) else {
            return .init(status: .badRequest, body: Array("bad query\n".utf8))
        }
        var page = StatusHTML(now: Self.now(), view: source.view, lookups: source.lookups)
        if let site = query["site"] {
            // One site's page reads the current view and the sources, not the index.
            guard page.site(site) else {
                return .init(status: .notFound, body: Array("no such site\n".utf8))
            }
        } else {
            let index = index(for: source)
            page.overview(index: index, current: index?.key == source.key, query: query)
        }
        return .init(status: .ok, contentType: "text/html; charset=utf-8", body: page.finish(), fields: Self.fields)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// The page's own style and script, constant: the policy names them by hash.
    static let style = """
        body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}h1{font-size:1.4em;margin:0}\
        table{border-collapse:collapse;width:100%;margin:.5em 0}th,td{border-bottom:1px solid #ddd;padding:4px 6px;\
        text-align:left;vertical-align:top}th{background:#f4f4f4}.bad{background:#fde8e8}.warn{background:#fff6dd}\
        .reason{color:#a00;font-weight:600}.muted{color:#777}code{font-size:12px;word-break:break-all}\
        td.name{overflow-wrap:anywhere;min-width:10em;max-width:24em}.summary span{margin-right:1.5em}
        """
    static let script = "setTimeout(function(){location.reload()},\(refreshSeconds * 1000));"

    /// Content-Security-Policy (CSP Level 3): nothing loads, nothing is framed, forms post only
    /// here; the one style and script run by hash. With the escaping, a second wall.
    static let fields: [(name: String, value: String)] = {
        func hash(_ text: String) -> String { "'sha256-" + Data(Digest.sha256(Array(text.utf8))).base64EncodedString() + "'" }
        let policy =
            "default-src 'none'; style-src \(hash(style)); script-src \(hash(script)); img-src 'none'; base-uri 'none'; "
            + "form-action 'self'; frame-ancestors 'none'"
        return [(name: "Content-Security-Policy", value: policy), (name: "Referrer-Policy", value: "no-referrer")]
    }()
}

/// A request target's query (`application/x-www-form-urlencoded`, the HTML Standard §4.10.21.8):
/// each name's first value, percent-decoded, `+` as a space. Nil for a malformed percent escape or
/// a value over `StatusPages.maximumQueryValue`.
struct Query {
    private var values: [String: String] = [:]

    init?(_ target: String) {
        guard let mark = target.firstIndex(of: "?") else { return }
        for pair in target[target.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = Self.decode(parts[0]), let value = Self.decode(parts.count > 1 ? parts[1] : "") else { return nil }
            if values[name] == nil { values[name] = value }
        }
    }

    subscript(_ name: String) -> String? { values[name] }

    static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var utf8 = text.utf8.makeIterator()
        while let byte = utf8.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = utf8.next().flatMap(HexDigit.value), let low = utf8.next().flatMap(HexDigit.value) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
            guard bytes.count <= StatusPages.maximumQueryValue else { return nil }
        }
        // Bytes that are not UTF-8 become U+FFFD: no site has such a name.
        return String(decoding: bytes, as: UTF8.self)
    }

}

/// The index published last, with a condition for those who wait for one (the first page
/// request, tests).
private final class PublishedIndex: @unchecked Sendable {
    // @unchecked: `index` is read and written only with `condition` locked.
    private let condition = NSCondition()
    private var index: StatusIndex?

    var current: StatusIndex? {
        condition.lock()
        defer { condition.unlock() }
        return index
    }

    func publish(_ fresh: StatusIndex) {
        condition.lock()
        index = fresh
        condition.broadcast()
        condition.unlock()
    }

    func wait(until predicate: (StatusIndex) -> Bool, timeout: Double) -> StatusIndex? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let index, predicate(index) { return index }
            guard condition.wait(until: deadline) else { return index.flatMap { predicate($0) ? $0 : nil } }
        }
    }
}

/// What an index is built from and a page reads: the view, each name's state by look-up, and the
/// sources' versions.
struct StatusSource: Sendable {
    var key: StatusIndex.Key
    var view: AdminView
    var lookups: StatusLookups
}

extension AdminPages {
    /// The status page's sources now: references and versions, nothing copied.
    func statusSource() -> StatusSource {
        let view = sites.current
        let acme = acme()
        let cdn = cdn()
        let verification = verification
        let fetches = fetches
        let key = StatusIndex.Key(
            generation: view.generation, acme: acme.map { .init(object: ObjectIdentifier($0), version: $0.version) },
            cdn: cdn.map { .init(object: ObjectIdentifier($0), version: $0.version) }, verification: verification?.version)
        var lookups = StatusLookups()
        if let acme { lookups.acme = { name in acme.status(of: name) } }
        if let cdn, cdn.settings.apple { lookups.cdn = { site, hosts in cdn.state(ofSite: site, hosts: hosts) } }
        if let cdn, cdn.watchesGoogle { lookups.dal = { site, hosts in cdn.googleState(ofSite: site, hosts: hosts) } }
        if let verification { lookups.verification = { name in verification.record(name)?.verified } }
        lookups.fetches = { site in fetches.site(site) }
        return StatusSource(key: key, view: view, lookups: lookups)
    }
}
