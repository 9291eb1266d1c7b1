package import HashTreeCollections
import Reactor
package import Served
package import SiteStore
import StrictJSON
import Synchronization

/// What the admin pages show of the registry, taken by the reloader after each reload (under
/// the registry's lock) and published for the admin thread to read without it.
///
/// It keeps almost nothing of its own per site: the served sites are the snapshot's own map
/// (shared, not copied: a persistent hash trie), and a site's state is derived from its served
/// version when that tells it all (`SiteStatus(plain:directory:)`: serving, no errors, no name
/// refused, which is most sites). Only the others' states are kept, in a second persistent map.
/// A site's JSON is encoded when a page is rendered, not when the view is published, so that
/// publishing after a reload costs O(sites it touched) map changes and nothing for the sites
/// that stayed plain (a one-site reload at 100,000 sites must publish within 200 ms).
///
/// The snapshot's map may be shared because a site's served version changes only in a reload
/// that touches the site (`SiteRegistry.takeTouched`), which sets its state here in the same
/// publish.
package final class AdminView: Sendable {
    /// One site as the pages read it, made on each look-up from the two maps.
    struct Entry: Sendable {
        var directory: String
        /// The version served; nil when nothing is.
        var served: ServedSite?
        /// Its state when the served version does not tell it (`SiteStatus(plain:directory:)`);
        /// nil for a plain site.
        var unusual: SiteStatus?

        /// Its state as `aasad sites` shows it.
        var status: SiteStatus { unusual ?? SiteStatus(plain: served, directory: directory) }
        /// The names it is served under (automatic certificates are per name).
        var hosts: [String] { unusual?.hosts ?? served?.hosts.map(\.name) ?? [] }
        var state: SiteState { unusual?.state ?? (served == nil ? .refused : .serving) }
        /// How many of its names the ownership rule refused.
        var refusedHosts: Int { unusual?.refusedHosts.count ?? 0 }
        /// Where its certificate comes from: true for its own pair, false for the shared default
        /// or fallback, nil when it is not served.
        var ownCertificate: Bool? { served.map { $0.certificate != nil } }
        /// Its fallback answers by platform; nil when it has no fallback or page.
        var fallbackCounts: FallbackCounts? { served?.fallbackCounts }
        /// Its answers per route; nil without routes.
        var routeCounts: RouteCounts? { served?.routeCounts }
    }

    /// A site's state the view keeps: one its served version does not tell, or (never expected:
    /// the snapshot serves only sites) that a served directory is not a site.
    enum Unusual: Sendable {
        case status(SiteStatus)
        case notASite
    }

    /// What changed about one site in a reload: nil status when it is no longer a site, or when
    /// its state is the plain one `served` gives (`plain`, then the status is not made).
    struct Change: Sendable {
        var directory: String
        var status: SiteStatus?
        var served: ServedSite? = nil
        var routeCounts: RouteCounts? = nil
        var plain = false

        var isSite: Bool { plain || status != nil }
    }

    let generation: UInt64
    /// The served sites by directory name: the snapshot's own map.
    let served: TreeDictionary<String, ServedSite>
    /// The sites whose state their served version does not tell, by directory name.
    let unusual: TreeDictionary<String, Unusual>
    /// Sites listed: those served, less any `notASite`, and the unusual ones not served.
    let count: Int
    /// What sites without their own pair use: the config directory's default, else the fallback.
    let sharedCertificate: CertificateKind
    let stateCounts: [SiteState: Int]
    let conflictingHosts: Int
    let reloads: LockedRegistry.ReloadRecord
    /// The names recent reloads touched, for the status page's sorted names (StatusIndex.swift).
    let journal: NameJournal
    /// The route counters of only the sites with routes, by directory: what /metrics sums on
    /// each scrape, so that a scrape costs nothing more for the sites without routes (kept as
    /// `unusual` is, one change at a time).
    let routed: TreeDictionary<String, RouteCounts>
    /// `sorted`, once made.
    private let sortedSites = Mutex<[(directory: String, served: ServedSite?)]?>(nil)

    init(
        generation: UInt64, served: TreeDictionary<String, ServedSite>, unusual: TreeDictionary<String, Unusual>, count: Int,
        sharedCertificate: CertificateKind, stateCounts: [SiteState: Int], conflictingHosts: Int, reloads: LockedRegistry.ReloadRecord,
        journal: NameJournal? = nil, routed: TreeDictionary<String, RouteCounts> = [:]
    ) {
        self.generation = generation
        self.served = served
        self.unusual = unusual
        self.count = count
        self.routed = routed
        self.sharedCertificate = sharedCertificate
        self.stateCounts = stateCounts
        self.conflictingHosts = conflictingHosts
        self.reloads = reloads
        self.journal = journal ?? NameJournal(from: generation)
    }

    /// A site by directory name; nil when there is none.
    subscript(directory: String) -> Entry? {
        let site = served[directory]
        switch unusual[directory] {
        case .notASite: return nil
        case .status(let status): return Entry(directory: directory, served: site, unusual: status)
        case nil: return site.map { Entry(directory: directory, served: $0, unusual: nil) }
        }
    }

    /// Every site's directory name with its served version, sorted by name: made on the first
    /// render of this view and kept (a render after a fetch, with no reload, sorts nothing).
    var sorted: [(directory: String, served: ServedSite?)] {
        sortedSites.withLock { kept in
            if let kept { return kept }
            var sites: [(directory: String, served: ServedSite?)] = []
            sites.reserveCapacity(count)
            for (name, site) in served {
                if !unusual.isEmpty, case .notASite = unusual[name] { continue }
                sites.append((name, site))
            }
            for (name, kept) in unusual where served[name] == nil {
                if case .status = kept { sites.append((name, nil)) }
            }
            sites.sort { $0.directory < $1.directory }
            kept = sites
            return sites
        }
    }

    /// The entry of a site of `sorted`; nil when there is none.
    func entry(_ site: (directory: String, served: ServedSite?)) -> Entry? {
        if unusual.isEmpty { return site.served.map { Entry(directory: site.directory, served: $0, unusual: nil) } }
        switch unusual[site.directory] {
        case .notASite: return nil
        case .status(let status): return Entry(directory: site.directory, served: site.served, unusual: status)
        case nil: return site.served.map { Entry(directory: site.directory, served: $0, unusual: nil) }
        }
    }

    /// Every site's directory name, in no order.
    var directories: [String] {
        var names: [String] = []
        names.reserveCapacity(count)
        if unusual.isEmpty {
            names.append(contentsOf: served.keys)
            return names
        }
        for name in served.keys {
            if case .notASite = unusual[name] { continue }
            names.append(name)
        }
        for (name, kept) in unusual where served[name] == nil {
            if case .status = kept { names.append(name) }
        }
        return names
    }

    private typealias Maps = (served: TreeDictionary<String, ServedSite>, unusual: TreeDictionary<String, Unusual>)

    /// Whether `directory` is listed, given the served sites and the kept states.
    private static func listed(_ directory: String, _ maps: Maps) -> Bool {
        switch maps.unusual[directory] {
        case .notASite: false
        case .status: true
        case nil: maps.served[directory] != nil
        }
    }

    /// The kept states with the changed sites' set again (a plain one dropped), and the number
    /// of sites listed with them; `served` is the snapshot's map after the changes.
    static func applying(
        _ changes: [Change], served: TreeDictionary<String, ServedSite>, to previous: AdminView?
    ) -> (unusual: TreeDictionary<String, Unusual>, count: Int) {
        var unusual = previous?.unusual ?? [:]
        var count = previous?.count ?? 0
        // A start compares every site: on every core.
        let kept = Parallel.map(changes, threshold: 256) { Self.kept($0, served: served[$0.directory]) }
        for (change, kept) in zip(changes, kept) {
            let was = previous.map { listed(change.directory, ($0.served, $0.unusual)) } ?? false
            unusual[change.directory] = kept
            count += (listed(change.directory, (served, unusual)) ? 1 : 0) - (was ? 1 : 0)
        }
        return (unusual, count)
    }

    /// What the view keeps of a changed site: nothing when its served version tells its state.
    static func kept(_ change: Change, served: ServedSite?) -> Unusual? {
        if change.plain, served != nil { return nil }
        guard let status = change.status else { return served == nil ? nil : .notASite }
        if let served, status == SiteStatus(plain: served, directory: change.directory) { return nil }
        return .status(status)
    }

    /// These route counters with the changed sites' put in (and those of sites without routes,
    /// or no longer sites, taken out).
    static func routing(_ changes: [Change], to routed: TreeDictionary<String, RouteCounts>) -> TreeDictionary<String, RouteCounts> {
        var routed = routed
        for change in changes { routed[change.directory] = change.isSite ? change.routeCounts : nil }
        return routed
    }

    /// A site's status as a JSON object without its closing brace: the members of `SiteStatus`
    /// in key order, nil ones left out (as JSONEncoder's `sortedKeys` wrote them, at a tenth of
    /// its cost: `/sites` encodes every site).
    static func open(_ status: SiteStatus) -> [UInt8] {
        var out: [UInt8] = []
        open(status, into: &out)
        return out
    }

    /// `open(_:)` appended to `out`, without a string or array made per member.
    static func open(_ status: SiteStatus, into out: inout [UInt8]) {
        func list(_ items: [String]) {
            out.append(UInt8(ascii: "["))
            for (k, item) in items.enumerated() {
                if k > 0 { out.append(UInt8(ascii: ",")) }
                quote(item, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        }
        out += #"{"directory":"#.utf8
        quote(status.directory, into: &out)
        out += #","errors":"#.utf8
        list(status.errors)
        if let etag = status.etag {
            out += #","etag":"#.utf8
            quote(etag, into: &out)
        }
        out += #","hosts":"#.utf8
        list(status.hosts)
        if let loadedAt = status.loadedAt { out += #","loadedAt":\#(loadedAt)"#.utf8 }
        out += #","refusedHosts":["#.utf8
        for (k, refused) in status.refusedHosts.enumerated() {
            out += (k > 0 ? ",{" : "{").utf8
            if let heldBy = refused.heldBy {
                out += #""heldBy":"#.utf8
                quote(heldBy, into: &out)
                out.append(UInt8(ascii: ","))
            }
            out += #""host":"#.utf8
            quote(refused.host, into: &out)
            out += #","reason":"#.utf8
            quote(refused.reason, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out += #"],"state":"#.utf8
        quote(status.state.rawValue, into: &out)
    }

    /// `JSONValue.quote(text)` appended to `out`: printable ASCII (nearly every name, and an
    /// ETag with its quotes) is copied with `"` and `\` escaped as `quote` escapes them; anything
    /// else goes through `quote`.
    static func quote(_ text: String, into out: inout [UInt8]) {
        guard text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            out += JSONValue.quote(text).utf8
            return
        }
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
            out.append(byte)
        }
        out.append(UInt8(ascii: "\""))
    }
}
