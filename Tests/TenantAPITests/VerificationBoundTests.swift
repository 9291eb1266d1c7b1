import Foundation
import Logging
import Synchronization
import TestSupport
import Testing

@testable import TenantAPI

/// The checker's bounds, each at N and N+1.
@Suite(.serialized) struct VerificationBoundTests {
    @Test func anAnswerOfTheBoundIsReadAndOneByteMoreIsTooLarge() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let store = try VerificationStore(configDirectory: directory.path)
        try store.create("a.localhost", now: 0)
        let record = try #require(store.record("a.localhost"))
        var configuration = VerificationChecker.Configuration(allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        for (length, outcome) in [
            (VerificationChecker.maximumAnswerBytes, VerificationCheckerTests.notTheAnswer),
            (VerificationChecker.maximumAnswerBytes + 1, "the answer is too large"),
        ] {
            let server = try StandInServer(mode: "fixed", body: String(repeating: "A", count: length))
            configuration.port = server.port
            let checker = VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { _ in }
            #expect(checker.check(record) == .failed(outcome), "\(length)")
        }
    }

    @Test func aPassChecksAtMostItsBoundOfDueNamesOldestFirst() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let store = try VerificationStore(configDirectory: directory.path)
        let count = VerificationChecker.maximumChecksPerPass + 1
        for i in 0..<count { try store.create("n\(i).localhost", now: Double(i)) }
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        var configuration = VerificationChecker.Configuration(port: nobody.port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        let checker = VerificationChecker(store: store, configuration: configuration, logger: Logger(label: "test")) { _ in }
        checker.pass(now: Double(count))
        let checked = store.all().filter { $0.attempts == 1 }.map(\.name)
        #expect(checked.count == VerificationChecker.maximumChecksPerPass)
        // The newest due name waits for the next pass.
        #expect(!checked.contains("n\(count - 1).localhost"))
    }

    /// A check the lookup slots could not take (other names' lookups hold them all: a zone
    /// whose DNS never answers) is no attempt of this name: its back-off does not grow, and it
    /// is due again soon, whatever another tenant's names do.
    @Test func aCheckTheResolverWasTooBusyForIsNoAttempt() {
        let record = VerificationRecord(
            name: "a.example", token: "t", verified: false, attempts: 5, lastCheck: nil, lastError: nil, nextCheck: 0)
        let busy = VerificationChecker.recorded(.notAttempted(VerificationChecker.resolverBusy.reason), in: record, now: 1_000)
        #expect(busy.attempts == 5 && !busy.verified)
        #expect(busy.nextCheck == 1_000 + VerificationChecker.notAttemptedRetry)
        let failed = VerificationChecker.recorded(.failed("no answer"), in: record, now: 1_000)
        #expect(failed.attempts == 6)
        #expect(failed.nextCheck >= 1_000 + VerificationChecker.backoff(attempts: 6) * 0.8)
    }

    /// A DNS server that never answers holds getaddrinfo for its own timeouts: the check waits
    /// the checker's timeout only, and the lookups left running are bounded (at N a lookup
    /// still starts, at N+1 it is refused at once).
    @Test func aLookupThatNeverEndsIsBoundedInTimeAndInThreads() throws {
        let release = DispatchSemaphore(value: 0)
        let started = Atomic<Int>(0)
        let stuck: @Sendable (String) -> Result<[String], VerificationChecker.Failure> = { _ in
            started.add(1, ordering: .relaxed)
            release.wait()
            return .success(["127.0.0.1"])
        }
        defer { for _ in 0..<VerificationChecker.maximumPendingLookups { release.signal() } }
        // Slots of this test's own: the other suites' checks resolve names meanwhile.
        let slots = VerificationChecker.LookupSlots()
        let clock = ContinuousClock()
        for n in 1...VerificationChecker.maximumPendingLookups {
            let began = clock.now
            let outcome = VerificationChecker.resolve("a.example", timeoutMilliseconds: 100, slots: slots, lookup: stuck)
            #expect(outcome == .failure(.init("the name's lookup took longer than the timeout")), "\(n)")
            #expect(clock.now - began < .seconds(2), "\(n)")
        }
        #expect(started.load(ordering: .relaxed) == VerificationChecker.maximumPendingLookups)
        let outcome = VerificationChecker.resolve("a.example", timeoutMilliseconds: 100, slots: slots, lookup: stuck)
        #expect(outcome == .failure(.init("the resolver is busy with earlier lookups")))
        #expect(started.load(ordering: .relaxed) == VerificationChecker.maximumPendingLookups)
        // Once the lookups end, a lookup runs again.
        for _ in 0..<VerificationChecker.maximumPendingLookups { release.signal() }
        #expect(
            eventually {
                VerificationChecker.resolve("a.example", timeoutMilliseconds: 1_000, slots: slots) { _ in .success(["127.0.0.1"]) }
                    == .success(["127.0.0.1"])
            })
    }

    @Test func aFailureHereDoesNotUndoAnotherReplicasVerification() throws {
        let directory = try TemporaryDirectory(prefix: "verify")
        let mine = try VerificationStore(configDirectory: directory.path)
        try mine.create("a.localhost", now: 0)
        let record = try #require(mine.record("a.localhost"))
        // Another replica on the same directory verifies it; this one has not read that yet.
        let other = try VerificationStore(configDirectory: directory.path)
        var verified = record
        verified.verified = true
        try other.write(verified)
        #expect(mine.record("a.localhost")?.verified == false)
        let nobody = ReservedPort()
        defer { withExtendedLifetime(nobody) {} }
        var configuration = VerificationChecker.Configuration(port: nobody.port, allowsPrivateAddresses: true)
        configuration.timeoutMilliseconds = 1_000
        VerificationChecker(store: mine, configuration: configuration, logger: Logger(label: "test")) { _ in }.checkAndRecord(record)
        mine.refresh()
        #expect(mine.record("a.localhost")?.verified == true)
    }
}
