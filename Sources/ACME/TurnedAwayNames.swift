/// Names under wildcard sites that a handshake offered and the parent's ask rate turned away
/// (`ChildLedger.offer`), so that the same name offered again is known as a client retrying: a
/// real client sends its name again and again until it gets its certificate, while a scanner
/// sends each random name once. A fixed table of `slots` hashes, each slot holding the last name
/// that fell in it: memory never grows, and a flood only overwrites slots, so at worst a real
/// name is taken for a new one again (as without the table) and is noted for its next try.
///
/// The hashes come from Swift's `Hasher`, seeded at random in each process, so a client cannot
/// choose names that collide with another's; two names sharing all 64 bits of the hash is as
/// rare as a guess of a random 64-bit number.
package struct TurnedAwayNames: Sendable {
    /// Slots: 4,096 hashes, 32 KB. A real client's slot survives N names turned away between
    /// two of its tries with probability (1 - 1/4096)^N, about e^(-N/4096): one half for
    /// 2,850 (10 s of a flood of 285 names a second). Each process has its own table: a retry
    /// that reaches another replica is a new name there.
    package static let slots = 4_096

    private var hashes = [UInt64](repeating: 0, count: Self.slots)

    package init() {}

    package func contains(_ name: String) -> Bool {
        let hash = Self.hash(name)
        return hashes[Self.slot(hash)] == hash
    }

    package mutating func insert(_ name: String) {
        let hash = Self.hash(name)
        hashes[Self.slot(hash)] = hash
    }

    package mutating func remove(_ name: String) {
        let hash = Self.hash(name)
        if hashes[Self.slot(hash)] == hash { hashes[Self.slot(hash)] = 0 }
    }

    /// Names held now (at most `slots`).
    package var count: Int { hashes.reduce(0) { $0 + ($1 == 0 ? 0 : 1) } }

    /// Never 0, which marks an empty slot.
    private static func hash(_ name: String) -> UInt64 {
        var hasher = Hasher()
        hasher.combine(name)
        return UInt64(bitPattern: Int64(hasher.finalize())) | 1
    }

    private static func slot(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: (hash >> 1) % UInt64(slots)) }
}
