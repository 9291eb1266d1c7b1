import TestSupport
import Testing

@testable import SiteStore

/// Replays the ownership fuzzing corpus and saved failures (scripts/fuzz.sh ownership) through the
/// fuzz target's own checks (`HostOwnershipFuzz.check`, Fuzz/FuzzOwnership.swift): a name held by
/// at most one site, a directory name by its own site, no change to one site moving a host
/// another serves, and incremental decisions equal to fresh ones and to a restart's.
@Suite("Ownership fuzz corpus replay")
struct OwnershipFuzzReplayTests {
    @Test("every corpus input keeps the rule's invariants")
    func corpus() async throws {
        let inputs = FuzzCorpus.inputs("ownership-corpus")
        #expect(inputs.count >= 7)
        // About 1,500 programs, nearly two minutes of CPU in a debug build: on a thread of its own,
        // so that the other tests of its process keep both of the pool's threads meanwhile.
        let results = try await onOwnThread { inputs.map { ($0.name, HostOwnershipFuzz.check($0.bytes)) } }
        for (name, failure) in results {
            #expect(failure == nil, "\(name)")
        }
    }

    @Test("every saved failure keeps them too: a tenant's aliases on others' names and the order a restart must keep")
    func failures() {
        for input in FuzzCorpus.failCases("ownership-fail-cases") {
            #expect(HostOwnershipFuzz.check(input.bytes) == nil, "\(input.name)")
        }
    }
}
