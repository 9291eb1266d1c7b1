import Foundation
import TestSupport
import Testing

@testable import AASA

/// Replays the fuzzing corpus and every saved failure (Fuzz/, written by scripts/fuzz.sh) through
/// the same steps as the fuzz target, so a fixed crash stays fixed in the normal test run.
@Suite("Fuzz corpus replay")
struct FuzzReplayTests {
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
        let shown = TerminalText.escaped(utf8: bytes)
        #expect(!shown.unicodeScalars.contains(where: TerminalText.isEscaped))
        #expect(TerminalText.escaped(shown) == shown)
        if let text = String(validating: bytes, as: UTF8.self) { #expect(TerminalText.escaped(text) == shown) }
    }

    @Test("the corpus is present")
    func corpusPresent() {
        #expect(FuzzCorpus.inputs("corpus").count > 100)
    }

    @Test("every corpus input runs through parser, validators and matcher")
    func replayCorpus() throws {
        for input in FuzzCorpus.inputs("corpus") {
            try Self.exercise(input.bytes)
        }
    }

    /// Fuzz/fail-cases holds the input on which the ten-million-input campaign stopped (libFuzzer's
    /// 10 s timeout on a starved machine; docs/reliability.md) and the nesting bound at N+1.
    @Test("every saved failure stays fixed")
    func replayFailures() throws {
        for input in FuzzCorpus.failCases("fail-cases") {
            try Self.exercise(input.bytes)
            if input.name.hasPrefix("bound-json-depth") { #expect(!AppSiteAssociation.validate(input.bytes).isValid, "\(input.name)") }
        }
    }
}
