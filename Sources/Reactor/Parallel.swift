import CAASALinux
import Foundation
import Synchronization

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
    /// `map` for work that names files by path only (`inotify_add_watch` takes no directory
    /// descriptor): a large batch runs on threads of its own, one a core, each with a working
    /// directory of its own set to `directory` (an open descriptor; unshare(CLONE_FS), then
    /// fchdir), so that `transform` names what is in it by a relative path and the kernel walks
    /// one name or two, not the whole path again. No other thread's working directory moves, and
    /// the threads end with the batch. `transform` is told whether relative paths resolve in
    /// `directory` on its thread: not for a small batch (run on the calling thread), nor where a
    /// seccomp filter refuses `unshare` (Docker's default profile does); it then names the same by
    /// the whole path.
    public static func map<Element: Sendable, Result: Sendable>(
        _ elements: [Element], in directory: Int32, threshold: Int,
        _ transform: @escaping @Sendable (Element, _ inDirectory: Bool) -> Result
    ) -> [Result] {
        guard elements.count > threshold else { return elements.map { transform($0, false) } }
        let threads = max(1, min(ProcessInfo.processInfo.activeProcessorCount, 64))
        // Taken a few at a time from one counter: uneven costs even out.
        let step = 64
        let next = SharedIndex()
        return [Result](unsafeUninitializedCapacity: elements.count) { buffer, count in
            // Each index is taken once and initialised by the thread that took it; every thread
            // has left the group before the buffer is handed back.
            nonisolated(unsafe) let output = buffer
            let done = DispatchGroup()
            for _ in 0..<threads {
                done.enter()
                let thread = Thread {
                    let inDirectory = CAASALinux_own_working_directory(directory) == 0
                    while true {
                        let start = next.take(step)
                        guard start < elements.count else { break }
                        for i in start..<min(elements.count, start + step) {
                            (output.baseAddress! + i).initialize(to: transform(elements[i], inDirectory))
                        }
                    }
                    done.leave()
                }
                thread.name = "aasad-in-directory"
                thread.start()
            }
            done.wait()
            count = elements.count
        }
    }
}

/// The next index of a batch that threads take from.
private final class SharedIndex: Sendable {
    private let next = Atomic<Int>(0)

    /// The first of the next `count` indices.
    func take(_ count: Int) -> Int { next.wrappingAdd(count, ordering: .relaxed).oldValue }
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
