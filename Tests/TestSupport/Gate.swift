import Dispatch

/// Holds a background step (a build, a write) where the code under test calls `hold`, until the
/// test calls `release`; `waitHeld` says when one is held. Orders events by waiting on them, never
/// by sleeping.
package final class Gate: Sendable {
    private let held = DispatchSemaphore(value: 0)
    private let open = DispatchSemaphore(value: 0)

    package init() {}

    /// Called by the code under test: says it is held, then waits for `release`.
    package func hold() {
        held.signal()
        open.wait()
    }

    /// Waits until a step is held, at most `timeout` seconds.
    package func waitHeld(timeout: Double = 120) -> Bool { held.wait(timeout: .now() + timeout) == .success }

    /// Lets one held step go on.
    package func release() { open.signal() }
}
