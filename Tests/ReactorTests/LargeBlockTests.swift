import Glibc
import Testing

@testable import Reactor

/// Whether glibc gave `pointer` a mapping of its own: bit 1 (IS_MMAPPED) of the chunk's size
/// word, the word just before the pointer malloc returns (glibc's malloc/malloc.c).
private func isMapped(_ pointer: UnsafeMutableRawPointer) -> Bool {
    (pointer - MemoryLayout<UInt>.size).load(as: UInt.self) & 2 != 0
}

/// `Memory.keepLargeBlocksMapped`: glibc, left to itself, raises its mapping threshold to the
/// size of each mapped block freed, so that blocks of megabytes come from the heap after a load
/// dropped its tables (docs/benchmarks.md).
@Suite("Memory: large blocks stay mapped")
struct LargeBlockTests {
    @Test("after a 16 MB block was mapped and freed, an 8 MB block is still mapped; a 64 KB one is not")
    func stayMapped() throws {
        Memory.keepLargeBlocksMapped()
        // Free space at the arenas' tops given back first: a block that fits in an arena's free
        // space is taken from it whatever the threshold (it rules how a heap grows).
        Memory.trim()
        let big = try #require(malloc(16 << 20))
        #expect(isMapped(big))
        // Left to move, the threshold would be 16 MB from this free on (glibc raises it to the
        // size of a mapped block freed, up to 32 MB), and the next block would grow a heap.
        free(big)
        let block = try #require(malloc(8 << 20))
        defer { free(block) }
        #expect(isMapped(block))
        let small = try #require(malloc(64 << 10))
        defer { free(small) }
        #expect(!isMapped(small))
    }
}
