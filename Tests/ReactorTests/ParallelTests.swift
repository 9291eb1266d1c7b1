import Synchronization
import Testing

@testable import Reactor

@Suite("Parallel.map: every core for large batches, in order")
struct ParallelTests {
    /// A result that counts how many of its kind are alive, to catch one released twice or never.
    final class Counted: Sendable {
        static let alive = Atomic<Int>(0)
        let value: Int
        init(_ value: Int) {
            self.value = value
            Self.alive.add(1, ordering: .relaxed)
        }
        deinit { Self.alive.subtract(1, ordering: .relaxed) }
    }

    @Test(
        "each element transformed once, results in the elements' order, around the threshold and past the slices",
        arguments: [0, 1, 63, 64, 65, 1_000, 10_007])
    func inOrder(count: Int) {
        let calls = Atomic<Int>(0)
        let elements = Array(0..<count)
        let results = Parallel.map(elements, threshold: 64) { element -> String in
            calls.add(1, ordering: .relaxed)
            return "element \(element)"
        }
        // Counted rather than compared whole: a failure names how many, not 10,007 strings.
        #expect(results.count == count)
        #expect(zip(results, elements).count { $0 != "element \($1)" } == 0)
        #expect(calls.load(ordering: .relaxed) == count)
    }

    @Test("references in the results are held once: alive while the array is, gone after")
    func referencesHeldOnce() {
        let before = Counted.alive.load(ordering: .relaxed)
        do {
            let results = Parallel.map(Array(0..<5_000), threshold: 64) { Counted($0) }
            #expect(results.count == 5_000)
            #expect(results.enumerated().count { $0.element.value != $0.offset } == 0)
            #expect(Counted.alive.load(ordering: .relaxed) - before == 5_000)
        }
        #expect(Counted.alive.load(ordering: .relaxed) == before)
    }
}
