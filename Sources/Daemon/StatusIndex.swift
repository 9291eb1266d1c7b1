import ACME
import Check
import Foundation
import HTTPServer
import HashTreeCollections
import SiteStore
import Synchronization

/// What the status page's overview reads besides the current view: every site's directory name
/// sorted, and the sites with a problem in the order the page lists them. Built off the admin
/// thread by `StatusPages` (its own queue) when a source changed, published whole, never per
/// request: a request looks its page up in it (O(log sites + rows)).
///
/// Compact: it holds names, a problem bitset per problem site and counts, no site's entry, no
/// certificate, CDN, ownership-check or fetch state (a page row looks those up by name in the
/// sources themselves, `StatusLookups`), and no view: an index kept while a newer one is built
/// pins no `ServedSite` a reload has replaced. At 1,000,000 sites it is the sorted names (16
/// bytes each; the strings are the view's own) and the problem list.
///
/// Both follow the views incrementally: the names the reloads since touched (`NameJournal`) are
/// looked up in the old list and the view, and the ones added or removed are merged in one pass
/// (a reload that only changed sites reuses the old list as it is); and when no certificate,
/// CDN or ownership-check state moved, only the touched sites' problems are found again.
final class StatusIndex: Sendable {
    /// What a problem is, in the order the page lists them: a site nothing is served for first.
    enum Kind: Int, Sendable, CaseIterable, Comparable {
        /// Nothing good was ever loaded: not served.
        case refused
        /// A file was refused; its last good version is served.
        case fileRefused
        /// The last certificate order failed.
        case certificateFailed
        /// The served certificate ends within `expiringWithin`.
        case certificateExpiring
        /// Apple's CDN has no copy.
        case cdnMissing
        /// Apple's CDN holds another file than the one served.
        case cdnStale
        /// Apple's CDN could not be asked.
        case cdnError
        /// Google's Digital Asset Links API lists no app for the site (`cdn-watch.google`).
        case dalMissing
        /// Google lists other apps than the served assetlinks.json.
        case dalStale
        /// Google's API could not be asked, or its answer was refused.
        case dalError
        /// A name the site claims is held by another site or not allowed (`HostOwnership`).
        case namesRefused
        /// A name waits for the tenant API's ownership check.
        case unverified

        static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }

