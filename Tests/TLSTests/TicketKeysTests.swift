import Synchronization
import Testing

@testable import TLS

/// A clock the test moves by hand.
private final class FakeClock: Sendable {
    let seconds = Atomic<Int64>(1_000)
    func advance(_ by: Int64) { seconds.add(by, ordering: .relaxed) }
}

@Suite("Session ticket keys (rotation with overlap)")
struct TicketKeysTests {
    @Test("the same key is used until the rotation interval has passed")
    func stableWithinInterval() {
        let clock = FakeClock()
        let keys = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        let first = keys.current().name
        clock.advance(TicketKeys.rotationInterval - 1)
        #expect(keys.current().name == first)
        clock.advance(1)
        #expect(keys.current().name != first)
    }

    @Test("an older key still opens tickets, marked for renewal; the newest does not need renewal")
    func overlap() throws {
        let clock = FakeClock()
        let keys = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        let old = keys.current().name
        clock.advance(TicketKeys.rotationInterval)
        let new = keys.current().name
        let foundOld = try #require(old.withUnsafeBufferPointer { keys.find(name: $0.baseAddress!) })
        #expect(!foundOld.isNewest)
        let foundNew = try #require(new.withUnsafeBufferPointer { keys.find(name: $0.baseAddress!) })
        #expect(foundNew.isNewest)
    }

    @Test("no more than keysKept keys are held; the oldest then opens nothing")
    func ageOut() {
        let clock = FakeClock()
        let keys = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        let first = keys.current().name
        for _ in 0..<TicketKeys.keysKept {
            clock.advance(TicketKeys.rotationInterval)
            _ = keys.current()
        }
        #expect(keys.names.count == TicketKeys.keysKept)
        #expect(first.withUnsafeBufferPointer { keys.find(name: $0.baseAddress!) } == nil)
    }

    @Test("exported keys are adopted whole by another process's keys, schedule included; malformed bytes change nothing")
    func exportAndAdopt() {
        let clock = FakeClock()
        let old = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        _ = old.current()
        clock.advance(TicketKeys.rotationInterval)
        let bytes = old.exported()
        #expect(bytes.count == 2 * TicketKeys.exportedKeySize)

        let new = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        #expect(new.adopt(bytes))
        #expect(new.exported() == bytes, "every byte of every key, in order")
        // The newest key stays in use until its own interval ends, then rotation goes on.
        #expect(new.current().name == old.names[0])
        clock.advance(TicketKeys.rotationInterval)
        #expect(new.current().name != old.names[0])

        let other = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        let before = other.names
        #expect(!other.adopt([]))
        #expect(!other.adopt(Array(bytes.dropLast())))
        #expect(!other.adopt(Array(repeating: 1, count: (TicketKeys.keysKept + 1) * TicketKeys.exportedKeySize)))
        #expect(other.names == before)
    }

    @Test("adopted keys from the future count as made now; ones too old to be kept are dropped")
    func adoptedTimes() {
        let clock = FakeClock()
        clock.advance(100_000)
        func key(_ fill: UInt8, created: Int64) -> [UInt8] {
            Array(repeating: fill, count: 80) + withUnsafeBytes(of: UInt64(bitPattern: created).bigEndian, Array.init)
        }
        let now = clock.seconds.load(ordering: .relaxed)
        let keys = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        // One from the future, one current, one far too old (Int64.min: no overflow).
        #expect(keys.adopt(key(1, created: now + 1_000_000) + key(2, created: now - 10) + key(3, created: .min)))
        #expect(keys.names == [Array(repeating: 1, count: 16), Array(repeating: 2, count: 16)])
        // The future key rotates after one interval from now, not from its claimed time.
        clock.advance(TicketKeys.rotationInterval)
        #expect(keys.current().name != Array(repeating: 1, count: 16))
        // Nothing young enough: refused.
        let other = TicketKeys(clock: { clock.seconds.load(ordering: .relaxed) })
        #expect(!other.adopt(key(4, created: .min)))
    }
}
