import Served

// Longer than 400 lines on purpose: the one ownership rule, its whole decision and its incremental
// update side by side, so that the two are read (and fuzzed, Fuzz/FuzzOwnership.swift) together.

/// Which site holds which host name: the one rule `serve` (the snapshot, and so the certificates
/// ordered for it), `validate`, `sites`, `match --config` and `/sites` all answer from. Pure: no
/// I/O; the registry feeds it what it read and publishes what it decides.
///
/// A site's names are the names of sites/ that lead to it (its directory, and the symlinks to it
/// beside it, which the operator places) and its site.yaml aliases (which its tenant writes):
///
/// 1. A name of sites/ always holds its host, whatever any site.yaml says. Two entries can stand
///    for one host only by spelling (`A.example` and `a.example`, `a.example.`): the entry
///    spelled exactly as the host holds it, else the first in byte order; the others are refused.
/// 2. A site.yaml alias never changes which site serves a name another site serves: an alias that
///    another site's entry is named for, or that lies under another site's wildcard (an entry's,
///    or an alias held before it), is refused. A wildcard alias is a name too: `*.x.wild.test`
///    under `*.wild.test` is refused like `www.wild.test`, since it would take every name below
///    `x.wild.test` from the wildcard's site. A wildcard alias above another site's exact names
///    (`*.shop.test` beside an exact `www.shop.test`) takes none of them (an exact name beats a
///    wildcard in `Snapshot.site(forHost:)`) and is held.
/// 3. When site.yaml aliases contest a name, the site that held it first keeps it: claims held
///    before are decided first (across restarts, `remembered` is what the registry stores in
///    the state directory and gives back as `prior`), then new claims, exact names before
///    wildcards, more specific wildcards first, then by name and by site (for a tie that nothing
///    remembers, such as a first start, the lower directory name in byte order).
///
/// So a name is held by at most one site, served by the site that holds it, and no name is lost
/// to a contest: the loser's alias is refused with who holds the name and why.
///
/// Decisions are incremental: `set` and `remove` note what changed, `resolve` decides again only
/// the claims on the changed names and the alias names under a changed wildcard, so that one
/// site's change costs the same among 10 or 100,000 sites. Fuzz/FuzzOwnership.swift checks that
/// the result is the one a fresh decision of everything gives.
public struct HostOwnership: Sendable {
    /// How a site names a host.
    public enum Source: Sendable, Hashable {
        /// Its directory under sites/.
        case directory
        /// A symlink under sites/ (this entry) to its directory.
        case symlink(String)
        /// An alias in its site.yaml.
        case alias
    }

    /// Who holds a name.
    public struct Holder: Sendable, Hashable {
        /// The site (its directory's name under sites/).
        public var site: String
        public var source: Source

        /// The entry of sites/ or the file that gives the site the name, e.g. `sites/a.test/site.yaml`.
        public var file: String {
            switch source {
            case .directory: "sites/\(site)"
            case .symlink(let entry): "sites/\(entry)"
            case .alias: "sites/\(site)/site.yaml"
            }
        }
    }

    /// Why a site does not hold a name it claims.
    public enum Reason: Sendable, Hashable {
        /// Another name of sites/ stands for it (rule 1 or 2).
        case named(Holder)
        /// It lies under this wildcard, which another site holds (rule 2).
        case underWildcard(HostName, Holder)
        /// Another site's site.yaml alias held it first (rule 3).
        case heldFirst(Holder)
        /// The operator's `aliases-allowed` does not allow this site this alias (`AliasPolicy`).
        case notAllowed
    }

    /// A name a site claims and does not hold.
    public struct Refusal: Sendable, Hashable, CustomStringConvertible {
        public var host: HostName
        /// How the refused site names it.
        public var source: Source
        public var reason: Reason

        /// Who holds the name (or the wildcard it lies under); nil when no site does.
        public var holder: Holder? {
            switch reason {
            case .named(let h), .underWildcard(_, let h), .heldFirst(let h): h
            case .notAllowed: nil
            }
        }

