import Foundation
import HTTPCore
import Hashing
import Logging
import Reactor
import Testing

@testable import SiteStore

private let good = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
/// Valid JSON that the AASA validator refuses (an app ID without a team).
private let refused = #"{"applinks": {"details": [{"appIDs": ["com.example.app"], "components": [{"/": "/a/*"}]}]}}"#

private func digest(_ text: String) -> String { Hex.string(Digest.sha256(Array(text.utf8))) }

private func registry(_ c: TempConfig, file: (path: String, identity: String)?) -> SiteRegistry {
    SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }), knownValidFile: file)
}

@Suite("Verdicts of validated contents, kept across starts")
struct KnownValidTests {
    @Test("a full load writes the verdicts of the served contents, and the next load trusts them")
    func roundTrip() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/b.test/apple-app-site-association", refused)
        let file = (path: c.root + "/validated-contents", identity: "binary-1")
        let first = registry(c, file: file)
        first.reloadAll()
        let stored = KnownValid.load(path: file.path, identity: "binary-1")
        // Only what is served is kept: the refused file's content is validated again next time.
        #expect(stored.keys == ["a" + digest(good)])
        #expect(first.snapshot.site(forHost: "b.test") == nil)
        // The same binary trusts the file; another binary starts from nothing.
        #expect(KnownValid.load(path: file.path, identity: "binary-2").count == 0)
    }

    @Test("a load looks verdicts up by content and kind, never by name or time")
    func byContent() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", refused)
        try c.write("sites/b.test/assetlinks.json", "[]")
        let path = c.root + "/validated-contents"
        // A verdict recorded for these exact bytes is trusted: the file is served unvalidated.
        // (It proves the lookup skips validation; the file is the server's own memory.)
        var forged = KnownValid()
        forged.insert(.aasa, digestHex: digest(refused))
        try forged.store(path: path, identity: "x")
        let trusting = registry(c, file: (path, "x"))
        #expect(trusting.reloadAll().site(forHost: "a.test")?.aasa != nil)
        // The same digest under another kind proves nothing about an assetlinks.json.
        var otherKind = KnownValid()
        otherKind.insert(.assetLinks, digestHex: digest(refused))
        try otherKind.store(path: path, identity: "y")
        #expect(registry(c, file: (path, "y")).reloadAll().site(forHost: "a.test") == nil)
        // Without the file, the same bytes are validated and refused.
        #expect(registry(c, file: nil).reloadAll().site(forHost: "a.test") == nil)
    }

    @Test("a certificate pair that passed its check is not checked again at the next start; a new pair is")
    func certificates() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/tls/cert.pem", "chain")
        try c.write("sites/a.test/tls/key.pem", "key")
        let file = (path: c.root + "/validated-contents", identity: "x")
        final class Counter: @unchecked Sendable { var checks = 0 }
        let counter = Counter()
        func registry() -> SiteRegistry {
            SiteRegistry(
                root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                checkCertificate: { _ in
                    counter.checks += 1
                    return nil
                }, knownValidFile: file)
        }
        #expect(registry().reloadAll().site(forHost: "a.test")?.certificate != nil)
        #expect(counter.checks == 1)
        #expect(registry().reloadAll().site(forHost: "a.test")?.certificate != nil)
        #expect(counter.checks == 1, "the same pair was checked again")
        try c.write("sites/a.test/tls/key.pem", "another key")
        #expect(registry().reloadAll().site(forHost: "a.test")?.certificate?.keyPEM == Array("another key".utf8))
        #expect(counter.checks == 2)
    }

    @Test("a damaged, foreign or oversized file is ignored, never trusted in part")
    func damaged() throws {
        let c = try TempConfig()
        let path = c.root + "/validated-contents"
        let header = KnownValid.header(identity: "x")
        let key = "a" + digest(good)
        let cases = [
            header + key,  // no final newline: a torn write
            header + key + "\n" + "a" + String(repeating: "g", count: 64) + "\n",  // not hex
            header + key + "\n" + "z" + digest(good) + "\n",  // unknown kind
            header + key + "0\n",  // too long
            header + String(key.dropLast()) + "\n" + key + "\n" + "a",  // a short line, the length of whole ones
            "aasad validated-contents 2 x\n" + key + "\n",  // another format
            "",
        ]
        for text in cases {
            try c.write("validated-contents", text)
            #expect(KnownValid.load(path: path, identity: "x").count == 0, "\(text.prefix(60))")
        }
        try c.write("validated-contents", header + key + "\n")
        #expect(KnownValid.load(path: path, identity: "x").keys == [key])
        #expect(KnownValid.load(path: c.root + "/missing", identity: "x").count == 0)
    }

    @Test("a file out of order or with a key twice is read whole, sorted; every key is found, read or added")
    func unordered() throws {
        let c = try TempConfig()
        let path = c.root + "/validated-contents"
        let digests = (0..<40).map { digest("content \($0)") }
        let lines = digests.map { "a" + $0 } + digests.prefix(5).map { "c" + $0 } + ["a" + digests[3]]
        try c.write("validated-contents", KnownValid.header(identity: "x") + lines.reversed().map { $0 + "\n" }.joined())
        var known = KnownValid.load(path: path, identity: "x")
        #expect(known.count == 45)
        #expect(known.sortedKeys == known.sortedKeys.sorted() && Set(known.sortedKeys).count == 45)
        for hex in digests { #expect(known.contains(.aasa, digestHex: hex)) }
        #expect(known.contains(.certificate, digestHex: digests[4]))
        #expect(!known.contains(.certificate, digestHex: digests[5]), "a verdict of another kind")
        #expect(!known.contains(.aasa, digestHex: digest("new")))
        known.insert(.aasa, digestHex: digest("new"))
        known.insert(.aasa, digestHex: digests[0])
        #expect(known.contains(.aasa, digestHex: digest("new")) && known.count == 46)
        try known.store(path: path, identity: "x")
        let again = KnownValid.load(path: path, identity: "x")
        #expect(again.sorted == known.sortedKeys && again.count == 46)
    }

    @Test(
        "keys repeated side by side in a sorted file are kept once; the served keys, repeated, are held in an array their distinct count's size"
    )
    func repeatsKeptOnce() throws {
        let digests = (0..<3).map { digest("content \($0)") }.sorted()
        let lines = ["a" + digests[0], "a" + digests[0], "a" + digests[1], "a" + digests[2], "a" + digests[2], "a" + digests[2]]
        let known = KnownValid.parse(Array((KnownValid.header(identity: "x") + lines.map { $0 + "\n" }.joined()).utf8), identity: "x")
        #expect(known.sortedKeys.map(\.text) == digests.map { "a" + $0 })
        #expect(known.count == 3)
        // 100,000 sites serving one file remember 100,000 equal keys: one is kept, in a small array.
        let key = try #require(KnownValid.Key(.aasa, digestHex: Array(digests[0].utf8)))
        let remembered = KnownValid(keys: Array(repeating: key, count: 100_000))
        #expect(remembered.count == 1 && remembered.sorted.capacity < 16)
    }

    @Test("a key read from a string's storage is the key of its UTF-8 bytes, for any string")
    func keyFromString() {
        let hex = digest("x")
        let cases = [
            hex, hex.uppercased(), String(hex.dropLast()), hex + "0", String(repeating: "é", count: 64),
            String(repeating: "é", count: 32), String(hex.dropLast()) + "\u{FFFD}", "", String(hex.dropFirst(0)),
            String(Substring(hex + "00").dropLast(2)),
        ]
        for text in cases {
            #expect(KnownValid.Key(.aasa, hex: text) == KnownValid.Key(.aasa, digestHex: Array(text.utf8)), "\(text)")
        }
        #expect(KnownValid.Key(.aasa, hex: hex) != nil && KnownValid.Key(.aasa, hex: hex.uppercased()) == nil)
    }

    @Test("a key from a hash's 32 bytes is the key of its hex digits; another length is none; a file's verdict is found by it")
    func keyFromBytes() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(
                bytes.withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) } == KnownValid.Key(.aasa, hex: Hex.string(bytes)), "\(bytes)")
            #expect(
                bytes.withUnsafeBytes { KnownValid.Key(.assetLinks, sha256: $0) }
                    != bytes.withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) })
        }
        // Each byte in its place: a lone byte set anywhere gives the key of its hex.
        for position in 0..<32 {
            var bytes = [UInt8](repeating: 0, count: 32)
            bytes[position] = 0x5A
            #expect(
                bytes.withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) } == KnownValid.Key(.aasa, hex: Hex.string(bytes)),
                "byte \(position)")
        }
        #expect([UInt8](repeating: 1, count: 31).withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) } == nil)
        #expect([UInt8](repeating: 1, count: 33).withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) } == nil)
        #expect([UInt8]().withUnsafeBytes { KnownValid.Key(.aasa, sha256: $0) } == nil)
        let hash = Digest.sha256(Array(good.utf8))
        let known = KnownValid.parse(Array((KnownValid.header(identity: "x") + "a" + Hex.string(hash) + "\n").utf8), identity: "x")
        #expect(known.contains(.aasa, sha256: hash))
        #expect(!known.contains(.assetLinks, sha256: hash))
        #expect(!known.contains(.aasa, sha256: Digest.sha256(Array(refused.utf8))))
    }

    @Test("every stored key is found in its bucket, at a bucket's edges and the array's ends; a neighbour or another kind is not")
    func bucketsFindEveryKey() {
        var generator = SystemRandomNumberGenerator()
        let kinds: [KnownValid.Kind] = [.aasa, .certificate, .assetLinks]
        /// 32 bytes whose first word is `first` (big-endian, as a key reads them), the rest random.
        func hash(first: UInt64) -> [UInt8] {
            withUnsafeBytes(of: first.bigEndian) { Array($0) } + (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        // Random first words, and those at the edges of buckets: a bucket's first and last word,
        // the lowest and highest of all.
        let width = UInt64(64 - KnownValid.bucketBits)
        var firsts = (0..<3_000).map { _ in UInt64.random(in: 0...UInt64.max, using: &generator) }
        for bucket in [0, 1, 7, 4_094, 4_095] as [UInt64] {
            firsts += [bucket << width, bucket << width | (1 << width - 1)]
            // Several keys in one bucket, of each kind (the kind follows the index below).
            firsts += (0..<30).map { _ in bucket << width | UInt64.random(in: 0..<(1 << width), using: &generator) }
        }
        var stored: [(KnownValid.Kind, [UInt8])] = []
        var absent: [(KnownValid.Kind, [UInt8])] = []
        for (index, first) in firsts.enumerated() {
            let bytes = hash(first: first)
            let kind = kinds[index % 3]
            stored.append((kind, bytes))
            // Another kind, and the same hash with its last byte changed: never stored.
            absent.append((kinds[(index + 1) % 3], bytes))
            var neighbour = bytes
            neighbour[31] ^= 1
            absent.append((kind, neighbour))
        }
        let keys = stored.compactMap { kind, bytes in bytes.withUnsafeBytes { KnownValid.Key(kind, sha256: $0) } }
        let known = KnownValid(keys: keys.shuffled())
        #expect(known.count == keys.count)
        for (kind, bytes) in stored { #expect(known.contains(kind, sha256: bytes), "\(kind) \(Hex.string(bytes))") }
        for (kind, bytes) in absent { #expect(!known.contains(kind, sha256: bytes), "\(kind) \(Hex.string(bytes))") }
        // Read from its file, the same.
        let read = KnownValid.parse(known.fileBytes(identity: "x"), identity: "x")
        #expect(stored.allSatisfy { read.contains($0.0, sha256: $0.1) })
        #expect(!absent.contains { read.contains($0.0, sha256: $0.1) })
        // None stored: nothing found.
        #expect(!KnownValid().contains(.aasa, sha256: stored[0].1))
    }

    @Test("a state directory that cannot be written costs the next start time, not this one's sites")
    func unwritable() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = registry(c, file: (path: c.root + "/no-such-directory/validated-contents", identity: "x"))
        #expect(r.reloadAll().site(forHost: "a.test")?.aasa != nil)
        #expect(r.preparer.validity.writeFailed)
    }

    @Test("a reporting registry validates every file and keeps every finding")
    func reporting() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = SiteRegistry.inspecting(root: c.root)
        r.reloadAll()
        #expect(r.preparer.validity.known == nil)
        #expect(r.source(of: "a.test")?.aasa?.validatedEarlier == false)
        #expect(r.source(of: "a.test")?.aasa?.result.document != nil)
    }
}
