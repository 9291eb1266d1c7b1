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
