package import Foundation
package import Testing

/// The fuzzing corpora and saved failures under `Fuzz/` (written by scripts/fuzz.sh), for the
/// replay tests that run every input through its fuzz target's checks in the normal test run.
package enum FuzzCorpus {
    /// The repository's root (this file is Tests/TestSupport/FuzzCorpus.swift).
    package static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// `Fuzz/` in the repository.
    package static let directory = repositoryRoot.appendingPathComponent("Fuzz")

    /// One input: its file name and its bytes.
    package struct Input: Sendable {
        package var name: String
        package var bytes: [UInt8]
    }

    /// Every input in `Fuzz/<folder>`, sorted by name; hidden files (`.keep`) are not inputs.
    package static func inputs(_ folder: String) -> [Input] {
        let dir = directory.appendingPathComponent(folder)
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.compactMap { name in
            (try? Data(contentsOf: dir.appendingPathComponent(name))).map { Input(name: name, bytes: [UInt8]($0)) }
        }
    }

    /// One share of `inputs` in `stride`, or all of them when `AASAD_FUZZ_REPLAY=full`
    /// (scripts/fuzz-replay.sh): for a corpus whose full replay costs minutes of CPU in a debug
    /// build, which CI's time cannot carry on two cores (docs/reliability.md, "CI time").
    ///
    /// An input's share is a hash of its file name (libFuzzer names an input by its content's
    /// SHA-1), so it stays in the same share as the corpus grows. Which share runs changes each
    /// day (the day number modulo `stride`), so every input is replayed within `stride` days of
    /// CI runs; `AASAD_FUZZ_REPLAY_OFFSET` picks one, and `share` says which ran, so a failure
    /// reproduces. The saved failures are always replayed whole.
    package static func sample(_ inputs: [Input], stride: Int) -> (inputs: [Input], share: Int) {
        let environment = ProcessInfo.processInfo.environment
        if environment["AASAD_FUZZ_REPLAY"] == "full" || stride <= 1 { return (inputs, 0) }
        let today = Int(Date().timeIntervalSince1970 / 86_400)
        let share = environment["AASAD_FUZZ_REPLAY_OFFSET"].flatMap { Int($0) }.map { (($0 % stride) + stride) % stride } ?? today % stride
        return (inputs.filter { Int(shareHash($0.name) % UInt64(stride)) == share }, share)
    }

    /// FNV-1a over the name's bytes: stable across runs and machines, unlike `Hasher`.
    static func shareHash(_ name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// The saved failures of a target (`Fuzz/<target>-fail-cases`, or `Fuzz/fail-cases` for the
    /// AASA target). Records an issue when there are none: a replay of an empty folder proves
    /// nothing, and every folder is seeded with the inputs of the defects its target guards.
    package static func failCases(_ folder: String, sourceLocation: SourceLocation = #_sourceLocation) -> [Input] {
        let inputs = inputs(folder)
        if inputs.isEmpty { Issue.record("Fuzz/\(folder) has no saved failures to replay", sourceLocation: sourceLocation) }
        return inputs
    }
}
