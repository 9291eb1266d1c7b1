import Foundation
import Reactor
import Synchronization

/// The site names under `sites/` in byte order, for the list's pages: listed and sorted once,
/// then again only when `sites/` changed (its mtime moved, or the API wrote), and at most once per
/// `relistInterval`, so that pages over 1,000,000 sites cost a binary search and the names of one
/// page, not a listing each.
final class SiteNames: Sendable {
    /// How stale a page may be after a change made outside the API: one listing per second at
    /// most, whatever the request rate (a listing of 1,000,000 names takes about a second).
    static let relistInterval: Duration = .seconds(1)

    let sitesPath: String
    private let cache = Mutex<Cache>(Cache())

    private struct Cache {
        var names: [String] = []
        var modified: [Int64]?
        var listedAt: ContinuousClock.Instant?
        var stale = true
    }

    init(sitesPath: String) {
        self.sitesPath = sitesPath
    }

    /// The API changed `sites/`: the next page after the interval lists it again.
    func changed() {
        cache.withLock { $0.stale = true }
    }

    struct Page {
        var hosts: [String]
        /// The last name looked at when names remain after it: the next page starts after it.
        var last: String?
    }

    /// Up to `limit` names after `after` for which `matches` holds, looking at no more than
    /// `scanning` names.
    func page(after: String?, limit: Int, scanning: Int, where matches: (String) -> Bool) -> Page {
        let names = current()
        var low = 0
        if let after {
            var high = names.count
            while low < high {
                let mid = (low + high) / 2
                if names[mid].utf8.lexicographicallyPrecedes(after.utf8) || names[mid] == after { low = mid + 1 } else { high = mid }
            }
        }
        var hosts: [String] = []
        var index = low
        var looked = 0
        while index < names.count && hosts.count < limit && looked < scanning {
            if matches(names[index]) { hosts.append(names[index]) }
            index += 1
            looked += 1
        }
        return Page(hosts: hosts, last: index < names.count && index > low ? names[index - 1] : nil)
    }

    private func current() -> [String] {
        cache.withLock { cache in
            let now = ContinuousClock.now
            let status = try? Files.status(sitesPath)
            let modified = status.map { [$0.modifiedNanoseconds, $0.changed, Int64(truncatingIfNeeded: $0.inode)] }
            let due = cache.listedAt.map { now - $0 >= Self.relistInterval } ?? true
            // At most one listing per interval, even when the API itself wrote: at 1,000,000 sites
            // a listing per write would cost more than the writes.
            guard due && (cache.stale || modified != cache.modified) else { return cache.names }
            cache.listedAt = now
            cache.modified = modified
            cache.stale = false
            let listed = (try? Files.entries(of: sitesPath)) ?? []
            cache.names = listed.filter { APIHostName.problem(Substring($0)) == nil }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            return cache.names
        }
    }
}
