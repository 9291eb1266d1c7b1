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
        let results = UnsafeMutableBufferPointer<Result>.allocate(capacity: elements.count)
        defer { results.deallocate() }
        let slices = max(1, ProcessInfo.processInfo.activeProcessorCount * 4)
        let size = (elements.count + slices - 1) / slices
        // Each slice initialises its own range of `results` only.
        nonisolated(unsafe) let output = results
        DispatchQueue.concurrentPerform(iterations: slices) { slice in
            for i in min(elements.count, slice * size)..<min(elements.count, (slice + 1) * size) {
                (output.baseAddress! + i).initialize(to: transform(elements[i]))
            }
        }
        let array = Array(results)
        _ = results.deinitialize()
        return array
    }
}