        /// Why, in one sentence that names the holder, e.g. "sites/victim.test is named for it".
        public var description: String {
            switch reason {
            case .named(let holder):
                switch holder.source {
                case .directory: "\(holder.file) is named for it"
                case .symlink: "\(holder.file), a symlink to sites/\(holder.site), is named for it"
                case .alias: "sites/\(holder.site) holds it"
                }
            case .underWildcard(let wildcard, let holder):
                switch holder.source {
                case .directory: "it lies under \(wildcard), which \(holder.file) is named for"
                case .symlink: "it lies under \(wildcard), which \(holder.file) (a symlink to sites/\(holder.site)) is named for"
                case .alias: "it lies under \(wildcard), an alias of sites/\(holder.site) that held it first"
                }
            case .heldFirst(let holder):
                "\(holder.file) names it too and held it first"
            case .notAllowed:
                "\(AliasPolicy.fileName) does not allow it to this site"
            }
        }
    }

    /// What one site names.
    public struct Names: Sendable, Equatable {
        /// The host its directory stands for.
        public var host: HostName
        /// Its alias symlinks under sites/: entry name → the host it stands for.
        public var symlinks: [String: HostName]
        /// Its site.yaml aliases.
        public var aliases: [HostName]

        public init(host: HostName, symlinks: [String: HostName] = [:], aliases: [HostName] = []) {
            self.host = host
            self.symlinks = symlinks
            self.aliases = aliases
        }

        /// The names of sites/ that lead to the site: its directory, then its symlinks by entry.
        var entries: [(entry: String, host: HostName)] {
            var out: [(entry: String, host: HostName)] = []
            out.reserveCapacity(1 + symlinks.count)
            forEachEntry { out.append((entry: $0, host: $1)) }
            return out
        }

        /// Calls `body` with each of `entries` in its order, without making the array (most sites
        /// have no symlink: nothing is sorted or allocated for them).
        func forEachEntry(_ body: (_ entry: String, _ host: HostName) -> Void) {
            body("", host)
            guard !symlinks.isEmpty else { return }
            for (entry, host) in symlinks.sorted(by: { $0.key < $1.key }) { body(entry, host) }
        }
    }

    /// One entry of sites/ standing for a host: the site and the entry ("" for its directory).
    struct Entry: Hashable {
        var site: String
        var entry: String

        var holder: Holder { Holder(site: site, source: entry.isEmpty ? .directory : .symlink(entry)) }
        /// The entry's own name under sites/.
        var name: String { entry.isEmpty ? site : entry }
    }

    private var sites = LayeredMap<String, Names>()
    /// Entries of sites/ by the host they stand for.
    private var entries = Multimap<HostName, Entry>()
    /// The entry that holds each host that several entries stand for (rule 1); a host with one
    /// entry is that entry's (`named`).
    private var contested = LayeredMap<HostName, Entry>()
    /// Sites whose site.yaml names each host.
    private var aliasClaims = Multimap<HostName, String>()
    /// The site.yaml alias that holds each host (rules 2 and 3). An alias of a name the same site
    /// has an entry for is that entry's, and not here.
    private var aliasHeld = LayeredMap<HostName, String>()
    /// Refused claims by site, then host.
    private var refusals = LayeredMap<String, [HostName: Refusal]>()
    /// Hosts whose claims changed since the last `resolve`.
    private var pending: Set<HostName> = []
    /// The domains of the wildcards among them that an entry of sites/ stands for (`*.t`: `t`).
    private var pendingEntryWildcards: Set<Substring> = []
    /// Sites `set` changed since the last `resolve` (a name let go touches only the site).
    private var changedSites: Set<String> = []
    /// Whether a site was removed since the last `resolve`: then some of `changedSites` may be
    /// gone (a first load removes none, and takes the set as it is).
    private var removedSites = false
    /// Who held which alias before the process started, for its first `resolve` only.
    private var prior: [HostName: String]
    /// The operator's bound on aliases; nil: none.
    private var policy: AliasPolicy?

    /// `prior`: the alias names held when the last process stopped (`remembered`), trusted only
    /// to order contests: a name in it is decided for that site first, if the site still names it.
    public init(prior: [HostName: String] = [:]) {
        self.prior = prior
    }

    // MARK: - Input

