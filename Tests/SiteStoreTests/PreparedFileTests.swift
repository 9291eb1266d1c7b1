import AASA
import Foundation
import HTTPCore
import Hashing
import Synchronization
import TestSupport
import Testing

@testable import SiteStore

/// The gzip form is made after the first request that accepts it, on the background queue: not at
/// load (a start at 100,000 sites spent a fifth of its time compressing) and never on a
/// serving thread (a crafted file took over a second to compress).
@Suite("Prepared files: the gzip form made in the background after first use")
struct PreparedFileTests {
    /// Polls `file.gzip` until the background queue has made it (bounded: 10 s).
    static func waitForGzip(_ file: PreparedFile) -> PreparedFile.GzipForm? {
        var form: PreparedFile.GzipForm?
        _ = eventually(attempts: 1_000, interval: 0.01) {
            form = file.gzip
            return form != nil
        }
        return form
    }

    static func json(_ size: Int) -> [UInt8] {
        let entry = #"{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/path/*"}]},"#
        var text = #"{"applinks":{"details":["#
        while text.utf8.count + entry.utf8.count + 4 <= size { text += entry }
        text.removeLast()
        return Array((text + "]}}").utf8)
    }

    @Test("a file of 256 bytes or more varies by Accept-Encoding; its gzip form decompresses to it and is made once")
    func gzipMadeOnce() throws {
        let body = Self.json(2_000)
        let file = try PreparedFile(body: body, modified: 1_700_000_000, options: ServingOptions())
        #expect(file.headers.value(of: "Vary") == "Accept-Encoding")
        #expect(file.notModifiedHeaders.value(of: "Vary") == "Accept-Encoding")
        #expect(file.gzip == nil, "the first request is answered as it is: compressing is queued, not done on its thread")
        let form = try #require(Self.waitForGzip(file))
        #expect(Gzip.decompress(form.body) == body)
        #expect(form.body.count < body.count)
        #expect(form.headers.value(of: "Content-Length") == "\(form.body.count)")
        #expect(form.headers.value(of: "Content-Encoding") == "gzip")
        #expect(form.etag == file.content.gzipETag && form.etag != file.etag)
        #expect(form.notModifiedHeaders.value(of: "ETag") == form.etag)
        #expect(form.notModifiedHeaders.value(of: "Content-Length") == nil)
        #expect(file.gzip === form, "kept, not made again")
    }

    /// A prepared file lives as long as its site: its field lists hold exactly their bytes (an
    /// array grown by appending keeps up to twice them, a kilobyte a site at 100,000 sites).
    @Test("field lists are sized exactly")
    func exactCapacity() throws {
        let file = try PreparedFile(body: Self.json(2_000), modified: 1_700_000_000, options: ServingOptions())
        let gzip = try #require(file.gzipNow())
        for fields in [file.headers, file.notModifiedHeaders, gzip.headers, gzip.notModifiedHeaders] {
            // malloc rounds a block up to its next size class (16 bytes), and may hand out a
            // free block up to its minimum chunk (32 bytes) larger rather than split it: far
            // from the doubling of an array grown by appending.
            #expect(fields.http1.capacity < fields.http1.count + 48)
            #expect(fields.http2Bytes.capacity < fields.http2Bytes.count + 48)
            #expect(fields.http2Spans.capacity <= fields.http2Spans.count + 1)
        }
    }

    @Test("a small file is never offered compressed and does not vary")
    func smallFile() throws {
        let body = Self.json(200)
        #expect(body.count < PreparedContent.minimumCompressedSize)
        let file = try PreparedFile(body: body, modified: 1_700_000_000, options: ServingOptions())
        #expect(file.gzip == nil)
        #expect(file.gzipNow() == nil)
        #expect(file.headers.value(of: "Vary") == nil)
    }

    @Test("a file gzip does not make smaller is served as it is to every client (Vary stays: decided at load)")
    func incompressible() throws {
        var generator = SystemRandomNumberGenerator()
        let body = (0..<4_096).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let file = try PreparedFile(body: body, modified: 1_700_000_000, options: ServingOptions())
        #expect(file.gzipNow() == nil)
        #expect(file.content.gzipIfMade != nil, "made: there is no smaller form")
        #expect(file.gzip == nil, "the answer is kept too")
        #expect(file.headers.value(of: "Vary") == "Accept-Encoding")
    }

