/// A set of positions 0…n in a string of n scalars, as a bitset: position p means "the first p
/// scalars are consumed". Pattern matching moves whole sets one token at a time, which makes it
/// linear in pattern length × string length instead of exponential (spec §1.7, WWDC20's warning).
struct PositionSet: Equatable {
    private(set) var words: [UInt64]
    /// n + 1: positions 0 through n.
    let bitCount: Int

    init(bitCount: Int) {
        self.bitCount = bitCount
        words = Array(repeating: 0, count: (bitCount + 63) / 64)
    }

    static func start(length n: Int) -> PositionSet {
        var s = PositionSet(bitCount: n + 1)
        s.insert(0)
        return s
    }

    var wordCount: Int { words.count }

    mutating func insert(_ p: Int) {
        words[p >> 6] |= 1 << UInt64(p & 63)
    }

    func contains(_ p: Int) -> Bool {
        p >= 0 && p < bitCount && words[p >> 6] & (1 << UInt64(p & 63)) != 0
    }

    var isEmpty: Bool { words.allSatisfy { $0 == 0 } }

    var lowest: Int? {
        for (i, w) in words.enumerated() where w != 0 {
            return i * 64 + w.trailingZeroBitCount
        }
        return nil
    }

    mutating func formUnion(_ other: PositionSet) {
        for i in words.indices { words[i] |= other.words[i] }
    }

    func intersection(_ other: PositionSet) -> PositionSet {
        var out = self
        for i in out.words.indices { out.words[i] &= other.words[i] }
        return out
    }

    /// Every position moved k places on; those past n fall off.
    func shifted(by k: Int) -> PositionSet {
        var out = PositionSet(bitCount: bitCount)
        let wordShift = k >> 6
        let bitShift = UInt64(k & 63)
        for i in stride(from: words.count - 1, through: wordShift, by: -1) {
            var w = words[i - wordShift] << bitShift
            if bitShift != 0 && i - wordShift - 1 >= 0 {
                w |= words[i - wordShift - 1] >> (64 - bitShift)
            }
            out.words[i] = w
        }
        out.clearPastEnd()
        return out
    }

    /// Every position from the lowest member to n: what `*` reaches.
    func fillingFromLowest() -> PositionSet {
        var out = PositionSet(bitCount: bitCount)
        guard let low = lowest else { return out }
        let first = low >> 6
        out.words[first] = ~UInt64(0) << UInt64(low & 63)
        for i in (first + 1)..<max(first + 1, words.count) { out.words[i] = ~UInt64(0) }
        out.clearPastEnd()
        return out
    }

    private mutating func clearPastEnd() {
        let extra = words.count * 64 - bitCount
        if extra > 0 { words[words.count - 1] &= ~UInt64(0) >> UInt64(extra) }
    }
}
