import TestSupport
import Testing

@testable import ACME

/// Replays the ACME fuzzing corpus and saved failures (scripts/fuzz.sh acme) through the same
/// checks as Fuzz/FuzzACME.swift: every input parses within its bounds or fails with an
/// ACMEError, never a trap.
@Suite("ACME fuzz corpus replay")
struct ACMEFuzzReplayTests {
    @Test("the corpus is present and every input passes the fuzz target's checks")
    func corpus() {
        let inputs = FuzzCorpus.inputs("acme-corpus")
        #expect(inputs.count >= 8)
        for input in inputs { ACMEFuzz.check(input.bytes) }
    }

    @Test("the seeds parse as what they are")
    func seeds() throws {
        func seed(_ name: String) throws -> [UInt8] { try #require(FuzzCorpus.inputs("acme-corpus").first { $0.name == name }?.bytes) }
        #expect(try ACMEDirectory(body: seed("seed-directory.json")).renewalInfo?.text == "https://ca.test/ari")
        #expect(try ACMEOrder(body: seed("seed-order.json")).identifiers.map(\.value) == ["a.test", "*.b.test"])
        #expect(try ACMEAuthorization(body: seed("seed-authorization.json")).challenges.count == 2)
        #expect(try CertificateChain(pem: seed("seed-chain.pem")).certificates.count == 2)
    }

    /// The record seeds are what the storage code writes (after the marker byte that sends them
    /// to `ACMEFuzz.records`), so the corpus starts from real files.
    @Test("the record seeds are files the replicas write, and reach the records' parsers")
    func recordSeeds() throws {
        let inputs = FuzzCorpus.inputs("acme-corpus")
        func record(_ name: String) throws -> [UInt8] {
            let bytes = try #require(inputs.first { $0.name == name }?.bytes)
            try #require(bytes.first == ACMEFuzz.recordMarker)
            return Array(bytes.dropFirst())
        }
        let failure = BackoffRecord(failedAt: 1_800_000_000, failures: 3, nextAttempt: 1_800_000_240)
        #expect(try record("seed-record-backoff") == Array(failure.text.utf8))
        let ahead = BackoffRecord(failedAt: 1_800_086_400, failures: 1, nextAttempt: 1_800_086_460)
        #expect(try record("seed-record-backoff-ahead") == Array(ahead.text.utf8))
        #expect(BackoffRecord.effectiveNextAttempt(ahead, now: 1_800_000_000) == nil)
        #expect(try record("seed-record-demand") == Array(DemandRecord.text(1_800_000_000).utf8))
        let child = ChildRecord(approvedUntil: 1_800_086_400, lastSeen: 1_800_000_000)
        #expect(try record("seed-record-child") == Array(child.text.utf8))
        // The replay (`corpus`) sends these through the records' branch.
        #expect(inputs.filter { $0.bytes.first == ACMEFuzz.recordMarker }.count >= 4)
    }

    @Test("every saved failure is refused or bounded, never a trap")
    func failures() {
        let inputs = FuzzCorpus.failCases("acme-fail-cases")
        for input in inputs { ACMEFuzz.check(input.bytes) }
        let retry = inputs.first { $0.name == "retry-after-overflow" }
        var headers = ACMEHeaders()
        _ = headers.add(line: retry?.bytes ?? [])
        #expect(headers.retryAfter(now: 0) == ACMELimits.maximumRetryAfterSeconds)
        let token = inputs.first { $0.name == "token-path-traversal.json" }
        #expect(throws: ACMEError.self) { try ACMEChallenge(body: token?.bytes ?? []) }
    }
}
