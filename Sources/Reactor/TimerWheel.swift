/// Deadlines for many connections at one-second resolution, each O(1): a ring of slots, one per
/// second. A connection has at most one entry; when its slot fires and its deadline has moved on
/// (a keep-alive request re-armed it), it is put back in the slot of its new deadline. Re-arming
/// therefore costs nothing but a store of the deadline, and idle connections cost one entry each.
public struct TimerWheel {
    /// Whose deadline an entry is: the owner's slot (a descriptor), its generation, and a ticket
    /// the owner changes when it files a new entry, which retires the old one.
    public struct Entry: Equatable, Sendable {
        public var slot: Int32
        public var generation: UInt32
        public var ticket: UInt32

        public init(slot: Int32, generation: UInt32, ticket: UInt32 = 0) {
            self.slot = slot
            self.generation = generation
            self.ticket = ticket
        }
    }

    /// Slots in the ring: deadlines further ahead are parked in the last slot and re-checked, so
    /// any timeout works, and the longest common ones (60 s idle) fire on time.
    public static let slotCount = 128

    private var slots: [[Entry]]
    /// The last second processed.
    private(set) public var now: Int64

    public init(now: Int64) {
        self.now = now
        slots = Array(repeating: [], count: Self.slotCount)
    }

    /// Files an entry for `deadline` (in seconds of the same clock as `now`).
    public mutating func schedule(_ entry: Entry, at deadline: Int64) {
        let target = min(max(deadline, now + 1), now + Int64(Self.slotCount) - 1)
        slots[Int(target % Int64(Self.slotCount))].append(entry)
    }

    /// Moves time to `second` and hands each entry of every passed slot to `fire`, which returns the
    /// entry's current deadline to re-file it, or nil when it expired or no longer exists.
    public mutating func advance(to second: Int64, _ fire: (Entry) -> Int64?) {
        guard second > now else { return }
        // After a long stall, one pass over the ring sees every entry once.
        let steps = min(second - now, Int64(Self.slotCount))
        var due: [Entry] = []
        for step in 1...steps {
            let index = Int((now + step) % Int64(Self.slotCount))
            due.append(contentsOf: slots[index])
            slots[index].removeAll(keepingCapacity: true)
        }
        now = second
        for entry in due {
            if let deadline = fire(entry) { schedule(entry, at: deadline) }
        }
    }

    /// Entries currently filed (for tests and metrics).
    public var count: Int { slots.reduce(0) { $0 + $1.count } }
}
