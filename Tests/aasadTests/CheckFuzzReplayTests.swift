import Check
import Foundation
import TestSupport
import Testing

/// Replays the `check` fuzzing corpus and saved failures (scripts/fuzz.sh check) through the same
/// checks as Fuzz/FuzzCheck.swift.
@Suite("check fuzz corpus replay")
struct CheckFuzzReplayTests {
    @Test("the corpus is present and every input passes the fuzz target's checks")
    func corpus() {
        let inputs = FuzzCorpus.inputs("check-corpus")
        #expect(inputs.count >= 4)
        for input in inputs { CheckFuzz.check(input.bytes) }
    }

    @Test("the seeds are what they say: a JSON body, entries")
    func seeds() throws {
        func seed(_ name: String) throws -> [UInt8] {
            Array(try #require(FuzzCorpus.inputs("check-corpus").first { $0.name == name }?.bytes).dropFirst())
        }
        #expect(JSONComparison.canonical(try seed("seed-json")) != nil)
        let entry = try Entitlements.parse(String(decoding: try seed("seed-entry"), as: UTF8.self)).get()
        #expect(entry.host == "example.com" && entry.modes == ["developer", "managed"])
        #expect(throws: Problem.self) { try Entitlements.parse(String(decoding: try seed("seed-entry-port"), as: UTF8.self)).get() }
    }

    @Test("every saved failure is refused or bounded, never a trap")
    func failures() {
        let inputs = FuzzCorpus.failCases("check-fail-cases")
        #expect(inputs.count >= 3)
        for input in inputs { CheckFuzz.check(input.bytes) }
        let deep = inputs.first { $0.name == "deep-nesting" }
        #expect(JSONComparison.canonical(Array(deep?.bytes.dropFirst() ?? [])) == nil, "refused by the parser's depth bound")
    }
}
