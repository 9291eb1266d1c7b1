import Served
import Synchronization

/// Where the current snapshot is published: a reference under a lock, and its generation in an
/// atomic. Workers compare the generation with the one they hold and take the lock only when it
/// changed (once per reload per worker); the TLS server-name callback takes it on every handshake
/// that names a server. The lock is held only to copy a reference, so a reload never waits for a
/// loop and a loop never waits for a reload's build.
public final class SnapshotStore: Sendable {
    private let current: Mutex<Snapshot>
    private let published: Atomic<UInt64>

    public init(_ initial: Snapshot) {
        current = Mutex(initial)
        published = Atomic(initial.generation)
    }

    /// Makes `snapshot` the one served from now on.
    public func publish(_ snapshot: Snapshot) {
        current.withLock { $0 = snapshot }
        published.store(snapshot.generation, ordering: .releasing)
    }

    /// The generation of the snapshot last published: one atomic load.
    public var generation: UInt64 { published.load(ordering: .acquiring) }

    /// The snapshot last published.
    public func snapshot() -> Snapshot { current.withLock { $0 } }
}
