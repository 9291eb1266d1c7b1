import Foundation
import Testing

@testable import AASA

/// Replays the fuzzing corpus and every saved failure (Fuzz/, written by scripts/fuzz.sh) through
/// the same steps as the fuzz target, so a fixed crash stays fixed in the normal test run.
@Suite("Fuzz corpus replay")
struct FuzzReplayTests {
    static let fuzzDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ folder: String) -> [URL] {
        let dir = fuzzDirectory.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { dir.appendingPathComponent($0) }
    }

    /// What the fuzz target does with one input; any crash fails the test run.
    static func exercise(_ bytes: [UInt8]) throws {
        let result = AppSiteAssociation.validate(bytes)
        #expect(result.diagnostics.count <= DocumentDecoder.maximumDiagnostics + 1)
        #expect(result.isValid == (result.document != nil && result.diagnostics.isValid))
        if result.isValid, let document = result.document {
            let matcher = Matcher(document)
            for probe in ["https://e.com", "https://e.com/a/b/c?x=1&x=2&y#frag", "https://e.com/caf%C3%A9/%2F?q=a%20b#%41"] {
                _ = try? matcher.evaluate(try LinkURL(parsing: probe), budget: 2_000_000)
            }
        }
        _ = AssetLinks.validate(bytes)
        if let text = String(validating: bytes, as: UTF8.self) {
            _ = try? LinkURL(parsing: text)
            _ = Pattern(text)
        }
    }

    @Test("the corpus is present")
    func corpusPresent() {
        #expect(Self.inputs("corpus").count > 100)
    }

    @Test("every corpus input runs through parser, validators and matcher")
    func replayCorpus() throws {
        for url in Self.inputs("corpus") {
            try Self.exercise(Array(try Data(contentsOf: url)))
        }
    }

    @Test("every saved failure stays fixed")
    func replayFailures() throws {
        for url in Self.inputs("fail-cases") {
            try Self.exercise(Array(try Data(contentsOf: url)))
        }
    }
}
