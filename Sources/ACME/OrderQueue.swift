/// Which wanted name the certificate manager orders next, fair across sites: one tenant's many
/// names (aliases it may add at will) cost other sites at most one turn each, and a site never
/// has more than `namesPerSite` names ordered. A pure value: it reads no clock and does no I/O.
/// The caller says which names are due and of which class (`Class`), and tells the queue when an
/// order was placed (`ordered`), so tests drive it with plain values.
///
/// The next name is the best by, in turn:
/// 1. its class: every due renewal before any new name (a served site losing its certificate is
///    an outage; a new name waiting is not);
/// 2. its site's last turn: the site that placed an order longest ago (or never) goes first, so
///    sites take turns (round robin by site, not first in, first out by name);
/// 3. when it was first wanted, oldest first (within a site, and among sites never served);
/// 4. its name, so that equal ranks always give the same answer.
///
/// A site's names past `namesPerSite` are capped: never ordered. Seats go first to names that
/// hold a certificate (so a new alias never takes the seat of a served name, and a restart, which
/// loads stored certificates before its first pass, keeps the same seats), then by when they were
/// first wanted, then in the order the site gave them (its directory name first).
///
/// A priority class (say, certificates asked for on demand by a handshake) is one more case of
/// `Class` with a lower raw value than `renewal`: its names then go before every renewal, taking
/// turns by site as the others do, and count against the same per-site cap.
package struct OrderQueue: Sendable {
    /// Classes of due names, served in the order of their raw values.
    package enum Class: Int, Sendable, Comparable, CaseIterable {
        /// A name whose served certificate is due for renewal.
        case renewal = 0
        /// A name without a certificate.
        case new = 1

        package static func < (a: Class, b: Class) -> Bool { a.rawValue < b.rawValue }
    }

    /// A wanted name: its site and when it was first wanted.
    package struct Member: Sendable, Equatable {
        var site: String
        var since: UInt64
    }

    /// Names ordered per site at most (`acme.names-per-site`).
    package let namesPerSite: Int
    /// Every wanted name.
    private(set) var members: [String: Member] = [:]
    /// Each site's names, in seat order less the served-first rule (by `since`).
    private(set) var sites: [String: [String]] = [:]
    /// Increases with every `want`'s new name: the `since` of names.
    private var sequence: UInt64 = 0
    /// Orders placed (`ordered`), and the count at each site's last one: the round robin.
    private var turns: UInt64 = 0
    private var lastTurn: [String: UInt64] = [:]

    package init(namesPerSite: Int) {
        self.namesPerSite = max(1, namesPerSite)
    }

    /// Sets the names wanted, by site (each site's names in its own order, its directory name
    /// first). A name given under two sites stays with the first by site name (the server's
    /// snapshot never gives one twice). Returns the names no longer wanted. O(names), plus a sort
    /// of the new names only: a reload of one site among 100,000 is one pass.
    @discardableResult
    package mutating func want(_ bySite: [String: [String]]) -> [String] {
        var given: [String: String] = [:]
        given.reserveCapacity(members.count)
        for (site, names) in bySite {
            for name in names {
                if let other = given[name], other <= site { continue }
                given[name] = site
            }
        }
        var gone: [String] = []
        for (name, member) in members where given[name] != member.site { gone.append(name) }
        var leaving: [String: Set<String>] = [:]
        for name in gone {
            guard let member = members.removeValue(forKey: name) else { continue }
            leaving[member.site, default: []].insert(name)
        }
        for (site, names) in leaving {
            let kept = sites[site]?.filter { !names.contains($0) } ?? []
            sites[site] = kept.isEmpty ? nil : kept
            if kept.isEmpty { lastTurn[site] = nil }
        }
        // A name that moved to another site is wanted still, and new there (counted again
        // against that site's cap).
        gone.removeAll { given[$0] != nil }
        var added: [(site: String, position: Int, name: String)] = []
        for (site, names) in bySite {
            for (position, name) in names.enumerated() where members[name] == nil && given[name] == site {
                added.append((site, position, name))
            }
        }
        // Numbered by site, then in the site's order: sites wanted together take their first
        // turns in name order, and a site's seats go to its directory name first.
        added.sort { ($0.site, $0.position) < ($1.site, $1.position) }
        for (site, _, name) in added where members[name] == nil {
            sequence += 1
            members[name] = Member(site: site, since: sequence)
            sites[site, default: []].append(name)
        }
        return gone
    }

    /// Every wanted name.
    package var names: Dictionary<String, Member>.Keys { members.keys }

    /// The site a name is wanted for.
    package func site(of name: String) -> String? { members[name]?.site }

    /// The names past their site's cap: seats go first to names `isServed` says hold a
    /// certificate, then by when they were first wanted. Only sites over the cap are looked at.
    package func capped(isServed: (String) -> Bool) -> Set<String> {
        var capped = Set<String>()
        for names in sites.values where names.count > namesPerSite {
            var seated = names.filter(isServed)
            seated += names.filter { !isServed($0) }
            capped.formUnion(seated[namesPerSite...])
        }
        return capped
    }

    /// The rank of a due name (lower goes first); nil for a name not wanted.
    package func rank(of name: String, _ due: Class) -> Rank? {
        guard let member = members[name] else { return nil }
        return Rank(due: due, lastTurn: lastTurn[member.site] ?? 0, since: member.since, name: name)
    }

    /// The next name to order among the due ones (with their class), none of them capped.
    package func next<Due: Sequence<(String, Class)>>(among due: Due) -> String? {
        var best: Rank?
        for (name, dueClass) in due {
            guard let rank = rank(of: name, dueClass) else { continue }
            if best == nil || rank < best! { best = rank }
        }
        return best?.name
    }

    /// Notes that an order was placed for `name`: its site goes behind every other site.
    package mutating func ordered(_ name: String) {
        guard let site = members[name]?.site else { return }
        turns += 1
        lastTurn[site] = turns
    }

    /// Where a due name stands: compared by class, its site's last turn, when it was wanted, name.
    package struct Rank: Comparable, Sendable {
        var due: Class
        var lastTurn: UInt64
        var since: UInt64
        package var name: String

        package static func < (a: Rank, b: Rank) -> Bool {
            (a.due.rawValue, a.lastTurn, a.since, a.name) < (b.due.rawValue, b.lastTurn, b.since, b.name)
        }
    }
}
