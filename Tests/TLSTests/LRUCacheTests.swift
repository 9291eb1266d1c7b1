import Testing

@testable import TLS

@Suite("The context cache: least recently used dropped first")
struct LRUCacheTests {
    @Test("a full cache drops the entry used least recently, not the one inserted first")
    func dropsLeastRecentlyUsed() {
        var cache = LRUCache<Int>(capacity: 3)
        cache.insert(1, for: "a")
        cache.insert(2, for: "b")
        cache.insert(3, for: "c")
        #expect(cache.value(for: "a") == 1)  // a is now the most recent; b the least
        #expect(cache.insert(4, for: "d") == 2)
        #expect(cache.keys == ["d", "a", "c"])
        #expect(cache.value(for: "b") == nil)
    }

    @Test("the kept key is skipped when it is the least recently used")
    func keepsTheDefault() {
        var cache = LRUCache<Int>(capacity: 2)
        cache.insert(0, for: "default")
        cache.insert(1, for: "a")
        #expect(cache.insert(2, for: "b", keep: "default") == 1)
        #expect(cache.insert(3, for: "c", keep: "default") == 2)
        #expect(cache.keys == ["c", "default"])
    }

    @Test("the cache holds at most its capacity over many inserts, reusing freed slots")
    func bounded() {
        var cache = LRUCache<Int>(capacity: 4)
        for i in 0..<1000 {
            cache.insert(i, for: "k\(i % 37)")
            #expect(cache.count <= 4)
        }
        #expect(cache.keys.count == 4)
        #expect(cache.value(for: "k\(999 % 37)") == 999)
    }

    @Test("inserting an existing key replaces its value and makes it the most recent")
    func replace() {
        var cache = LRUCache<Int>(capacity: 2)
        cache.insert(1, for: "a")
        cache.insert(2, for: "b")
        #expect(cache.insert(3, for: "a") == nil)
        #expect(cache.keys == ["a", "b"])
        #expect(cache.value(for: "a") == 3)
    }
}