    /// Room for `count` sites and their directories' names, for a first full load (where the
    /// registry reserves its records too).
    mutating func reserveCapacity(sites count: Int) {
        sites.reserveCapacity(count)
        entries.reserveCapacity(count)
        changedSites.reserveCapacity(count)
        pending.reserveCapacity(count)
    }

    /// Sets what a site names (a new site, or a change). Decided at the next `resolve`.
    public mutating func set(_ site: String, _ names: Names) {
        var names = names
        // Each name once; an alias of one of the site's own entries adds nothing.
        if !names.aliases.isEmpty {
            let own = Set(names.entries.map(\.host))
            var seen = Set<HostName>()
            names.aliases = names.aliases.filter { !own.contains($0) && seen.insert($0).inserted }
        }
        let old = sites[site]
        guard old != names else { return }
        sites[site] = names
        changedSites.insert(site)
        guard let old else {
            // A new site (every site of a full load at start): everything it names is added, with
            // no set of the old names and the new made to compare (each entry names a distinct
            // entry of sites/, each alias is named once).
            entries.insert(Entry(site: site, entry: ""), for: names.host)
            pendingEntry(names.host)
            for (entry, host) in names.symlinks {
                entries.insert(Entry(site: site, entry: entry), for: host)
                pendingEntry(host)
            }
            for alias in names.aliases {
                aliasClaims.insert(site, for: alias)
                pending.insert(alias)
            }
            return
        }
        // Only what changed is decided again: a change to a site's aliases leaves its directory's
        // name (perhaps a wildcard, whose change costs a pass over every alias) alone.
        let oldEntries = Set(old.entries.map { EntryName(entry: $0.entry, host: $0.host) })
        let newEntries = Set(names.entries.map { EntryName(entry: $0.entry, host: $0.host) })
        for gone in oldEntries.subtracting(newEntries) {
            entries.remove(Entry(site: site, entry: gone.entry), for: gone.host)
            refusals[site]?[gone.host] = nil
            pendingEntry(gone.host)
        }
        for added in newEntries.subtracting(oldEntries) {
            entries.insert(Entry(site: site, entry: added.entry), for: added.host)
            pendingEntry(added.host)
        }
        let oldAliases = Set(old.aliases)
        let newAliases = Set(names.aliases)
        for gone in oldAliases.subtracting(newAliases) {
            aliasClaims.remove(site, for: gone)
            refusals[site]?[gone] = nil
            pending.insert(gone)
        }
        for added in newAliases.subtracting(oldAliases) {
            aliasClaims.insert(site, for: added)
            pending.insert(added)
        }
    }

    /// An entry of sites/ and the host it stands for.
    private struct EntryName: Hashable {
        var entry: String
        var host: HostName
    }

    /// Notes a host whose entries changed; a wildcard's change is decided again for every alias
    /// under it (`resolve`).
    private mutating func pendingEntry(_ host: HostName) {
        pending.insert(host)
        if let suffix = host.wildcardSuffix { pendingEntryWildcards.insert(Substring(suffix)) }
    }

    /// Sets the operator's bound on aliases (nil: none); every alias is decided again.
    public mutating func setPolicy(_ policy: AliasPolicy?) {
        guard policy != self.policy else { return }
        self.policy = policy
        pending.formUnion(aliasClaims.keys)
    }

    /// Forgets a site (its directory is gone).
    public mutating func remove(_ site: String) {
        guard let old = sites.removeValue(forKey: site) else { return }
        removedSites = true
        unregister(site, old)
        refusals[site] = nil
    }

    private mutating func unregister(_ site: String, _ names: Names) {
        for (entry, host) in names.entries {
            entries.remove(Entry(site: site, entry: entry), for: host)
            pendingEntry(host)
        }
        for host in names.aliases {
            aliasClaims.remove(site, for: host)
            pending.insert(host)
        }
        refusals[site] = nil
    }

    // MARK: - Deciding

    /// One alias claim in the order contests are decided in (rule 3).
    private struct Claim: Comparable {
        var heldBefore: Bool
        var host: HostName
        var site: String
        var labels: Int

