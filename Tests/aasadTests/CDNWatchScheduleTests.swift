import Check
import Testing

/// The CDN watch's schedule and states, driven with a clock of the test's own.
@Suite("CDN watch schedule: what to ask next, and what is known")
struct CDNWatchScheduleTests {
    static let v1 = JSONComparison.digest(Array(#"{"v": 1}"#.utf8))
    static let v2 = JSONComparison.digest(Array(#"{"v": 2}"#.utf8))

    static func target(_ host: String, _ site: String = "s", digest: [UInt8]? = v1, changedAt: Int64 = 100) -> CDNWatchSchedule.Target {
        CDNWatchSchedule.Target(host: host, site: site, digest: digest, changedAt: changedAt)
    }

    static func copy(_ digest: [UInt8]?) -> CDNObservation { CDNObservation(status: 200, digest: digest) }
    static let notFound = CDNObservation(status: 404, failureReason: "SWCERR00101 Bad HTTP Response: 404 Not Found")
    static let unreachable = CDNObservation(status: nil, error: "timeout")

    @Test("new hosts are due at once, one at a time; after a first look they spread over half to one and a half intervals")
    func firstPassThenSpread() {
        var schedule = CDNWatchSchedule(interval: 3_600)
        schedule.reconcile((0..<100).map { Self.target("h\($0).test") }, now: 1_000)
        var asked: [String] = []
        var now: Int64 = 1_000
        while let host = schedule.next(now: now).host {
            asked.append(host)
            schedule.record(host, Self.copy(Self.v1), now: now)
            now += 1
        }
        #expect(asked.count == 100 && Set(asked).count == 100)
        // Nothing is due again before half an interval; every host is within one and a half.
        #expect(schedule.next(now: now).host == nil)
        var second: [Int64] = []
        var clock = now
        while clock < 1_000 + 2 * 3_600 {
            if let host = schedule.next(now: clock).host {
                second.append(clock)
                schedule.record(host, Self.copy(Self.v1), now: clock)
            } else {
                clock += 10
            }
        }
        #expect(second.count >= 100)
        let firstRound = second.prefix(100)
        #expect(firstRound.min()! >= 1_000 + 1_800 && firstRound.max()! <= 1_100 + 5_400)
        // Spread: no ten-minute window holds more than a third of them.
        for start in stride(from: Int64(2_800), to: 6_500, by: 60) {
            #expect(firstRound.count { $0 >= start && $0 < start + 600 } <= 34)
        }
    }

    @Test("states and since: missing, current since the copy arrived, stale since the file changed (at once), current again")
    func transitions() throws {
        var schedule = CDNWatchSchedule(interval: 3_600)
        schedule.reconcile([Self.target("a.test")], now: 1_000)
        schedule.record("a.test", Self.notFound, now: 1_000)
        var state = try #require(schedule.states["a.test"])
        #expect(state.state == .missing && state.since == 1_000 && state.failureReason != nil)
        // Not current: asked again within a quarter interval.
        #expect(schedule.next(now: 1_000 + 1_350).host == "a.test")
        schedule.record("a.test", Self.notFound, now: 1_900)
        #expect(schedule.states["a.test"]?.since == 1_000, "the same state keeps its since")
        schedule.record("a.test", Self.copy(Self.v1), now: 2_800)
        state = try #require(schedule.states["a.test"])
        #expect(state.state == .current && state.since == 2_800)
        // The served file changes at 3,000: stale since then, without asking the CDN.
        let version = schedule.version
        schedule.reconcile([Self.target("a.test", digest: Self.v2, changedAt: 3_000)], now: 3_005)
        state = try #require(schedule.states["a.test"])
        #expect(state.state == .stale && state.since == 3_000 && state.checkedAt == 2_800)
        #expect(schedule.version != version)
        #expect(schedule.next(now: 3_005 + 900).host == "a.test", "a stale copy is asked again within a quarter interval")
        schedule.record("a.test", Self.copy(Self.v2), now: 4_000)
        state = try #require(schedule.states["a.test"])
        #expect(state.state == .current && state.since == 4_000)
        // Changed back to what the CDN holds: current again at once.
        schedule.reconcile([Self.target("a.test", digest: Self.v1, changedAt: 4_100)], now: 4_100)
        #expect(schedule.states["a.test"]?.state == .stale)
        schedule.reconcile([Self.target("a.test", digest: Self.v2, changedAt: 4_200)], now: 4_200)
        #expect(schedule.states["a.test"]?.state == .current)
    }

    @Test("an error keeps no copy: a change of the served file leaves it an error until the CDN is asked")
    func errorKeepsNoCopy() {
        var schedule = CDNWatchSchedule(interval: 3_600)
        schedule.reconcile([Self.target("a.test")], now: 0)
        schedule.record("a.test", Self.copy(Self.v1), now: 0)
        schedule.record("a.test", Self.unreachable, now: 900)
        #expect(schedule.states["a.test"]?.state == .error)
        #expect(schedule.states["a.test"]?.error == "timeout")
        schedule.reconcile([Self.target("a.test", digest: Self.v2)], now: 1_000)
        #expect(schedule.states["a.test"]?.state == .error)
        schedule.record("a.test", CDNObservation(status: 503, error: "the CDN answered 503"), now: 1_100)
        #expect(schedule.states["a.test"]?.state == .error && schedule.states["a.test"]?.since == 900)
    }

    @Test("a look that changes nothing but its time does not move the version; gone hosts are forgotten")
    func versionAndForgetting() {
        var schedule = CDNWatchSchedule(interval: 60)
        schedule.reconcile([Self.target("a.test"), Self.target("b.test")], now: 0)
        schedule.record("a.test", Self.copy(Self.v1), now: 0)
        let version = schedule.version
        schedule.record("a.test", Self.copy(Self.v1), now: 60)
        #expect(schedule.version == version)
        #expect(schedule.states["a.test"]?.checkedAt == 60)
        schedule.reconcile([Self.target("b.test")], now: 61)
        #expect(schedule.states["a.test"] == nil && schedule.count == 1)
        #expect(schedule.version != version)
    }

    @Test("a site shows its worst host, the longest in that state among equals; a host that moves follows its site")
    func bySite() {
        var schedule = CDNWatchSchedule(interval: 60)
        schedule.reconcile(
            ["a.test", "www.a.test", "m.a.test"].map { Self.target($0, "a.test") } + [Self.target("b.test", "b.test")], now: 0)
        schedule.record("a.test", Self.copy(Self.v1), now: 0)
        schedule.record("www.a.test", Self.copy(Self.v2), now: 5)
        schedule.record("m.a.test", Self.copy(Self.v2), now: 3)
        schedule.record("b.test", Self.notFound, now: 0)
        let sites = schedule.bySite()
        #expect(sites["a.test"]?.host == "m.a.test", "stale beats current; the longer stale wins")
        #expect(sites["b.test"]?.state == .missing)
        schedule.reconcile(
            ["a.test", "www.a.test", "m.a.test"].map { Self.target($0, "a.test") } + [Self.target("b.test", "a.test")], now: 10)
        #expect(schedule.bySite()["a.test"]?.host == "b.test")
        #expect(schedule.bySite()["b.test"] == nil)
    }

    @Test("a 429 pauses every host: a minute, doubling while 429s go on, at most an hour; another answer ends it")
    func throttled() {
        var schedule = CDNWatchSchedule(interval: 60)
        schedule.reconcile([Self.target("a.test"), Self.target("b.test")], now: 0)
        let tooMany = CDNObservation(status: 429, error: "the API answered 429")
        schedule.record("a.test", tooMany, now: 0)
        #expect(schedule.states["a.test"] == nil, "a 429 is no news about the host")
        // b.test is due, but nothing is asked for the first pause.
        #expect(schedule.next(now: CDNWatchSchedule.firstPause - 1).host == nil)
        #expect(schedule.next(now: CDNWatchSchedule.firstPause).host != nil)
        var now = CDNWatchSchedule.firstPause
        var pauses: [Int64] = []
        for _ in 0..<8 {
            schedule.record("b.test", tooMany, now: now)
            pauses.append(schedule.pausedUntil - now)
            now = schedule.pausedUntil
        }
        #expect(pauses == [120, 240, 480, 960, 1_920, 3_600, 3_600, 3_600])
        schedule.record("b.test", CDNObservation(status: 404), now: now)
        schedule.record("a.test", tooMany, now: now)
        #expect(schedule.pausedUntil - now == CDNWatchSchedule.firstPause, "an answer other than 429 starts the pauses over")
    }

    @Test("a 429 keeps the host's state and makes it due when the pause ends, not a quarter interval later")
    func throttledKeepsState() throws {
        var schedule = CDNWatchSchedule(interval: 3_600)
        schedule.reconcile([Self.target("a.test")], now: 0)
        schedule.record("a.test", Self.copy(Self.v1), now: 0)
        let before = try #require(schedule.states["a.test"])
        #expect(before.state == .current)
        let version = schedule.version
        let now: Int64 = 5_000
        schedule.record("a.test", CDNObservation(status: 429, error: "quota"), now: now)
        #expect(schedule.states["a.test"] == before, "state, since and error as they were")
        #expect(schedule.version == version)
        #expect(schedule.next(now: now + CDNWatchSchedule.firstPause - 1).host == nil)
        #expect(schedule.next(now: now + CDNWatchSchedule.firstPause).host == "a.test", "due when the pause ends")
    }

    @Test("failures in a row (not reached, 5xx) pause the service as a 429 does; fewer, or another answer between, do not")
    func failuresPause() {
        var schedule = CDNWatchSchedule(interval: 60)
        let hosts = (0..<10).map { "h\($0).test" }
        schedule.reconcile(hosts.map { Self.target($0) }, now: 0)
        let unreachable = CDNObservation(status: nil, error: "connect timed out")
        let failing = CDNObservation(status: 503)
        // N - 1 failures, an answer, N - 1 failures: no pause.
        for host in hosts.prefix(CDNWatchSchedule.failuresBeforePause - 1) { schedule.record(host, unreachable, now: 0) }
        schedule.record("h8.test", CDNObservation(status: 404), now: 0)
        for host in hosts.prefix(CDNWatchSchedule.failuresBeforePause - 1) { schedule.record(host, failing, now: 0) }
        #expect(schedule.pausedUntil == 0)
        #expect(schedule.states["h0.test"]?.state == .error, "a failure is still the host's state")
        // The Nth in a row pauses, doubling while failures go on.
        schedule.record("h9.test", unreachable, now: 0)
        #expect(schedule.pausedUntil == CDNWatchSchedule.firstPause)
        #expect(schedule.next(now: CDNWatchSchedule.firstPause - 1).host == nil)
        schedule.record("h9.test", failing, now: CDNWatchSchedule.firstPause)
        #expect(schedule.pausedUntil == CDNWatchSchedule.firstPause * 3)
        schedule.record("h9.test", Self.copy(Self.v1), now: CDNWatchSchedule.firstPause * 3)
        schedule.record("h0.test", failing, now: CDNWatchSchedule.firstPause * 3)
        #expect(schedule.pausedUntil == CDNWatchSchedule.firstPause * 3, "an answer starts the count over")
    }

    @Test("Google's answers in the schedule's terms: no app listed is missing, a refused 200 an error, the served apps current")
    func googleStates() {
        let apps: Set<AndroidApp> = [AndroidApp(packageName: "com.example", fingerprint: "AA")]
        let digest = DALListing.digest(apps)
        #expect(CDNObservation(status: 200, digest: digest).state(against: digest) == .current)
        #expect(CDNObservation(status: 200, digest: DALListing.digest([])).state(against: digest) == .stale)
        #expect(CDNObservation(status: 200, listsNothing: true).state(against: digest) == .missing)
        #expect(CDNObservation(status: 200, error: "not JSON", refused: true).state(against: digest) == .error)
        #expect(CDNObservation(status: 429, error: "quota", refused: true).isThrottled)
    }
}
