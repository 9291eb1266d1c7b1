import Foundation
import TestSupport
import Testing

@testable import TLS

/// Replays the PEM fuzzing corpus and saved failures (scripts/fuzz.sh pem) through TLSContext, as
/// Fuzz/FuzzPEM.swift does: every input loads or fails with a TLSError, never a crash.
@Suite("PEM fuzz corpus replay")
struct PEMFuzzReplayTests {
    /// The fuzz target's split: the chain, a NUL, the key; without a NUL the input is both.
    static func load(_ input: [UInt8]) -> Result<TLSContext, TLSError> {
        let nul = input.firstIndex(of: 0)
        let chain = Array(nul.map { input[..<$0] } ?? input[...])
        let key = Array(nul.map { input[($0 + 1)...] } ?? input[...])
        return Result { () throws(TLSError) in try TLSContext(chainPEM: chain, keyPEM: key, identity: "fuzz", source: "fuzz") }
    }

    @Test("the corpus is present: real chains and keys load, the rest fail with a TLSError that names the file")
    func corpus() {
        let inputs = FuzzCorpus.inputs("pem-corpus")
        #expect(inputs.count >= 8)
        for (name, input) in inputs.map({ ($0.name, $0.bytes) }) {
            switch Self.load(input) {
            case .success(let context):
                #expect(context.names.covers("a.fuzz.test") || !name.hasPrefix("ecdsa-chain"), "\(name)")
            case .failure(let error):
                #expect(error.file == "fuzz/cert.pem" || error.file == "fuzz/key.pem", "\(name): \(error)")
            }
        }
    }

    @Test(
        "the seeds load as expected: both key types, SEC1, PKCS#8 and traditional keys, with an intermediate",
        arguments: [
            "ecdsa-chain-pkcs8", "ecdsa-chain-sec1", "rsa-chain-pkcs8", "rsa-chain-traditional", "ecdsa-leaf-only", "combined-no-separator",
        ])
    func seedsLoad(_ name: String) throws {
        let input = try #require(FuzzCorpus.inputs("pem-corpus").first { $0.name == name }?.bytes)
        let context = try Self.load(input).get()
        #expect(context.names.dnsNames == ["fuzz.test", "*.fuzz.test"])
    }

    @Test("an encrypted key is refused with the advice to decrypt it, without asking for a passphrase")
    func encryptedKey() throws {
        let input = try #require(FuzzCorpus.inputs("pem-corpus").first { $0.name == "ecdsa-encrypted-key" }?.bytes)
        guard case .failure(let error) = Self.load(input) else {
            Issue.record("an encrypted key loaded")
            return
        }
        #expect(error.file == "fuzz/key.pem" && error.reason.contains("decrypt the key first"))
    }

    @Test("every saved failure fails with a TLSError, never a crash")
    func failures() {
        for (name, input) in FuzzCorpus.failCases("pem-fail-cases").map({ ($0.name, $0.bytes) }) {
            if case .success = Self.load(input) { Issue.record("\(name) loaded") }
        }
    }
}
