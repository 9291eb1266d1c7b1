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

    /// Every `stride`-th of `inputs` (the first, then one in `stride`, in name order), or all of
    /// them when `AASAD_FUZZ_REPLAY=full` (scripts/fuzz-replay.sh): for a corpus whose full replay
    /// costs minutes of CPU in a debug build, which CI's time cannot carry on two cores
    /// (docs/reliability.md, "CI time"). The sample is the same every run, so a failure in it
    /// reproduces; the saved failures are always replayed whole.
    package static func sample(_ inputs: [Input], stride: Int) -> [Input] {
        if ProcessInfo.processInfo.environment["AASAD_FUZZ_REPLAY"] == "full" || stride <= 1 { return inputs }
        return inputs.indices.filter { $0 % stride == 0 }.map { inputs[$0] }
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
