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

    /// Consecutive `*` are folded into one, as `Pattern` does.
    package init(_ tokens: [Token]) {
        var folded: [Token] = []
        folded.reserveCapacity(tokens.count)
        for token in tokens where !(token == .anyRun && folded.last == .anyRun) { folded.append(token) }
        self.tokens = folded
    }

    /// What `matches` charges for its set-up (the table of masks, the set of consumable
    /// positions, their allocations), in `work` units: about a nanosecond each on this project's
    /// 2-core machine, release build (docs/link-domain.md, "Cost").
    package static let setUpWork = 2_048
    /// What each token step charges beyond its words: the two sets it allocates.
    package static let stepWork = 128

    /// Whether the whole of `subject` matches.
    package func matches(_ subject: UnsafeRawBufferPointer) -> Bool {
        var unbounded = Int.max
        return matches(subject, work: &unbounded)
    }

    /// Whether the whole of `subject` matches, charging `work` for what is done as it is done
    /// (the set-up, a scan of the subject per distinct byte, three passes over the set's words
    /// per token): false, with `work` below zero, once it is spent.
    package func matches(_ subject: UnsafeRawBufferPointer, work: inout Int) -> Bool {
        // Fixed-width patterns (no `*`) need no sets: compare in place.
        if !tokens.contains(.anyRun) {
            work -= tokens.count
            guard tokens.count == subject.count else { return false }
            for (i, token) in tokens.enumerated() {
                if case .byte(let b) = token, subject[i] != b { return false }
            }
            return true
        }
        if tokens == [.anyRun] { return true }
        let n = subject.count
        let words = n / 64 + 1
        work -= Self.setUpWork + n
        if work < 0 { return false }
        var masks = [PositionSet?](repeating: nil, count: 256)
        var consumable = PositionSet(bitCount: n + 1)
        for p in 0..<n { consumable.insert(p) }
        var reach = PositionSet.start(length: n)
        for token in tokens {
            if reach.isEmpty { return false }
            work -= 3 * words + Self.stepWork
            if work < 0 { return false }
            switch token {
            case .byte(let b):
                let mask: PositionSet
                if let known = masks[Int(b)] {
                    mask = known
                } else {
                    work -= n
                    if work < 0 { return false }
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
