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
    func corpus() {
        let inputs = FuzzCorpus.inputs("ownership-corpus")
        #expect(inputs.count >= 7)
        for input in inputs {
            #expect(HostOwnershipFuzz.check(input.bytes) == nil, "\(input.name)")
        }
    }

    @Test("every saved failure keeps them too: a tenant's aliases on others' names and the order a restart must keep")
    func failures() {
        for input in FuzzCorpus.failCases("ownership-fail-cases") {
            #expect(HostOwnershipFuzz.check(input.bytes) == nil, "\(input.name)")
        }
    }
}
