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
