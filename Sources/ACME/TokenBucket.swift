/// A token bucket: `burst` tokens, refilled at `per` tokens every `milliseconds`.
package struct TokenBucket: Sendable, Equatable {
    let burst: Double
    let perMillisecond: Double
    private var tokens: Double
    private var last: Int64

    package init(burst: Int, per: Int, milliseconds: Int64, now: Int64) {
        self.burst = Double(max(1, burst))
        perMillisecond = Double(max(0, per)) / Double(max(1, milliseconds))
        tokens = self.burst
        last = now
    }

    /// Refills to `now`; whether a token is there beyond `keeping` (tokens held back for others).
    package mutating func has(now: Int64, keeping: Int = 0) -> Bool {
        if now > last {
            tokens = min(burst, tokens + Double(now - last) * perMillisecond)
            last = now
        }
        return tokens >= 1 + Double(max(0, keeping))
    }

    /// Spends a token (after `has` said one is there).
    package mutating func take() { tokens = max(0, tokens - 1) }

    /// Gives back a token spent on nothing (never past the burst).
    package mutating func give() { tokens = min(burst, tokens + 1) }
}