        static func < (a: Claim, b: Claim) -> Bool {
            if a.heldBefore != b.heldBefore { return a.heldBefore }
            if a.host.isWildcard != b.host.isWildcard { return !a.host.isWildcard }
            if a.labels != b.labels { return a.labels > b.labels }
            if a.host != b.host { return a.host < b.host }
            return a.site.utf8.lexicographicallyPrecedes(b.site.utf8)
        }
    }

    /// Decides the claims on every name changed since the last call; returns the sites whose held
    /// names or refusals may have changed.
    public mutating func resolve() -> Set<String> {
        var touched = removedSites ? changedSites.filter { sites[$0] != nil } : changedSites
        changedSites = []
        removedSites = false
        guard !pending.isEmpty else {
            prior = [:]
            return touched
        }
        // The names to decide: those changed, and those whose decision a changed wildcard `*.t`
        // may change:
        // - an entry's (the operator's directory or symlink, rare): every alias under `t`, found
        //   by one pass over the alias names (an index of every alias under every domain cost
        //   30 MB at 100,000 sites);
        // - an alias's (a tenant's site.yaml, which it may change at every reload): only the
        //   claims refused because they lie under it. Taken, it changes no other claim: claims
        //   held stay held (they are decided before it, rule 3), and a claim refused for another
        //   reason keeps it (that reason is checked before wildcards, or names a more specific
        //   one). A pass over every alias cost 2.3 s per reload at 1,000,000 aliases, and 30 s
        //   when the wildcard lay over them all (deciding each again).
        var hosts = pending
        if !pendingEntryWildcards.isEmpty {
            for host in aliasClaims.keys where Self.liesUnder(host, anyOf: pendingEntryWildcards) { hosts.insert(host) }
        }
        let aliasWildcards = Set(pending.filter(\.isWildcard))
        if !aliasWildcards.isEmpty {
            refusals.forEach { _, refused in
                for (host, refusal) in refused {
                    if case .underWildcard(let wildcard, _) = refusal.reason, aliasWildcards.contains(wildcard) { hosts.insert(host) }
                }
            }
        }
        pending = []
        pendingEntryWildcards = []
        // Rule 1, per host.
        // Maps with nothing in them are not looked up (a first load's: no refusals, contests or
        // alias claims yet; `isEmpty` is never true for a map that holds a key).
        for host in hosts {
            let candidates = entries[host]
            for entry in candidates {
                touched.insert(entry.site)
                if !refusals.isEmpty { refusals[entry.site]?[host] = nil }
            }
            if candidates.count >= 2 || !contested.isEmpty {
                contested[host] =
                    candidates.count < 2
                    ? nil
                    : candidates.min { a, b in
                        let (exactA, exactB) = (a.name == host.name, b.name == host.name)
                        if exactA != exactB { return exactA }
                        return a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
                    }
            }
            if let holder = named(host) {
                // Another spelling of a name the same site holds is no contest.
                for entry in candidates where entry.site != holder.site {
                    let source: Source = entry.entry.isEmpty ? .directory : .symlink(entry.entry)
                    refusals[entry.site, default: [:]][host] = Refusal(host: host, source: source, reason: .named(holder.holder))
                }
            }
        }
        // Rules 2 and 3: the alias claims on those names, held ones first.
        var claims: [Claim] = []
        var heldBefore: [HostName: String] = [:]
        // (Nothing to do for any host while no alias is claimed or held.)
        for host in hosts where !aliasHeld.isEmpty || !aliasClaims.isEmpty {
            let before = aliasHeld.removeValue(forKey: host)
            if let before {
                touched.insert(before)
                heldBefore[host] = before
            }
            for site in aliasClaims[host] {
                touched.insert(site)
                refusals[site]?[host] = nil
                let heldBefore = before == site || prior[host] == site
                claims.append(Claim(heldBefore: heldBefore, host: host, site: site, labels: host.labelCount))
            }
        }
        claims.sort()
        for claim in claims {
            if let reason = reasonToRefuse(claim, deciding: hosts) {
                refusals[claim.site, default: [:]][claim.host] = Refusal(host: claim.host, source: .alias, reason: reason)
            } else if named(claim.host) == nil {
                aliasHeld[claim.host] = claim.site
            }
        }
        if !(aliasHeld.isEmpty && heldBefore.isEmpty), hosts.contains(where: { aliasHeld[$0] != heldBefore[$0] }) {
            rememberedVersion &+= 1
        }
        if !refusals.isEmpty {
            for site in touched where refusals[site]?.isEmpty == true { refusals[site] = nil }
        }
        prior = [:]
        return touched
    }

