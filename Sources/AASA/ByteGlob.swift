/// A `*`/`?` pattern over bytes, matched with the AASA matcher's algorithm (`PatternEngine`):
/// the set of reachable positions moves one token at a time as a bitset, so the cost is
/// tokens × bytes / 64 word operations whatever the pattern holds (`*a*a*a…` against a 16 KB
/// path included); no backtracking. Used for a route's tail after its last capture
/// (Sources/Served/Routes.swift), where the subject is a request's path as sent.
package struct ByteGlob: Sendable, Equatable {
    package enum Token: Sendable, Equatable {
        case byte(UInt8)
        /// `?`: exactly one byte.
        case anyByte
        /// `*`: any run of bytes, `/` included, possibly empty.
        case anyRun
    }

    package let tokens: [Token]
    /// How many different bytes the pattern names: `matches` scans the subject once for each.
    package let distinctBytes: Int

    /// Consecutive `*` are folded into one, as `Pattern` does.
    package init(_ tokens: [Token]) {
        var folded: [Token] = []
        folded.reserveCapacity(tokens.count)
        for token in tokens where !(token == .anyRun && folded.last == .anyRun) { folded.append(token) }
        self.tokens = folded
        var seen = Set<UInt8>()
        for case .byte(let b) in folded { seen.insert(b) }
        distinctBytes = seen.count
    }

    /// Whether the whole of `subject` matches.
    package func matches(_ subject: UnsafeRawBufferPointer) -> Bool {
        // Fixed-width patterns (no `*`) need no sets: compare in place.
        if !tokens.contains(.anyRun) {
            guard tokens.count == subject.count else { return false }
            for (i, token) in tokens.enumerated() {
                if case .byte(let b) = token, subject[i] != b { return false }
            }
            return true
        }
        if tokens == [.anyRun] { return true }
        let n = subject.count
        var masks = [PositionSet?](repeating: nil, count: 256)
        var consumable = PositionSet(bitCount: n + 1)
        for p in 0..<n { consumable.insert(p) }
        var reach = PositionSet.start(length: n)
        for token in tokens {
            if reach.isEmpty { return false }
            switch token {
            case .byte(let b):
                let mask: PositionSet
                if let known = masks[Int(b)] {
                    mask = known
                } else {
                    var m = PositionSet(bitCount: n + 1)
                    for (p, c) in subject.enumerated() where c == b { m.insert(p) }
                    masks[Int(b)] = m
                    mask = m
                }
                reach = reach.intersection(mask).shifted(by: 1)
            case .anyByte:
                reach = reach.intersection(consumable).shifted(by: 1)
            case .anyRun:
                reach = reach.fillingFromLowest()
            }
        }
        return reach.contains(n)
    }
}
