/// A dictionary whose copies share its bulk: the values as of the last `fold` in a shared base
/// that no copy changes, and the changes since in a small map of their own. Copying one and
/// changing the copy costs the changes, not the whole map: the tenant API checks every write on
/// a copy of the ownership of 100,000 sites (Sources/TenantAPI/PendingClaims.swift), and the
/// server's admin view keeps a copy of the last reload's (Sources/Daemon/Admin.swift), so a plain
/// dictionary was copied whole by the check and again by the next reload (192 ms of a PUT's time
/// at 100,000 sites, docs/benchmarks.md).
struct LayeredMap<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The values as of the last fold. Changed in place only while no copy shares it
    /// (`isKnownUniquelyReferenced`), so that a copy never sees another's change; that is why it
    /// may be sent between threads.
    private final class Base: @unchecked Sendable {
        var values: [Key: Value]
        init(_ values: [Key: Value]) { self.values = values }
    }

    private var base = Base([:])
    /// The changes since the last fold: a key's new value, or nil for a key removed.
    private var changes: [Key: Value?] = [:]

    /// Changes kept beside the base before `foldIfLarge` folds them in. A changed copy copies the
    /// changes (a check's cost) and a fold copies the base when a copy still shares it (a
    /// reload's, once per this many changes): the square root of the base's size balances the
    /// two (about 320 at 100,000 sites); never fewer than 64, below which a fold is as cheap.
    var foldThreshold: Int { max(64, Int(Double(base.values.count).squareRoot())) }

    subscript(key: Key) -> Value? {
        get {
            if let change = changes[key] { return change }
            return base.values[key]
        }
        set { store(newValue, for: key) }
        // A change in place (`map[site]?[host] = nil`) takes the value out of `changes`, so the
        // caller changes the only copy of it: with get and set alone, every such write copied the
        // whole value (a site's refusals), which made deciding k refused aliases cost k².
        _modify {
            var value = changes.removeValue(forKey: key) ?? base.values[key]
            defer { store(value, for: key) }
            yield &value
        }
    }

    subscript(key: Key, default fallback: @autoclosure () -> Value) -> Value {
        get { self[key] ?? fallback() }
        set { store(newValue, for: key) }
        _modify {
            var value = (changes.removeValue(forKey: key) ?? base.values[key]) ?? fallback()
            defer { store(value, for: key) }
            yield &value
        }
    }

    private mutating func store(_ value: Value?, for key: Key) {
        // A key the base lacks needs no mark that it is gone.
        if value == nil, base.values[key] == nil {
            changes.removeValue(forKey: key)
        } else {
            changes.updateValue(value, forKey: key)
        }
    }

    @discardableResult
    mutating func removeValue(forKey key: Key) -> Value? {
        let old = self[key]
        if old != nil { self[key] = nil }
        return old
    }

    /// Whether the map holds no key: then a lookup finds nothing and a removal has nothing to
    /// remove (a first load decides 100,000 names against maps of contests, alias claims and
    /// refusals that are all empty, and skips their lookups). A key removed since the last fold
    /// may leave this false for an empty map, never true for one that holds a key.
    var isEmpty: Bool { changes.isEmpty && base.values.isEmpty }

    /// Every key and value, in no particular order.
    func forEach(_ body: (Key, Value) -> Void) {
        for (key, value) in base.values where changes[key] == nil { body(key, value) }
        for (key, value) in changes {
            if let value { body(key, value) }
        }
    }

    /// Every key, in no particular order.
    var keys: [Key] {
        var out: [Key] = []
        forEach { key, _ in out.append(key) }
        return out
    }

    /// The whole map as one dictionary (a copy of the base when there are changes).
    var dictionary: [Key: Value] {
        guard !changes.isEmpty else { return base.values }
        var out = base.values
        for (key, value) in changes { out[key] = value }
        return out
    }

    /// Makes room for `count` keys in the changes, where a load's writes wait until the reload
    /// folds them (`HostOwnership.compact`), and in the base they are folded into while no copy
    /// shares it: a first full load grew and rehashed each some 17 times on the way to 100,000
    /// sites. The changes' room goes with them when they are folded.
    mutating func reserveCapacity(_ count: Int) {
        changes.reserveCapacity(count)
        guard isKnownUniquelyReferenced(&base) else { return }
        base.values.reserveCapacity(count)
    }

    /// Folds the changes into the base when there are more than `foldThreshold`.
    mutating func foldIfLarge() {
        guard changes.count > foldThreshold else { return }
        fold()
    }

    /// Folds the changes into the base: in place when no copy shares it, else into a new one.
    mutating func fold() {
        guard !changes.isEmpty else { return }
        // Into an empty base (a first load's 100,000 sites): the changes' own table becomes it,
        // each value taken as it lies, rather than every key hashed again. None of them marks a
        // removal then (`store` marks only keys the base holds), which is checked, not assumed.
        if base.values.isEmpty, !changes.values.contains(where: { $0 == nil }) {
            base = Base(changes.mapValues { $0! })
            changes = [:]
            return
        }
        if !isKnownUniquelyReferenced(&base) { base = Base(base.values) }
        for (key, value) in changes { base.values[key] = value }
        changes = [:]
    }

    /// How many changes wait to be folded (tests).
    var pendingChanges: Int { changes.count }
}
