/// Names someone asked for, on their way from serving threads to the certificate manager's
/// thread: a handshake's SNI for a wanted name without a certificate, Apple's CDN fetching a
/// site's file, the tenant API creating a site. Serving threads only `offer` (one set look-up
/// and, for a name not seen before, one insert, under the manager's lock, never waiting for
/// the network); the manager `take`s them at its next pass and puts them in the demanded tier
/// (`OrderQueue.Class.demanded`). A pure value: tests drive it with plain names.
///
/// Only names the manager wants reach it (`CertificateManager.demand` checks first), so random
/// SNI names never fill it; and it is bounded all the same (`capacity`), so that even a flood
/// of held names between two passes costs a fixed amount of memory.
package struct DemandIntake: Sendable {
    /// Names waiting for the manager's next pass, at most. The manager takes them at least once
    /// a second and at once when woken, so this bounds what a flood of distinct held names can
    /// add between two passes; a name offered while it is full is dropped, and the client's
    /// next handshake (clients retry) offers it again. 1,024 names take about 100 KB.
    package static let capacity = 1_024

    /// Names offered and not yet taken, in the order they came.
    private(set) var pending: [String] = []
    /// The same names, for the duplicate check.
    private var pendingSet: Set<String> = []
    /// Names the manager holds as demanded: offered again, they cost one look-up and nothing
    /// else. A name leaves when it gets a certificate or stops being wanted (`release`). At most
    /// the wanted names (the manager never holds another).
    private(set) var held: Set<String> = []
    /// Held names offered again since the last `takeSeen`: still asked for (their demand
    /// record is kept written, `ReplicaRecords.maximumDemandAge`). At most the held names.
    private var seen: Set<String> = []

    package init() {}

    /// Notes that `name` was asked for; true when it is new (the manager should be woken),
    /// false for a name pending or held already (a held one is noted as `seen`), or when
    /// `capacity` names are pending.
    package mutating func offer(_ name: String) -> Bool {
        if held.contains(name) {
            seen.insert(name)
            return false
        }
        guard !pendingSet.contains(name), pending.count < Self.capacity else { return false }
        pending.append(name)
        pendingSet.insert(name)
        return true
    }

    /// The names offered since the last take, oldest first; each is held from now on (offered
    /// again, it is ignored) until `release`.
    package mutating func take() -> [String] {
        let taken = pending
        pending.removeAll(keepingCapacity: true)
        pendingSet.removeAll(keepingCapacity: true)
        held.formUnion(taken)
        return taken
    }

    /// Forgets `name` as demanded: it has a certificate, or is no longer wanted. Offered again
    /// later (its certificate gone), it is demanded again.
    package mutating func release(_ name: String) {
        held.remove(name)
        seen.remove(name)
    }

    /// The held names offered again since the last call.
    package mutating func takeSeen() -> Set<String> {
        defer { seen.removeAll() }
        return seen
    }

    /// The number of names pending (for tests).
    package var pendingCount: Int { pending.count }
}

/// The hourly order budget split by tier: names nobody asked for may not spend all of it, so
/// that a renewal or a demanded name never waits an hour behind the backlog (a queue of
/// 100,000 new names would otherwise take every order of every hour). A pure value.
package enum OrderBudget {
    /// The part of `acme.orders-per-hour` kept for renewals and demanded names: a quarter, and
    /// at least one order as soon as the budget has two (with one order an hour there is
    /// nothing to split; the tiers still decide which name gets it). At the default 60 an hour
    /// the backlog spends 45 and 15 are kept, enough for a new customer's names in any hour.
    package static let reservedDivisor = 4

    /// Orders kept for renewals and demanded names out of `ordersPerHour`.
    package static func reserved(ordersPerHour: Int) -> Int {
        ordersPerHour < 2 ? 0 : max(1, ordersPerHour / reservedDivisor)
    }

    /// Orders of the last hour (all tiers, every replica) under which `tier` may place one.
    package static func limit(for tier: OrderQueue.Class, ordersPerHour: Int) -> Int {
        let all = max(1, ordersPerHour)
        return tier == .new ? all - reserved(ordersPerHour: all) : all
    }

    /// When `limit` orders of the last hour are no longer reached: when enough of the `times`
    /// (seconds since the epoch of the window's orders) have left the `window`. `times.count`
    /// is at least `limit`, and `limit` at least 1.
    package static func reopens(times: [Int64], limit: Int, window: Int64) -> Int64 {
        let sorted = times.sorted()
        let index = min(max(sorted.count - max(limit, 1), 0), max(sorted.count - 1, 0))
        return (sorted.isEmpty ? 0 : sorted[index]) + window
    }
}