    @Test("threads racing for the first gzip form get none or the same bytes, and the file is compressed once")
    func racingFirstUse() throws {
        let body = Self.json(60_000)
        for _ in 0..<20 {
            let file = try PreparedFile(body: body, modified: 1_700_000_000, options: ServingOptions())
            let seen = Mutex<[[UInt8]]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                if let form = file.gzip { seen.withLock { $0.append(form.body) } }
            }
            let made = try #require(Self.waitForGzip(file))
            #expect(Gzip.decompress(made.body) == body)
            #expect(seen.withLock { $0 }.allSatisfy { $0 == made.body })
            #expect(file.gzip === made)
        }
    }

    @Test("files that share a content share its gzip body")
    func sharedContent() throws {
        let content = PreparedContent(body: Self.json(3_000))
        let a = try PreparedFile(content: content, modified: 1_700_000_000, options: ServingOptions())
        let b = try PreparedFile(content: content, modified: 1_700_000_100, options: ServingOptions(cacheControl: "max-age=60"))
        let first = try #require(a.gzipNow()?.body)
        let second = try #require(b.gzip?.body, "the content is compressed already: b's form is made on its first request")
        #expect(first == second)
        #expect(a.gzip?.headers.value(of: "Last-Modified") != b.gzip?.headers.value(of: "Last-Modified"))
        #expect(b.gzip?.headers.value(of: "Cache-Control") == "max-age=60")
    }
}

@Suite("Content cache")
struct ContentCacheTests {
    @Test("a prepared form that does not hold the file's bytes is not served; the file's own bytes are")
    func preparedOfOtherBytes() throws {
        let bytes = PreparedFileTests.json(1_000)
        var file = SiteFile<Int>(
            relativePath: "sites/a.test/apple-app-site-association", bytes: bytes, modified: 1_700_000_000,
            result: ValidationResult(document: 1, diagnostics: []))
        file.prepared = try PreparedFile(body: Array("{}".utf8), modified: 1_700_000_000, options: ServingOptions())
        var cache = ContentCache()
        let served = try #require(try cache.prepare(file, modified: 1_700_000_000, options: ServingOptions()))
        #expect(served.body == bytes)
        #expect(served.content.digest == Hex.string(Digest.sha256(bytes)))
        // The read's own form is taken as it is.
        file.prepared = try PreparedFile(body: bytes, modified: 1_700_000_000, options: ServingOptions())
        let ready = try #require(try cache.prepare(file, modified: 1_700_000_000, options: ServingOptions()))
        #expect(ready.body == bytes)
    }
}

@Suite("Content cache: a read takes a content held already")
struct SharedContentReadTests {
    /// The address of an array's storage, to tell a shared buffer from a copy of the same bytes.
    static func storage(_ bytes: [UInt8]) -> UnsafeRawPointer? { bytes.withUnsafeBytes { $0.baseAddress } }

    @Test("a site file whose bytes the cache holds takes that content and its buffer, read again or validated")
    func readTakesHeldContent() throws {
        let bytes = PreparedFileTests.json(2_000)
        let directory = try TemporaryDirectory()
        try directory.write("sites/b.test/apple-app-site-association", bytes)
        var cache = ContentCache()
        let first = SiteFile<Int>(
            relativePath: "sites/a.test/apple-app-site-association", bytes: bytes, modified: 1_700_000_000,
            result: ValidationResult(document: 1, diagnostics: []))
        let held = try #require(try cache.prepare(first, modified: 1_700_000_000, options: ServingOptions())).content
        // An empty verdict list validates the file; one that knows it does not: both take the content.
        for known in [KnownValid(), KnownValid(keys: [KnownValid.Key(.aasa, digestHex: Array(held.digest.utf8))!])] {
            let site = ConfigLoader.loadSite(
                host: try HostName(parsing: "b.test"), directory: directory.path("sites/b.test"), relative: "sites/b.test", known: known,
                options: ServingOptions(), shared: cache)
            let file = try #require(site.aasa)
            #expect(file.isValid)
            let prepared = try #require(file.prepared)
            #expect(prepared.content === held)
            #expect(Self.storage(file.bytes) == Self.storage(held.body), "the read's own buffer was let go")
            // The registry's cache then serves that very file, one more use of the content.
            let served = try #require(try cache.prepare(file, modified: file.modified, options: ServingOptions()))
            #expect(served === prepared)
        }
        // Without the cache, the read keeps its own bytes and makes its own content.
        let alone = ConfigLoader.loadSite(
            host: try HostName(parsing: "b.test"), directory: directory.path("sites/b.test"), relative: "sites/b.test", known: KnownValid(),
            options: ServingOptions())
        let own = try #require(alone.aasa?.prepared)
        #expect(own.content !== held)
        #expect(own.body == bytes)
    }