        var label: String {
            switch self {
            case .refused: "not served: no valid file"
            case .fileRefused: "file refused, last good version served"
            case .certificateFailed: "certificate order failing"
            case .certificateExpiring: "certificate expiring"
            case .cdnMissing: "Apple CDN: no copy"
            case .cdnStale: "Apple CDN: stale copy"
            case .cdnError: "Apple CDN: not reachable"
            case .dalMissing: "Google DAL: no app listed"
            case .dalStale: "Google DAL: other apps listed"
            case .dalError: "Google DAL: not usable"
            case .namesRefused: "names refused (ownership rule)"
            case .unverified: "ownership not verified"
            }
        }
    }

    /// A set of kinds as bits: two bytes a problem site instead of a hash set's allocation.
    struct Kinds: Sendable, Equatable {
        private(set) var bits: UInt16 = 0

        mutating func insert(_ kind: Kind) { bits |= 1 << kind.rawValue }
        func contains(_ kind: Kind) -> Bool { bits & (1 << kind.rawValue) != 0 }
        var isEmpty: Bool { bits == 0 }
        /// The kinds in the page's order, worst first.
        var sorted: [Kind] { Kind.allCases.filter(contains) }
        var worst: Kind? { Kind.allCases.first(where: contains) }
    }

    /// One site with at least one problem: its worst first, every kind it has in `kinds`.
    struct Problem: Sendable {
        var worst: Kind
        var directory: String
        var kinds: Kinds

        /// The list's order: worst kind, then directory name.
        static func precedes(_ a: Problem, _ b: Problem) -> Bool {
            a.worst != b.worst ? a.worst < b.worst : a.directory < b.directory
        }
    }

    /// What the index was built from: a source that changes makes it old. Fetches are not in
    /// it: the page reads them per row, and no problem depends on them.
    struct Key: Equatable, Sendable {
        var generation: UInt64
        var acme: Source?
        var cdn: Source?
        var verification: UInt64?
    }

    struct Source: Equatable, Sendable {
        var object: ObjectIdentifier
        var version: UInt64
    }

    /// A certificate ending within this is a problem: Let's Encrypt's 90-day certificates are
    /// renewed a third before their end (CertificateManager's `renewAt`, 30 days), so one left
    /// with 14 days has failed to renew for more than two weeks.
    static let expiringWithin: Int64 = 14 * 86_400

    let key: Key
    /// The view generation it was built from.
    var generation: UInt64 { key.generation }
    /// Every site's directory name, in byte order (String's `<`).
    let sorted: [String]
    /// Sites with a problem, `Problem.precedes` order.
    let problems: [Problem]
    /// Problem sites by kind, indexed by `Kind.rawValue`.
    let counts: [Int]
    /// When it was built: seconds since the epoch (the page says how old it is), and monotonic
    /// seconds; how long that took.
    let builtAtWall: Int64
    let builtAt: Double
    let cost: Double
    /// When every site's problems were last found afresh (seconds since the epoch).
    let walkedAt: Int64

    /// Seconds after which a rebuild looks at every site again even when only a few changed: a
    /// certificate enters `expiringWithin` by time passing alone, and is then listed within
    /// this (an hour against a window of 14 days).
    static let fullWalkEvery: Int64 = 3_600

    /// The sites touched since `previous` when they are all that can have changed: the same
    /// certificate, CDN and ownership-check versions, a journal that reaches back, and a full
    /// walk less than `fullWalkEvery` ago. Nil when every site must be looked at.
    static func onlyTouched(_ view: AdminView, key: Key, previous: StatusIndex, now: Int64) -> Set<String>? {
        guard key.acme == previous.key.acme, key.cdn == previous.key.cdn, key.verification == previous.key.verification,
            now - previous.walkedAt < fullWalkEvery, previous.generation <= view.generation,
            let touched = view.journal.names(after: previous.generation)
        else { return nil }
        return Set(touched)
    }

    init(key: Key, view: AdminView, previous: StatusIndex?, lookups: StatusLookups, now: Int64) {
        let start = Self.monotonic()
        self.key = key
        sorted = Self.sortedNames(view, previous: previous)
        var problems: [Problem] = []
        if let previous, let touched = Self.onlyTouched(view, key: key, previous: previous, now: now) {
            // Nothing but these sites changed since the previous index: its other problems stand.
            problems = previous.problems.filter { !touched.contains($0.directory) }
            for directory in touched {
                guard let entry = view[directory] else { continue }
                let kinds = Self.kinds(entry, directory: directory, lookups: lookups, now: now)
                if let worst = kinds.worst { problems.append(Problem(worst: worst, directory: directory, kinds: kinds)) }
            }
            walkedAt = previous.walkedAt
        } else {
            for directory in view.directories {
                guard let entry = view[directory] else { continue }
                let kinds = Self.kinds(entry, directory: directory, lookups: lookups, now: now)
                if let worst = kinds.worst { problems.append(Problem(worst: worst, directory: directory, kinds: kinds)) }
            }
            walkedAt = now
        }
        problems.sort(by: Problem.precedes)
        var counts = [Int](repeating: 0, count: Kind.allCases.count)
        for problem in problems {
            for kind in problem.kinds.sorted { counts[kind.rawValue] += 1 }
        }
        self.problems = problems
        self.counts = counts
        builtAtWall = now
        builtAt = start
        cost = Self.monotonic() - start
    }

    /// A site's problems from its entry and the states of its names, looked up one by one.
    static func kinds(_ entry: AdminView.Entry, directory: String, lookups: StatusLookups, now: Int64) -> Kinds {
        var kinds = Kinds()
        switch entry.state {
        case .refused: kinds.insert(.refused)
        case .servingLastGood: kinds.insert(.fileRefused)
        case .serving: break
        }
        if entry.refusedHosts > 0 { kinds.insert(.namesRefused) }
        if let acme = lookups.acme, entry.ownCertificate == false {
            for host in entry.hosts {
                guard let status = acme(host) else { continue }
                if status.state == .failed { kinds.insert(.certificateFailed) }
                if let notAfter = status.notAfter, notAfter - now < expiringWithin { kinds.insert(.certificateExpiring) }
            }
        }
        if let state = lookups.cdn?(directory, entry.hosts) {
            switch state.state {
            case .missing: kinds.insert(.cdnMissing)
            case .stale: kinds.insert(.cdnStale)
            case .error: kinds.insert(.cdnError)
            case .current: break
            }
        }
        if let state = lookups.dal?(directory, entry.hosts) {
            switch state.state {
            case .missing: kinds.insert(.dalMissing)
            case .stale: kinds.insert(.dalStale)
            case .error: kinds.insert(.dalError)
            case .current: break
            }
        }
        if let verification = lookups.verification, entry.hosts.contains(where: { verification($0) == false }) {
            kinds.insert(.unverified)
        }
        return kinds
    }

    /// The view's names sorted. From the previous list when the journal reaches back to it:
    /// each name touched since is looked up in the old list (binary search) and in the view, and
    /// the ones added or removed are merged in one pass (O(n + k log n) for k touched; inserting
    /// them one by one moved the array's tail each time, minutes for a bulk import at 1,000,000
    /// sites); when none was added or removed the old list is the new one, shared. A sort when
    /// there is no previous list or the journal no longer reaches it.
    static func sortedNames(_ view: AdminView, previous: StatusIndex?) -> [String] {
        guard let previous else { return view.directories.sorted() }
        if previous.generation == view.generation { return previous.sorted }
        // An index of a newer view than this one (never built today): the journal cannot say
        // what to undo.
        guard previous.generation < view.generation else { return view.directories.sorted() }
        guard let touched = view.journal.names(after: previous.generation) else { return view.directories.sorted() }
        var added: [String] = []
        var removedAt: [Int] = []
        for name in Set(touched) {
            let at = lowerBound(previous.sorted, name)
            let was = at < previous.sorted.count && previous.sorted[at] == name
            let now = view[name] != nil
            if was && !now { removedAt.append(at) } else if !was && now { added.append(name) }
        }
        if added.isEmpty && removedAt.isEmpty { return previous.sorted }
        added.sort()
        removedAt.sort()
        var names: [String] = []
        names.reserveCapacity(previous.sorted.count + added.count - removedAt.count)
        var next = added.startIndex
        var skip = removedAt.startIndex
        for (position, name) in previous.sorted.enumerated() {
            if skip < removedAt.endIndex, removedAt[skip] == position {
                skip += 1
                continue
            }
            while next < added.endIndex, added[next] < name {
                names.append(added[next])
                next += 1
            }
            names.append(name)
        }
        names.append(contentsOf: added[next...])
        return names
    }

    /// The first position in `names` whose name is not below `name`.
    static func lowerBound(_ names: [String], _ name: String) -> Int {
        var low = 0
        var high = names.count
        while low < high {
            let middle = low + (high - low) / 2
            if names[middle] < name { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The first problem after `cursor` (worst kind, directory) in the list's order.
    func problemIndex(after cursor: (Kind, String)) -> Int {
        var low = 0
        var high = problems.count
        let probe = Problem(worst: cursor.0, directory: cursor.1, kinds: Kinds())
        while low < high {
            let middle = low + (high - low) / 2
            if !Problem.precedes(probe, problems[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    static func monotonic() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// Where the status page reads each name's state, one name at a time: the certificate manager's,
/// the CDN watch's, the ownership checks' and the fetch log's own storage, never a copy of every
/// name's (at 1,000,000 names a copy of the ACME states alone is hundreds of megabytes, and a
/// copy of the fetch log's dictionary kept alive would make the next fetch, on a serving
/// thread, copy it again). A nil closure is a source that is off.
struct StatusLookups: Sendable {
    /// A name's automatic certificate state; nil when the name has none.
    var acme: (@Sendable (String) -> CertificateStatus?)?
    /// A site's worst CDN host state, from the site's directory and hosts.
    var cdn: (@Sendable (String, [String]) -> CDNWatchSchedule.HostState?)?
    /// A site's worst host state in Google's Digital Asset Links view, the same way.
    var dal: (@Sendable (String, [String]) -> CDNWatchSchedule.HostState?)?
    /// Whether a name passed its ownership check; nil when it has none.
    var verification: (@Sendable (String) -> Bool?)?
    /// A site's fetches by Apple's CDN.
    var fetches: @Sendable (String) -> FetchLog.SiteFetches? = { _ in nil }
}

/// The names each recent reload touched (added, removed or changed), by the view generation it
/// made: what the status index needs to follow the sorted names from the view it was built from
/// to the current one, without keeping that old view (which would pin every `ServedSite` a
/// reload has replaced since). Bounded; a journal that no longer reaches back far enough makes
/// the index sort the names again.
struct NameJournal: Sendable {
    /// Names kept, all generations together: a rebuild more than this many changes behind sorts
    /// (at 1,000,000 sites a sort costs about what looking up this many names in the old list
    /// does). 64 Ki names are 1 MB of references; the strings are the view's own.
    static let maximumNames = 65_536
    /// Reloads kept: each is a small array, and a view copies the list of them.
    static let maximumSegments = 1_024

    /// Every name touched by a reload that made a generation above `from` is here.
    private(set) var from: UInt64
    private var segments: [(generation: UInt64, names: [String])] = []
    private var count = 0

    init(from generation: UInt64) {
        from = generation
    }

    /// This journal with the reload that made `generation` (the next one) and touched `names`.
    func appending(generation: UInt64, names: [String]) -> NameJournal {
        guard names.count <= Self.maximumNames else { return NameJournal(from: generation) }
        var next = self
        if !names.isEmpty {
            next.segments.append((generation, names))
            next.count += names.count
        }
        var dropped = 0
        while next.count > Self.maximumNames || next.segments.count - dropped > Self.maximumSegments {
            next.count -= next.segments[dropped].names.count
            next.from = next.segments[dropped].generation
            dropped += 1
        }
        if dropped > 0 { next.segments.removeFirst(dropped) }
        return next
    }

    /// Every name touched by the reloads after generation `since` (repeats possible); nil when
    /// the journal no longer reaches back to it.
    func names(after since: UInt64) -> [String]? {
        guard since >= from else { return nil }
        return segments.filter { $0.generation > since }.flatMap(\.names)
    }
}