    /// Why an alias claim is refused, given what is held so far; nil: it is held (or is an
    /// alias of the site's own entry's name).
    private func reasonToRefuse(_ claim: Claim, deciding: Set<HostName>) -> Reason? {
        if let policy, !policy.allows(claim.host, site: claim.site), named(claim.host)?.site != claim.site { return .notAllowed }
        if let entry = named(claim.host) {
            return entry.site == claim.site ? nil : .named(entry.holder)
        }
        if let site = aliasHeld[claim.host], site != claim.site {
            // Every claim on this host is decided in this pass, in order: this one came first.
            return .heldFirst(Holder(site: site, source: .alias))
        }
        // The most specific wildcard above the name that is held by the time this claim is
        // decided: an entry's always; an alias's if it was decided before in this pass, or held
        // before it while this claim was not.
        for domain in Self.domains(above: claim.host) {
            let wildcard = HostName(wildcardOver: domain)
            if let entry = named(wildcard) {
                return entry.site == claim.site ? nil : .underWildcard(wildcard, entry.holder)
            }
            guard let site = aliasHeld[wildcard] else { continue }
            guard deciding.contains(wildcard) || !claim.heldBefore else { continue }
            return site == claim.site ? nil : .underWildcard(wildcard, Holder(site: site, source: .alias))
        }
        return nil
    }

    /// Whether a name lies under one of `domains` (as `domains(above:)` lists them), without
    /// making a String per domain.
    static func liesUnder(_ host: HostName, anyOf domains: Set<Substring>) -> Bool {
        var rest = Substring(host.name)
        if host.isWildcard { rest = rest.dropFirst(2) }
        guard let first = rest.firstIndex(of: ".") else { return false }
        rest = rest[rest.index(after: first)...]
        while let dot = rest.firstIndex(of: ".") {
            if domains.contains(rest) { return true }
            rest = rest[rest.index(after: dot)...]
        }
        return false
    }

    /// The domains a name lies under, most specific first, down to the last two labels (a
    /// wildcard needs two labels after `*.`): `www.a.b.test` and `*.x.a.b.test` lie under `a.b.test`
    /// and `b.test` (`*.a.b.test` only under `b.test`: it is the name `*.a.b.test`, not below it).
    static func domains(above host: HostName) -> [String] {
        let base = Substring(host.wildcardSuffix ?? host.name)
        guard let first = base.firstIndex(of: ".") else { return [] }
        var rest = base[base.index(after: first)...]
        var out: [String] = []
        while let dot = rest.firstIndex(of: ".") {
            out.append(String(rest))
            rest = rest[rest.index(after: dot)...]
        }
        return out
    }

    /// Folds each map's changes into its shared base once they are many (`LayeredMap`): the
    /// registry calls it after each reload, never a check on a copy, whose changes are few and
    /// dropped with it.
    mutating func compact() {
        sites.foldIfLarge()
        entries.foldIfLarge()
        contested.foldIfLarge()
        aliasClaims.foldIfLarge()
        aliasHeld.foldIfLarge()
        refusals.foldIfLarge()
    }

    /// Folds every map's changes into its shared base, however few (the fuzz target and tests,
    /// so that decisions are checked on both layers).
    mutating func foldAll() {
        sites.fold()
        entries.fold()
        contested.fold()
        aliasClaims.fold()
        aliasHeld.fold()
        refusals.fold()
    }

    // MARK: - Answers

    /// The entry that holds a host (rule 1), if an entry stands for it.
    private func named(_ host: HostName) -> Entry? {
        contested[host] ?? entries.first(host)
    }

