import Synchronization

/// What the serving workers tell each other about their holders (connections whose HTTP/2
/// session holds at least `Worker.evictableHolding` of incomplete requests), so that a new HTTPS
/// connection arriving with the process budget spent closes exactly one holder, in whichever
/// worker's table it is (each worker has its own SO_REUSEPORT listener and the kernel spreads new
/// connections over them by address), or is refused when there is none to close.
///
/// Each worker publishes an exact count of its holders (`Slot.holders`). A newcomer is let in only
/// against a reservation (`reserve`): one more pending ask on a worker than that worker has asks
/// pending, while the asks stay at most its count. So the newcomers let in with the budget spent
/// are never more than the holders that are closed for them, or that let go of what they held
/// by themselves before they could be (a request completed, a connection closed).
/// Slots are added while the server is made, before any worker thread starts, and never after.
final class HolderBoard: @unchecked Sendable {
    /// One worker's part.
    final class Slot: @unchecked Sendable {
        /// Wakes the worker's loop: the only thing done to it from other threads, which
        /// `EventLoop.wake` allows.
        let wake: () -> Void
        /// The worker's connections holding `Worker.evictableHolding` or more, kept exact by the
        /// worker after each step of a connection and when one closes (`Worker.noteHolding`).
        /// Written by its worker alone.
        let holders = Atomic<Int>(0)
        /// Newcomers let in against this worker's holders, each waiting for one to be closed
        /// (`Worker.evictForAsks`). Raised by any worker, only while below `holders`; lowered by
        /// this one once it has closed them.
        let asked = Atomic<Int>(0)

        init(wake: @escaping () -> Void) { self.wake = wake }

        /// One more ask, if this worker has a holder no ask has claimed yet.
        func claim() -> Bool {
            var pending = asked.load(ordering: .acquiring)
            while pending < holders.load(ordering: .acquiring) {
                let (exchanged, original) = asked.compareExchange(expected: pending, desired: pending + 1, ordering: .acquiringAndReleasing)
                if exchanged { return true }
                pending = original
            }
            return false
        }

        /// Holders no ask has claimed yet.
        var unclaimed: Int { holders.load(ordering: .acquiring) - asked.load(ordering: .acquiring) }
    }

    private(set) var slots: [Slot] = []

    /// A slot for a worker being made (before the workers start).
    func join(wake: @escaping () -> Void) -> Slot {
        let slot = Slot(wake: wake)
        slots.append(slot)
        return slot
    }

    /// The worker to close a holder for a newcomer that `mine` took with the budget spent, with
    /// the ask already claimed on it: `mine` when it has an unclaimed holder (closing it there
    /// costs no thread another's wake), else the worker with the most unclaimed holders; nil when
    /// no worker has one, and the newcomer is refused. A claim lost to another worker's is tried
    /// again, at most once per slot: each loss means a holder went to another newcomer.
    func reserve(for mine: Slot) -> Slot? {
        if mine.claim() { return mine }
        for _ in slots.indices {
            var best: Slot?
            var most = 0
            for slot in slots where slot !== mine {
                let unclaimed = slot.unclaimed
                if unclaimed > most {
                    best = slot
                    most = unclaimed
                }
            }
            guard let best else { return nil }
            if best.claim() { return best }
        }
        return nil
    }
}
