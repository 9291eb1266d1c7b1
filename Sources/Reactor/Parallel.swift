import Foundation

/// Work on every core for the large, independent batches of a load (reading 100,000 site
/// directories, adding their watches), in order, on the calling thread for small ones.
public enum Parallel {
    /// `transform` of each element, in order. Batches of `threshold` elements or fewer run on the
    /// calling thread; larger ones are cut into a few slices per core (uneven costs even out).
    public static func map<Element: Sendable, Result: Sendable>(
        _ elements: [Element], threshold: Int, _ transform: @Sendable (Element) -> Result
    ) -> [Result] {
        guard elements.count > threshold else { return elements.map(transform) }
        let slices = max(1, ProcessInfo.processInfo.activeProcessorCount * 4)
        let size = (elements.count + slices - 1) / slices
        // Written in place into the array returned: a buffer copied into an array retained and
        // released every reference in every result (100,000 site entries at a full load, on the
        // thread that waits for them).
        return [Result](unsafeUninitializedCapacity: elements.count) { buffer, count in
            // Each slice initialises its own range of `buffer` only.
            nonisolated(unsafe) let output = buffer
            DispatchQueue.concurrentPerform(iterations: slices) { slice in
                for i in min(elements.count, slice * size)..<min(elements.count, (slice + 1) * size) {
                    (output.baseAddress! + i).initialize(to: transform(elements[i]))
                }
            }
            count = elements.count
        }
    }
}

extension Parallel {
    /// Work started on another thread now and waited for later: the next batch of a load read
    /// while the calling thread applies this one. The caller waits once, also on its way out
    /// early (a `defer`), so that no work outlives the caller's use of what it reads.
    public final class Ahead<Result: Sendable>: @unchecked Sendable {
        private let done = DispatchSemaphore(value: 0)
        /// Written once by the work's thread before `done` is signalled; read after the wait.
        private var result: Result?

        public init(_ work: @escaping @Sendable () -> Result) {
            DispatchQueue.global(qos: .userInitiated).async {
                self.result = work()
                self.done.signal()
            }
        }

        /// The result, once the work has ended. Called once.
        public func wait() -> Result {
            done.wait()
            // A second wait finds no result and stops the process rather than waiting for good.
            defer { done.signal() }
            guard let result else { preconditionFailure("Parallel.Ahead waited for twice") }
            self.result = nil
            return result
        }
    }
}
