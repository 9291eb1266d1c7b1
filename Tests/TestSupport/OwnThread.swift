import Foundation

/// Runs `body` on a thread of its own and returns what it returns: for a test that blocks for
/// minutes (a child process such as schemathesis or a model client, a replay of a large corpus).
/// Swift Testing runs a process's tests on Swift's cooperative pool, as wide as the machine's cores
/// (two on the CI machine), and this project's tests block their thread while they wait. A test
/// that holds one of the two for minutes leaves every other test of its process one thread
/// meanwhile, and its group in scripts/test lasts that much longer. `body` records no issue itself
/// (`#expect` on a thread of its own has no test to report to): the test checks what it returns.
package func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
