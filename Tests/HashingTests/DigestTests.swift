import Testing

@testable import Hashing

@Suite("Digest.sha256: the one one-shot SHA-256")
struct DigestTests {
    private func hex(_ bytes: [UInt8]) -> String { bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() }

    @Test(
        "FIPS 180-4 example vectors, at the boundaries of one block (55, 56 and 64 bytes of padding's edge)",
        arguments: [
            ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
            ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            (
                "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
            ),
        ])
    func vectors(input: String, expected: String) {
        #expect(hex(Digest.sha256(Array(input.utf8))) == expected)
        #expect(hex(Digest.sha256(input.utf8)) == expected)
    }

    @Test("a collection without contiguous storage hashes as its bytes copied do, one byte and a megabyte long")
    func nonContiguous() {
        for count in [0, 1, 55, 56, 64, 1 << 20] {
            let lazy = (0..<count).lazy.map { UInt8(truncatingIfNeeded: $0 &* 31) }
            #expect(Digest.sha256(lazy) == Digest.sha256(Array(lazy)), "\(count)")
        }
        #expect(Digest.sha256([0]) != Digest.sha256([]))
    }

    @Test("the digest is always sha256Length bytes")
    func length() {
        #expect(Digest.sha256Length == 32)
        #expect(Digest.sha256(Array(repeating: 0xFF, count: 3)).count == Digest.sha256Length)
    }
}
