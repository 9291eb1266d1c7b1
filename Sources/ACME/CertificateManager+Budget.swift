import Logging
import Synchronization

/// The order budget changed on the running manager (`acme.orders-per-hour` applied while
/// serving): replacing the manager would forget every name's back-off, the sites' turns and the
/// names asked for, and a new manager could order again a name whose order the old one still has
/// in flight. The budget is only read where an order is about to be spent
/// (`spendBudget`), so a new value holds from the next pass on.
extension CertificateManager {
    /// Orders placed per hour at most, by every replica sharing the storage, as in force now.
    public var ordersPerHour: Int { budget.load(ordering: .relaxed) }

    /// Sets the budget on the running manager. Names waiting for the budget are looked at again
    /// at once: a raised budget may have reopened (the order log decides again), a lowered one
    /// holds them at the next spend.
    public func setOrdersPerHour(_ value: Int) {
        let value = max(1, value)
        // Under the state's lock, where `spendBudget` reads the budget and writes the
        // blocked-until times: a spend that judged with the old budget has written them
        // before this clears them, and one after sees the new budget.
        let old = state.withLock { state -> Int in
            let old = budget.exchange(value, ordering: .relaxed)
            if old != value {
                state.budgetBlockedUntil = 0
                state.backgroundBlockedUntil = 0
            }
            return old
        }
        guard old != value else { return }
        logger.notice("order budget changed", metadata: ["ordersPerHour": "\(value)", "was": "\(old)"])
        wakeup.wake()
    }
}
