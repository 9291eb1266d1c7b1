import TestSupport
import Testing

@testable import SiteStore

/// Replays the verdicts fuzzing corpus and saved failures (scripts/fuzz.sh verdicts) through the
/// fuzz target's own checks (`KnownValidFuzz.check`, Fuzz/FuzzVerdicts.swift): a damaged file
/// ignored whole, the keys of a well-formed one exactly its lines, sorted, each once and found, and
/// written back as read.
@Suite("Verdicts fuzz corpus replay")
struct VerdictsFuzzReplayTests {
    /// Every input of `inputs`, at least `least` of them, through the checks.
    static func replay(_ inputs: [FuzzCorpus.Input], least: Int) {
        #expect(inputs.count >= least)
        for input in inputs {
            #expect(KnownValidFuzz.check(input.bytes) == nil, "\(input.name)")
        }
    }

    @Test("every corpus input keeps the file's invariants")
    func corpus() { Self.replay(FuzzCorpus.inputs("verdicts-corpus"), least: 9) }

    @Test("every saved failure keeps them too: repeated keys side by side, a short line padded by a long one")
    func failures() { Self.replay(FuzzCorpus.failCases("verdicts-fail-cases"), least: 2) }
}
