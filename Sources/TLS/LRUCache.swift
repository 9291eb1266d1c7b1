/// A bounded map that forgets the least recently used entry first (TLSServer's contexts). Lookups and
/// inserts are O(1): entries live in one array, linked from most to least recently used; a freed
/// slot is reused by the next insert. Not thread-safe: `TLSServer` holds it under its lock.
struct LRUCache<Value> {
    private struct Slot {
        var key: String
        var value: Value?
        /// Neighbours toward the most (`newer`) and least (`older`) recently used end; -1 at the ends.
        var newer: Int
        var older: Int
    }

    /// Entries kept before the least recently used is dropped.
    let capacity: Int
    private var slots: [Slot] = []
    private var index: [String: Int] = [:]
    private var free: [Int] = []
    /// The most and least recently used slots; -1 when empty.
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { index.count }

    /// The value under `key`, which becomes the most recently used.
    mutating func value(for key: String) -> Value? {
        guard let i = index[key] else { return nil }
        moveToFront(i)
        return slots[i].value
    }

    /// Stores `value` under `key` as the most recently used. When the cache is full, drops the least
    /// recently used entry whose key is not `keep` (the default certificate, which connections
    /// start on, is never dropped) and returns it.
    @discardableResult
    mutating func insert(_ value: Value, for key: String, keep: String? = nil) -> Value? {
        if let i = index[key] {
            slots[i].value = value
            moveToFront(i)
            return nil
        }
        var evicted: Value?
        if index.count >= capacity {
            var victim = oldest
            while victim != -1 && slots[victim].key == keep { victim = slots[victim].newer }
            if victim != -1 { evicted = remove(victim) }
        }
        let slot = Slot(key: key, value: value, newer: -1, older: newest)
        let i: Int
        if let reused = free.popLast() {
            i = reused
            slots[i] = slot
        } else {
            i = slots.count
            slots.append(slot)
        }
        if newest != -1 { slots[newest].newer = i }
        newest = i
        if oldest == -1 { oldest = i }
        index[key] = i
        return evicted
    }

    /// Keys from the most to the least recently used (for tests).
    var keys: [String] {
        var out: [String] = []
        var i = newest
        while i != -1 {
            out.append(slots[i].key)
            i = slots[i].older
        }
        return out
    }

    private mutating func unlink(_ i: Int) {
        let (newer, older) = (slots[i].newer, slots[i].older)
        if newer != -1 { slots[newer].older = older } else { newest = older }
        if older != -1 { slots[older].newer = newer } else { oldest = newer }
        slots[i].newer = -1
        slots[i].older = -1
    }

    private mutating func moveToFront(_ i: Int) {
        guard newest != i else { return }
        unlink(i)
        slots[i].older = newest
        if newest != -1 { slots[newest].newer = i }
        newest = i
        if oldest == -1 { oldest = i }
    }

    private mutating func remove(_ i: Int) -> Value? {
        unlink(i)
        index[slots[i].key] = nil
        let value = slots[i].value
        slots[i].value = nil
        free.append(i)
        return value
    }
}
