import ACME
import Check
import Foundation
import HTTPServer
import HashTreeCollections
import SiteStore
import Synchronization

/// What the status page reads, taken together: the admin view, the sites' names sorted, the
/// certificate, CDN, ownership-check and fetch states, and the sites with a problem in the
/// order the page lists them. Built on the admin thread when a source changed, never per
/// request: a request looks its page up in it (O(log sites + rows)).
///
/// The sorted names follow the view incrementally: the names a reload added or removed are
/// found by comparing the two views' persistent dictionaries (which skips the subtrees they
/// share) and inserted or removed by binary search, so a one-site reload at 1,000,000 sites
/// costs a copy of the array, not a sort. The problem list is one walk of the sites and the
/// states, rebuilt at most as often as `StatusPages.refreshCostShare` allows.
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
            case .namesRefused: "names refused (ownership rule)"
            case .unverified: "ownership not verified"
            }
        }
    }

    /// One site with at least one problem: its worst first, every kind it has in `kinds`.
    struct Problem: Sendable {
        var worst: Kind
        var directory: String
        var kinds: Set<Kind>

        /// The list's order: worst kind, then directory name.
        static func precedes(_ a: Problem, _ b: Problem) -> Bool {
            a.worst != b.worst ? a.worst < b.worst : a.directory < b.directory
        }
    }

    /// What the index was built from: a source that changes makes it old.
    struct Key: Equatable, Sendable {
        var generation: UInt64
        var fetches: UInt64
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
    let view: AdminView
    /// Every site's directory name, in byte order (String's `<`).
    let sorted: [String]
    let acme: [String: CertificateStatus]?
    let cdn: [String: CDNWatchSchedule.HostState]?
    let verification: [String: Bool]?
    let fetches: [String: FetchLog.SiteFetches]
    /// Sites with a problem, `Problem.precedes` order.
    let problems: [Problem]
    let counts: [Kind: Int]
    /// When it was built (monotonic seconds) and how long that took.
    let builtAt: Double
    let cost: Double

    init(
        key: Key, view: AdminView, previous: StatusIndex?, acme: [String: CertificateStatus]?, cdn: [String: CDNWatchSchedule.HostState]?,
        verification: [String: Bool]?, fetches: [String: FetchLog.SiteFetches], now: Int64
    ) {
        let start = Self.monotonic()
        self.key = key
        self.view = view
        self.acme = acme
        self.cdn = cdn
        self.verification = verification
        self.fetches = fetches
        sorted = Self.sortedNames(view, previous: previous)
        var problems: [Problem] = []
        var counts: [Kind: Int] = [:]
        for (directory, entry) in view.entries {
            let kinds = Self.kinds(entry, directory: directory, acme: acme, cdn: cdn, verification: verification, now: now)
            guard let worst = kinds.min() else { continue }
            for kind in kinds { counts[kind, default: 0] += 1 }
            problems.append(Problem(worst: worst, directory: directory, kinds: kinds))
        }
        problems.sort(by: Problem.precedes)
        self.problems = problems
        self.counts = counts
        builtAt = start
        cost = Self.monotonic() - start
    }

    /// A site's problems from its entry and the states of its names.
    static func kinds(
        _ entry: AdminView.Entry, directory: String, acme: [String: CertificateStatus]?, cdn: [String: CDNWatchSchedule.HostState]?,
        verification: [String: Bool]?, now: Int64
    ) -> Set<Kind> {
        var kinds: Set<Kind> = []
        switch entry.state {
        case .refused: kinds.insert(.refused)
        case .servingLastGood: kinds.insert(.fileRefused)
        case .serving: break
        }
        if entry.refusedHosts > 0 { kinds.insert(.namesRefused) }
        if let acme, entry.ownCertificate == false {
            for host in entry.hosts {
                guard let status = acme[host] else { continue }
                if status.state == .failed { kinds.insert(.certificateFailed) }
                if let notAfter = status.notAfter, notAfter - now < expiringWithin { kinds.insert(.certificateExpiring) }
            }
        }
        if let state = cdn?[directory] {
            switch state.state {
            case .missing: kinds.insert(.cdnMissing)
            case .stale: kinds.insert(.cdnStale)
            case .error: kinds.insert(.cdnError)
            case .current: break
            }
        }
        if let verification, entry.hosts.contains(where: { verification[$0] == false }) { kinds.insert(.unverified) }
        return kinds
    }

    /// The view's names sorted: the previous list with the names removed since skipped and the
    /// names added merged in, in one pass (O(n + k log k) for k added; inserting them one by one
    /// moved the array's tail each time, minutes on the admin thread for a bulk import at
    /// 1,000,000 sites), or a sort when there is no previous list.
    static func sortedNames(_ view: AdminView, previous: StatusIndex?) -> [String] {
        guard let previous else { return view.entries.keys.sorted() }
        if previous.view.generation == view.generation { return previous.sorted }
        let added = view.entries.keys.filter { previous.view.entries[$0] == nil }.sorted()
        var names: [String] = []
        names.reserveCapacity(view.entries.count)
        var next = added.startIndex
        for name in previous.sorted where view.entries[name] != nil {
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
        let probe = Problem(worst: cursor.0, directory: cursor.1, kinds: [])
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
