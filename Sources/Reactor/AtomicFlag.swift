import Synchronization

/// One Boolean shared between threads: raised by one (a signal loop, the command), read by others
/// (each worker at every loop iteration, the admin listener's `/readyz`). Acquire and release
/// ordering, so what was written before `raise()` is seen after `isRaised`.
public final class AtomicFlag: Sendable {
    private let value: Atomic<Bool>

    /// A flag that starts lowered unless `raised`.
    public init(raised: Bool = false) {
        value = Atomic(raised)
    }

    public var isRaised: Bool { value.load(ordering: .acquiring) }

    public func raise() { value.store(true, ordering: .releasing) }

    public func lower() { value.store(false, ordering: .releasing) }
}
