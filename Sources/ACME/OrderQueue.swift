/// Which wanted name the certificate manager orders next, fair across sites: one tenant's many
/// names (aliases it may add at will) cost other sites at most one turn each, and a site never
/// has more than `namesPerSite` names ordered. A pure value: it reads no clock and does no I/O.
/// The caller says which names are due and of which class (`Class`), and tells the queue when an
/// order was placed (`ordered`), so tests drive it with plain values.
///
/// The next name is the best by, in turn:
/// 1. its class, the tier (`Class`): every due renewal first (a served site losing its
///    certificate is an outage), then names someone asked for (a handshake's SNI, Apple's CDN
///    fetching the site's file, the tenant API creating it: someone is waiting for them now),
///    then the rest (names nobody has asked for yet);
/// 2. its site's last turn: the site that placed an order longest ago (or never) goes first, so
///    sites take turns (round robin by site, not first in, first out by name). A site that
///    leaves the queue (no name wanted) and comes back keeps its last turn
///    (`maximumDepartedTurns`): a tenant can take its site out and back in (a `tls/` pair of its
///    own added and removed), and must not go first again each time;
/// 3. in the demanded tier, when it was asked for, earliest first (the caller's `asked`: a name
///    wanted for months and asked for today waits behind one asked for yesterday);
/// 4. when it was first wanted, oldest first (within a site, and among sites never served);
/// 5. its name, so that equal ranks always give the same answer.
///
/// A site's names past `namesPerSite` are capped: never ordered. Seats go first to names that
/// hold a certificate (so a new alias never takes the seat of a served name), then in the
/// site's own order (its directory name first, then its aliases): the same seats after a
/// restart, which loads stored certificates before its first pass, and in `aasad sites`, which
/// asks this type without a server (`SitesCommand.swift`).
///
/// Inside each tier sites take turns as above, and every tier counts against the same per-site
/// cap: a tenant asking for its own junk aliases gets them no sooner than one turn per site.
package struct OrderQueue: Sendable {
    /// Classes of due names (the budget's tiers), served in the order of their raw values.
    package enum Class: Int, Sendable, Comparable, CaseIterable {
        /// A name whose served certificate is due for renewal.
        case renewal = 0
        /// A name without a certificate that someone asked for (`CertificateManager.demand`).
        case demanded = 1
        /// A name without a certificate that nobody has asked for yet.
        case new = 2

        /// The tier's name in `/sites` and metrics labels.
        package var label: String {
            switch self {
            case .renewal: "renewal"
            case .demanded: "demanded"
            case .new: "new"
            }
        }

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
    /// Each site's names as the last `want` gave them (its directory name first): the seat
    /// order after the names that hold a certificate.
    private(set) var sites: [String: [String]] = [:]
    /// Increases with every `want`'s new name: the `since` of names.
    private var sequence: UInt64 = 0
    /// Orders placed (`ordered`), and the count at each site's last one: the round robin. Kept
    /// for a site that leaves, up to `maximumDepartedTurns` such sites.
    private var turns: UInt64 = 0
    private(set) var lastTurn: [String: UInt64] = [:]

    /// Sites no longer in the queue whose last turn is kept, at most. A site's turn outlives
    /// its names so that leaving and coming back (a tenant adding a `tls/` pair of its own,
    /// which takes the site out of the queue, then removing it) does not put it first again.
    /// Only a site that placed an order has a turn, and the oldest turns are forgotten first: a
    /// site that just had its turn is treated as new again only after this many sites that
    /// ordered after it have left too, which no tenant controls. 10,000 turns take about 1 MB.
    package static let maximumDepartedTurns = 10_000

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
        for name in gone { members[name] = nil }
        // A name that moved to another site is wanted still, and new there (counted again
        // against that site's cap, and first wanted now).
        gone.removeAll { given[$0] != nil }
        var added: [(site: String, position: Int, name: String)] = []
        for (site, names) in bySite {
            for (position, name) in names.enumerated() where members[name] == nil && given[name] == site {
                added.append((site, position, name))
            }
        }
        // Numbered by site, then in the site's order: sites wanted together take their first
        // turns in name order, and a site's directory name is its first name ordered.
        added.sort { ($0.site, $0.position) < ($1.site, $1.position) }
        for (site, _, name) in added where members[name] == nil {
            sequence += 1
            members[name] = Member(site: site, since: sequence)
        }
        // The caller's arrays, shared rather than copied.
        sites = bySite
        forgetDepartedTurns()
        return gone
    }

    /// Forgets the oldest turns of sites no longer in the queue, past `maximumDepartedTurns`.
    private mutating func forgetDepartedTurns() {
        guard lastTurn.count > Self.maximumDepartedTurns else { return }
        let departed = lastTurn.filter { sites[$0.key] == nil }
        guard departed.count > Self.maximumDepartedTurns else { return }
        for (site, _) in departed.sorted(by: { $0.value < $1.value }).prefix(departed.count - Self.maximumDepartedTurns) {
            lastTurn[site] = nil
        }
    }

    /// Every wanted name.
    package var names: Dictionary<String, Member>.Keys { members.keys }

    /// The site a name is wanted for.
    package func site(of name: String) -> String? { members[name]?.site }

    /// The names past their site's cap: seats go first to names `isServed` says hold a
    /// certificate, then in the site's order. Only sites given more names than the cap are
    /// looked at.
    package func capped(isServed: (String) -> Bool) -> Set<String> {
        var capped = Set<String>()
        for (site, names) in sites where names.count > namesPerSite {
            // The site's own names: one given twice counts once, one another site holds not at all.
            var seen = Set<String>()
            let own = names.filter { members[$0]?.site == site && seen.insert($0).inserted }
            guard own.count > namesPerSite else { continue }
            let seated = own.filter(isServed) + own.filter { !isServed($0) }
            capped.formUnion(seated[namesPerSite...])
        }
        return capped
    }

    /// The rank of a due name (lower goes first); nil for a name not wanted. `asked`: when a
    /// demanded name was asked for (seconds since the epoch); ignored in the other tiers.
    package func rank(of name: String, _ due: Class, asked: Int64 = 0) -> Rank? {
        guard let member = members[name] else { return nil }
        return Rank(due: due, lastTurn: lastTurn[member.site] ?? 0, asked: due == .demanded ? asked : 0, since: member.since, name: name)
    }

    /// The next name to order among the due ones (with their class), none of them capped.
    package func next<Due: Sequence<(String, Class)>>(among due: Due) -> String? {
        next(asked: due.lazy.map { ($0.0, $0.1, 0) })
    }

    /// The same, each due name with when it was asked for (`rank(of:_:asked:)`).
    package func next<Due: Sequence<(String, Class, Int64)>>(asked due: Due) -> String? {
        var best: Rank?
        for (name, dueClass, asked) in due {
            guard let rank = rank(of: name, dueClass, asked: asked) else { continue }
            if best.map({ rank < $0 }) ?? true { best = rank }
        }
        return best?.name
    }

    /// Notes that an order was placed for `name`: its site goes behind every other site.
    package mutating func ordered(_ name: String) {
        guard let site = members[name]?.site else { return }
        turns += 1
        lastTurn[site] = turns
    }

    /// Where a due name stands: compared by class, its site's last turn, when it was asked for
    /// (demanded names), when it was wanted, name.
    package struct Rank: Comparable, Sendable {
        var due: Class
        var lastTurn: UInt64
        var asked: Int64
        var since: UInt64
        package var name: String

        package static func < (a: Rank, b: Rank) -> Bool {
            (a.due.rawValue, a.lastTurn, a.asked, a.since, a.name) < (b.due.rawValue, b.lastTurn, b.asked, b.since, b.name)
        }
    }
}

/// One tier's wait: its queued names, and since when the oldest waits (seconds since the epoch).
package struct TierWait: Sendable, Equatable {
    package var queued = 0
    package var oldestSince: Int64?

    package init(queued: Int = 0, oldestSince: Int64? = nil) {
        self.queued = queued
        self.oldestSince = oldestSince
    }
}