    @Test("only the same bytes are taken: a content is never handed out for other bytes under its digest")
    func otherBytesUnderTheDigest() throws {
        let bytes = PreparedFileTests.json(2_000)
        var cache = ContentCache()
        let file = SiteFile<Int>(
            relativePath: "sites/a.test/apple-app-site-association", bytes: bytes, modified: 1_700_000_000,
            result: ValidationResult(document: 1, diagnostics: []))
        let held = try #require(try cache.prepare(file, modified: 1_700_000_000, options: ServingOptions())).content
        #expect(cache.content(digest: held.digest, bytes: bytes) === held)
        var other = bytes
        other[other.count - 2] = UInt8(ascii: "]")
        #expect(cache.content(digest: held.digest, bytes: other) == nil)
        #expect(cache.content(digest: Hex.string(Digest.sha256(other)), bytes: other) == nil)
    }
}

@Suite("Content cache: the reads of one batch share what they prepare")
struct BatchContentReadTests {
    /// The sites of a batch read on every core (`ConfigLoader.examine`), as a full load reads them.
    static func examine(_ directory: TemporaryDirectory, _ names: [String]) -> [String: SiteSource] {
        let entries = ConfigLoader.examine(
            names, sitesPath: directory.path("sites"), records: [:], known: KnownValid(), check: { _ in nil },
            options: ServingOptions(), shared: ContentCache())
        var sources: [String: SiteSource] = [:]
        for (name, entry) in zip(names, entries) { if case .site(let source) = entry { sources[name] = source } }
        return sources
    }

    @Test("sites with the same bytes read in one batch take one content and one buffer; other bytes, or another kind, never")
    func oneContentPerBytes() throws {
        let common = PreparedFileTests.json(2_000)
        var nearly = common
        // The same length, one byte apart, and still valid: the last path pattern's `*` is an `x`.
        nearly[try #require(nearly.lastIndex(of: UInt8(ascii: "*")))] = UInt8(ascii: "x")
        let own = PreparedFileTests.json(1_500)
        let directory = try TemporaryDirectory()
        // More sites than `ConfigLoader.parallelThreshold`: the reads race on two threads or more.
        var names: [String] = []
        for i in 0..<200 {
            let name = "s\(i).test"
            names.append(name)
            try directory.write("sites/\(name)/apple-app-site-association", i % 50 == 7 ? own : common)
        }
        try directory.write("sites/nearly.test/apple-app-site-association", nearly)
        // The same bytes as another site's association file, as an assetlinks.json: not valid as
        // one, whatever the batch holds.
        try directory.write("sites/kinds.test/apple-app-site-association", own)
        try directory.write("sites/kinds.test/assetlinks.json", common)
        names += ["nearly.test", "kinds.test"]
        let sources = Self.examine(directory, names)
        #expect(sources.count == names.count)
        let first = try #require(sources["s0.test"]?.aasa?.prepared?.content)
        let firstOwn = try #require(sources["s7.test"]?.aasa?.prepared?.content)
        for i in 0..<200 {
            let file = try #require(sources["s\(i).test"]?.aasa)
            let expected = i % 50 == 7 ? firstOwn : first
            #expect(file.prepared?.content === expected, "s\(i).test: one content for the same bytes")
            #expect(
                SharedContentReadTests.storage(file.bytes) == SharedContentReadTests.storage(expected.body),
                "s\(i).test: the read's own buffer was let go")
        }
        #expect(first.body == common && firstOwn.body == own)
        let other = try #require(sources["nearly.test"]?.aasa?.prepared)
        #expect(other.content !== first)
        #expect(other.body == nearly)
        let kinds = try #require(sources["kinds.test"])
        #expect(kinds.aasa?.prepared?.content === firstOwn)
        #expect(kinds.assetLinks?.isValid == false)
        #expect(kinds.assetLinks?.prepared == nil)
    }

    @Test("a batch keeps a content only for its own bytes: a content under another's digest is neither given nor replaced")
    func keepsOnlyTheSameBytes() {
        let batch = BatchContents()
        let a = PreparedContent(body: PreparedFileTests.json(1_000))
        #expect(batch.keep(a) === a)
        #expect(batch.keep(PreparedContent(body: PreparedFileTests.json(1_000))) === a)
        var cache = ContentCache()
        cache.batch = batch
        #expect(cache.content(digest: a.digest, bytes: a.body) === a)
        var other = a.body
        other[other.count - 2] = UInt8(ascii: "]")
        #expect(cache.content(digest: a.digest, bytes: other) == nil)
        // Other bytes claiming `a`'s digest (a hash given by the caller): kept apart, `a` stays.
        let forged = PreparedContent(body: other, sha256: Digest.sha256(a.body))
        #expect(forged.digest == a.digest)
        #expect(batch.keep(forged) === forged)
        #expect(cache.content(digest: a.digest, bytes: a.body) === a)
        #expect(cache.content(digest: a.digest, bytes: other) == nil)
        #expect(batch.count == 1)
    }
}