    /// The names a site holds, in the order it names them (its directory's first).
    public func held(by site: String) -> [HostName] {
        guard let names = sites[site] else { return [] }
        // In `entries`' order, without making it: the array of a site's entries, and this one
        // grown, were three allocations a site for each publication of 100,000 sites.
        var out: [HostName] = []
        out.reserveCapacity(1 + names.symlinks.count + names.aliases.count)
        names.forEachEntry { entry, host in
            if named(host) == Entry(site: site, entry: entry) { out.append(host) }
        }
        for host in names.aliases where aliasHeld[host] == site { out.append(host) }
        return out
    }

    /// What a site names now (nil: no such site): the tenant API checks a new version of a site
    /// by setting it on a copy, keeping the alias symlinks the operator made for it.
    public func names(of site: String) -> Names? { sites[site] }

    /// The names a site claims and does not hold, by name.
    public func refusals(of site: String) -> [Refusal] {
        (refusals[site] ?? [:]).values.sorted { $0.host < $1.host }
    }

    /// Claims refused, over all sites.
    public var refusedCount: Int {
        var count = 0
        refusals.forEach { _, refused in count += refused.count }
        return count
    }

    /// Who holds exactly this name (a wildcard is a name of its own here).
    public func holder(of host: HostName) -> Holder? {
        named(host)?.holder ?? aliasHeld[host].map { Holder(site: $0, source: .alias) }
    }

    /// Who serves a request's host (lower case, no port): the holder of the name itself, else of
    /// the most specific wildcard above it, as `Snapshot.site(forHost:)` finds it.
    public func holder(serving host: String) -> Holder? {
        if let name = try? HostName(parsing: host), !name.isWildcard, let holder = holder(of: name) { return holder }
        var rest = Substring(host)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            // A Character search, as `firstIndex` above: Foundation's substring search is slower.
            guard rest.contains("." as Character) else { break }
            if let holder = holder(of: HostName(wildcardOver: String(rest))) { return holder }
        }
        return nil
    }

    /// The alias names held now, with their sites: what a restart gives back as `prior`.
    public var remembered: [HostName: String] { aliasHeld.dictionary }

    /// Changes each time `remembered` does, so that the registry knows when to store it without
    /// comparing every held alias after every reload.
    public private(set) var rememberedVersion = 0
}

/// Values by key where nearly every key has one: the first value in one map, the others in a
/// second, so that the common key costs no array of its own (an array or set per host cost tens
/// of megabytes at 100,000 sites).
struct Multimap<Key: Hashable & Sendable, Value: Equatable & Sendable>: Sendable {
    private var first = LayeredMap<Key, Value>()
    private var rest = LayeredMap<Key, [Value]>()

    /// Room for `count` keys (`LayeredMap.reserveCapacity`).
    mutating func reserveCapacity(_ count: Int) { first.reserveCapacity(count) }

    mutating func insert(_ value: Value, for key: Key) {
        if first[key] == nil { first[key] = value } else { rest[key, default: []].append(value) }
    }

    mutating func remove(_ value: Value, for key: Key) {
        if first[key] == value {
            if var more = rest.removeValue(forKey: key), !more.isEmpty {
                first[key] = more.removeFirst()
                if !more.isEmpty { rest[key] = more }
            } else {
                first[key] = nil
            }
        } else if let index = rest[key]?.firstIndex(of: value) {
            // Changed in place (LayeredMap's `_modify`), not copied out and back.
            rest[key]?.remove(at: index)
            if rest[key]?.isEmpty == true { rest[key] = nil }
        }
    }

    /// The first value inserted for a key (of those still there).
    func first(_ key: Key) -> Value? { first[key] }

    /// The values for a key, the first inserted first.
    subscript(key: Key) -> [Value] {
        guard let value = first[key] else { return [] }
        return [value] + (rest[key] ?? [])
    }

    /// The keys with a value.
    var keys: [Key] { first.keys }

    /// Whether no key has a value (`LayeredMap.isEmpty`: never true while one has).
    var isEmpty: Bool { first.isEmpty }

    mutating func foldIfLarge() {
        first.foldIfLarge()
        rest.foldIfLarge()
    }

    mutating func fold() {
        first.fold()
        rest.fold()
    }
}
