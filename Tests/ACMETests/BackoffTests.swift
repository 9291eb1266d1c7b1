import Testing

@testable import ACME

/// The back-off schedule at its bounds, with the clock and the random draw pinned.
@Suite("ACME back-off")
struct BackoffTests {
    @Test("one minute, doubling, up to one day: exact without jitter, within 10 % below with it")
    func schedule() {
        let expected: [Int64] = [60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 30720, 61440, 86400, 86400]
        for (i, delay) in expected.enumerated() {
            #expect(Backoff.delay(failures: i + 1, retryAfter: nil, random: 0) == delay)
            let low = Backoff.delay(failures: i + 1, retryAfter: nil, random: 0.999_999_9)
            #expect(low >= delay - delay / 10 && low <= delay, "\(i + 1): \(low)")
        }
    }

    @Test("hostile counts and draws stay in bounds: no overflow, no wait past a day, none under 54 s")
    func bounds() {
        for failures in [0, -5, 64, 1000, Int.max] {
            for random in [0, 0.5, 0.999, -1, 7, .nan, .infinity] {
                let d = Backoff.delay(failures: failures, retryAfter: nil, random: random)
                #expect(d >= 54 && d <= Backoff.maximumDelay, "\(failures) \(random): \(d)")
            }
        }
        #expect(Backoff.delay(failures: Int.max, retryAfter: nil, random: 0) == Backoff.maximumDelay)
    }

    @Test("a longer Retry-After wins, a shorter one does not shorten the wait, a huge one is capped at 7 days")
    func retryAfter() {
        #expect(Backoff.delay(failures: 1, retryAfter: 3600, random: 0.5) == 3600)
        #expect(Backoff.delay(failures: 3, retryAfter: 10, random: 0) == 240)
        #expect(Backoff.delay(failures: 30, retryAfter: 2 * 86_400, random: 0.9) == 2 * 86_400)
        #expect(Backoff.delay(failures: 1, retryAfter: Int64.max, random: 0) == ACMELimits.maximumRetryAfterSeconds)
        #expect(Backoff.delay(failures: 1, retryAfter: -100, random: 0) == 60)
    }

    @Test("with an injected clock: no attempt before the next time, one at it; success starts over")
    func clock() {
        var b = Backoff()
        let t0: Int64 = 1_000_000
        #expect(b.mayAttempt(now: t0))
        #expect(b.failed(now: t0, random: 0) == t0 + 60)
        #expect(!b.mayAttempt(now: t0 + 59) && b.mayAttempt(now: t0 + 60))
        #expect(b.failed(now: t0 + 60, retryAfter: 30, random: 0) == t0 + 180)
        #expect(b.failures == 2)
        b.succeeded()
        #expect(b.failures == 0 && b.nextAttempt == nil && b.mayAttempt(now: 0))
        var late = Backoff()
        #expect(late.failed(now: Int64.max - 10, random: 0) == Int64.max)
    }
}
