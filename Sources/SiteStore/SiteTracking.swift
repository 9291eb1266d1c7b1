/// What the admin view and the metrics read of the sites without walking them: how many sites
/// are in each state, kept as they change (a metrics scrape must not walk 100,000 records), and
/// which sites changed since the admin view last re-encoded (it re-encodes only those). Costs
/// nothing on the serving path: it is bookkeeping of the reloader's own changes.
struct SiteTracking {
    /// Sites by state.
    private(set) var stateCounts: [SiteState: Int] = [:]
    /// Sites whose status may have changed since `take` last ran (those a reload read, updated,
    /// removed or republished for a conflict).
    private var touched = Set<String>()

    /// A site's status may have changed.
    mutating func touch(_ name: String) { touched.insert(name) }

    /// Room for `count` more touched sites, grown once (a start touches every site: at a million,
    /// the set's doublings were 0.47 of its 0.81 s, perf in docs/benchmarks.md).
    mutating func reserve(_ count: Int) { touched.reserveCapacity(touched.count + count) }

    /// The sites touched since the last call, forgotten.
    mutating func take() -> Set<String> {
        defer { touched = [] }
        return touched
    }

    /// A site went from `old` to `new` (nil: it did not exist, or no longer does).
    mutating func move(from old: SiteState?, to new: SiteState?) {
        if let old { stateCounts[old, default: 0] -= 1 }
        if let new { stateCounts[new, default: 0] += 1 }
    }
}
