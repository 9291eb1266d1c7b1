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
        let old = budget.exchange(value, ordering: .relaxed)
        guard old != value else { return }
        state.withLock { state in
            state.budgetBlockedUntil = 0
            state.backgroundBlockedUntil = 0
        }
        logger.notice("order budget changed", metadata: ["ordersPerHour": "\(value)", "was": "\(old)"])
        wakeup.wake()
    }
}
