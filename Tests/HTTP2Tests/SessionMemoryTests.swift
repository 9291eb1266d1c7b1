import Testing

@testable import HTTP2

@Suite("HTTP/2 session allocator")
struct SessionMemoryTests {
    @Test("heap and mapped blocks keep their bytes through every resize across the threshold, and calloc zeroes")
    func blocks() throws {
        let sizes = [0, 1, 48, 4_096, SessionMemory.mappedThreshold - 1, SessionMemory.mappedThreshold, 16_394, 100_000]
        for from in sizes {
            for to in sizes {
                let block = try #require(SessionMemory.allocate(from, zeroed: false))
                for i in 0..<from { block.storeBytes(of: UInt8(truncatingIfNeeded: i &* 7), toByteOffset: i, as: UInt8.self) }
                let grown = try #require(SessionMemory.resize(block, to))
                let kept = (0..<min(from, to)).allSatisfy {
                    grown.load(fromByteOffset: $0, as: UInt8.self) == UInt8(truncatingIfNeeded: $0 &* 7)
                }
                #expect(kept, "\(from) -> \(to)")
                SessionMemory.release(grown)
            }
            let zeroed = try #require(SessionMemory.allocate(from, zeroed: true))
            #expect((0..<from).allSatisfy { zeroed.load(fromByteOffset: $0, as: UInt8.self) == 0 }, "calloc \(from)")
            SessionMemory.release(zeroed)
        }
        SessionMemory.release(nil)
        let fresh = try #require(SessionMemory.resize(nil, 32))
        SessionMemory.release(fresh)
    }

    @Test("once a session is made, a block of 2 KB is mapped and one of a byte less is not; without a session, only 12 KB and up")
    func clientBlocks() throws {
        let session = HTTP2Session()
        let user = Unmanaged.passUnretained(session).toOpaque()
        #expect(!session.isBeingMade)
        let threshold = SessionMemory.clientBlockThreshold
        for (size, mapped) in [(threshold - 1, false), (threshold, true), (3_522, true)] {
            let block = try #require(SessionMemory.allocate(size, zeroed: false, for: user))
            #expect(SessionMemory.isMapped(block) == mapped, "\(size)")
            // Grown past the threshold from the heap, or within it: where the new size belongs.
            let grown = try #require(SessionMemory.resize(block, size + 1, for: user))
            #expect(SessionMemory.isMapped(grown) == (size + 1 >= threshold), "\(size) + 1")
            SessionMemory.release(grown)
        }
        // Without a session: the frame buffer's rule alone (12 KB and up).
        let plain = try #require(SessionMemory.allocate(threshold, zeroed: false, for: nil))
        #expect(!SessionMemory.isMapped(plain))
        SessionMemory.release(plain)
    }

    @Test("at most the limit of blocks are mapped at once: the one past it comes from the heap, and a freed mapping makes room")
    func mappingCap() throws {
        let limit = 3
        let count = MappingCount(limit: limit)
        let size = SessionMemory.mappedThreshold
        var blocks: [UnsafeMutableRawPointer] = []
        for _ in 0..<limit { blocks.append(try #require(SessionMemory.allocate(size, zeroed: true, count: count))) }
        #expect(blocks.allSatisfy(SessionMemory.isMapped) && count.count == limit)
        let past = try #require(SessionMemory.allocate(size, zeroed: true, count: count))
        #expect(!SessionMemory.isMapped(past), "a mapping past the limit")
        #expect((0..<size).allSatisfy { past.load(fromByteOffset: $0, as: UInt8.self) == 0 })
        SessionMemory.release(past, count: count)
        #expect(count.count == limit)
        SessionMemory.release(blocks.removeLast(), count: count)
        #expect(count.count == limit - 1)
        let again = try #require(SessionMemory.allocate(size, zeroed: false, count: count))
        #expect(SessionMemory.isMapped(again))
        for block in blocks + [again] { SessionMemory.release(block, count: count) }
        #expect(count.count == 0)
        // The process-wide count is the one sessions use.
        #expect(SessionMemory.mappings.limit == SessionMemory.maximumMappings)
    }

    @Test("a size whose header would overflow is refused, not trapped")
    func overflow() {
        #expect(SessionMemory.allocate(Int.max, zeroed: false) == nil)
        #expect(SessionMemory.allocate(Int.max - 8, zeroed: true) == nil)
    }
}
