import TestSupport
import Testing

@testable import SiteStore

/// Replays the ownership fuzzing corpus and saved failures (scripts/fuzz.sh ownership) through the
/// fuzz target's own checks (`HostOwnershipFuzz.check`, Fuzz/FuzzOwnership.swift): a name held by
/// at most one site, a directory name by its own site, no change to one site moving a host
/// another serves, and incremental decisions equal to fresh ones and to a restart's.
@Suite("Ownership fuzz corpus replay")
struct OwnershipFuzzReplayTests {
    /// One corpus input in this many is replayed in the normal test run: the whole corpus
    /// (about 1,500 programs) is 100 s of CPU in a debug build, a sixth of what CI's two cores
    /// have for every test (docs/reliability.md, "CI time"); the same inputs through the -O
    /// libFuzzer build cost more still (145 s, its sanitizers and coverage counters).
    /// scripts/fuzz-replay.sh replays all of them, and every campaign (scripts/fuzz.sh
    /// ownership) runs the whole corpus through these checks before it fuzzes.
    static let sampleStride = 8

    @Test("a day's share of the corpus (every input with AASAD_FUZZ_REPLAY=full) keeps the rule's invariants")
    func corpus() async throws {
        let corpus = FuzzCorpus.inputs("ownership-corpus")
        #expect(corpus.count >= 7)
        let (inputs, share) = FuzzCorpus.sample(corpus, stride: Self.sampleStride)
        // A share holds about one input in eight; half that would mean the hash lumps them.
        #expect(inputs.count * Self.sampleStride * 2 >= corpus.count)
        print(
            "ownership corpus: \(inputs.count) of \(corpus.count) inputs, share \(share) of \(Self.sampleStride)"
                + " (AASAD_FUZZ_REPLAY_OFFSET=\(share) replays it again)")
        // On a thread of its own, so that the other tests of its process keep both of the pool's
        // threads meanwhile (TestSupport/OwnThread.swift).
        let results = try await onOwnThread { inputs.map { ($0.name, HostOwnershipFuzz.check($0.bytes)) } }
        for (name, failure) in results {
            #expect(failure == nil, "\(name) (share \(share): AASAD_FUZZ_REPLAY_OFFSET=\(share))")
        }
    }

    @Test("every saved failure keeps them too: a tenant's aliases on others' names and the order a restart must keep")
    func failures() {
        for input in FuzzCorpus.failCases("ownership-fail-cases") {
            #expect(HostOwnershipFuzz.check(input.bytes) == nil, "\(input.name)")
        }
    }
}
