import HTTPCore
import TestSupport
import Testing

@testable import Served

/// A served file keeps no head of its own: its responses' heads are composed when answering from
/// shared parts, its content and its Last-Modified (docs/architecture.md, "Prepared responses").
/// They must be, byte for byte, the heads each file once kept (`ReferenceHeads`).
@Suite("Composed heads: byte for byte the heads each file once kept")
struct ComposedHeadTests {
    static let options: [ServingOptions] = {
        var page = ServingOptions(cacheControl: "public, max-age=31536000, immutable")
        page.contentType = ServingOptions.html
        page.varyUserAgent = true
        var varied = ServingOptions(cacheControl: "no-cache")
        varied.varyUserAgent = true
        return [ServingOptions(), ServingOptions(cacheControl: "no-store, max-age=0"), page, varied]
    }()

    static let bodies: [[UInt8]] = {
        var generator = SplitMix64(seed: 7)
        let noise = (0..<4_096).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
        return [[], Array("{}".utf8), PreparedFileTests.json(255), PreparedFileTests.json(256), PreparedFileTests.json(3_000), noise]
    }()

    /// Every head of `file` written as HTTP/1.1 lines, against the reference.
    static func compare(_ file: PreparedFile, _ options: ServingOptions) -> [String] {
        let reference = ReferenceHeads.File(
            contentType: options.contentType, cacheControl: options.cacheControl, varyUserAgent: options.varyUserAgent,
            length: file.body.count, etag: file.etag, lastModified: file.lastModified)
        var cases: [(String, FileHead, [(name: String, value: String)])] = [
            ("200", file.head(.ok), ReferenceHeads.fields(reference)),
            ("304", file.head(.notModified), ReferenceHeads.fields(reference, notModified: true)),
        ]
        if let gzip = file.gzipNow() {
            let form = (length: gzip.body.count, etag: gzip.etag)
            cases.append(("gzip 200", file.head(.ok, gzip: gzip), ReferenceHeads.fields(reference, gzip: form)))
            cases.append(("gzip 304", file.head(.notModified, gzip: gzip), ReferenceHeads.fields(reference, gzip: form, notModified: true)))
        }
        var failures: [String] = []
        for (name, head, expected) in cases {
            var out: [UInt8] = []
            head.writeHTTP1(into: &out)
            let want = ReferenceHeads.http1(expected)
            if out != want {
                failures.append("\(name) at \(file.lastModified): \(String(decoding: out, as: UTF8.self).debugDescription)")
            }
            // The lists made for tests and diagnostics are the same too.
            if head.prepared.http1 != want { failures.append("\(name) at \(file.lastModified): its prepared list differs") }
        }
        return failures
    }

    @Test("200, 304 and the gzip form's, for every option, size and time (before 1970, past 9999, beyond gmtime)")
    func sameBytes() throws {
        var failures: [String] = []
        for options in Self.options {
            for body in Self.bodies {
                let content = PreparedContent(body: body)
                for time in ReferenceHeads.times {
                    failures += Self.compare(try PreparedFile(content: content, modified: time, options: options), options)
                }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
    }

    @Test("the file's own lists (tests, tools) and options read back as they were")
    func listsAndOptions() throws {
        for options in Self.options {
            let file = try PreparedFile(body: PreparedFileTests.json(2_000), modified: 1_700_000_000, options: options)
            #expect(file.options == options)
            let reference = ReferenceHeads.File(
                contentType: options.contentType, cacheControl: options.cacheControl, varyUserAgent: options.varyUserAgent,
                length: file.body.count, etag: file.etag, lastModified: 1_700_000_000)
            #expect(file.headers == PreparedFields(ReferenceHeads.fields(reference)))
            #expect(file.notModifiedHeaders == PreparedFields(ReferenceHeads.fields(reference, notModified: true)))
        }
    }

    @Test("files with the same options share one set of parts; a site holds only references and its time")
    func sharedParts() throws {
        let a = try PreparedFile(body: PreparedFileTests.json(2_000), modified: 1, options: ServingOptions())
        let b = try PreparedFile(body: PreparedFileTests.json(3_000), modified: 2, options: ServingOptions())
        let small = try PreparedFile(body: Array("{}".utf8), modified: 3, options: ServingOptions())
        let other = try PreparedFile(body: PreparedFileTests.json(2_000), modified: 1, options: ServingOptions(cacheControl: "no-cache"))
        #expect(a.parts === b.parts)
        #expect(a.parts !== small.parts, "a file too small to compress does not vary by Accept-Encoding")
        #expect(a.parts !== other.parts)
    }

    /// A tenant who changes its Cache-Control again and again must leave no trail of parts.
    @Test("parts no file uses any more are dropped from the table")
    func partsDropped() throws {
        for i in 0..<1_000 {
            _ = try PreparedFile(body: Array("{}".utf8), modified: 0, options: ServingOptions(cacheControl: "max-age=\(i)"))
        }
        #expect(SharedHeadParts.count < 200)
    }

    @Test("a value that could split a head makes no file")
    func refused() {
        for value in ["max-age=1\r\nX-Injected: 1", "a\nb", "a\rb", "\u{0}", ""] {
            #expect(throws: PreparedFile.InvalidField.self) {
                try PreparedFile(body: [], modified: 0, options: ServingOptions(cacheControl: value))
            }
        }
    }

    /// Options are checked once per value, when their parts are made: a refused value makes no
    /// parts, so it is refused again every time, for a file of either size, while good parts live.
    @Test("a refused value is refused every time and leaves no parts")
    func refusedEveryTime() throws {
        let kept = try PreparedFile(body: PreparedFileTests.json(3_000), modified: 0, options: ServingOptions())
        let bad = ServingOptions(cacheControl: "max-age=1\r\nSet-Cookie: a=b")
        for body in [Array("{}".utf8), PreparedFileTests.json(3_000), Array("{}".utf8)] {
            #expect(throws: PreparedFile.InvalidField.self) { try PreparedFile(body: body, modified: 0, options: bad) }
        }
        let again = try PreparedFile(body: PreparedFileTests.json(2_000), modified: 0, options: ServingOptions())
        #expect(again.parts === kept.parts)
    }

    /// Swift's strings are equal by canonical equivalence: U+037E (Greek question mark) equals
    /// `;`. A value equal to one whose parts are alive, but of other bytes, is still checked.
    @Test("a value equal to a checked one but of other bytes is checked, not given its parts")
    func equivalentValueChecked() throws {
        let plain = try PreparedFile(body: [], modified: 0, options: ServingOptions(cacheControl: "max-age=300;"))
        let equivalent = ServingOptions(cacheControl: "max-age=300\u{037E}")
        #expect(equivalent == ServingOptions(cacheControl: "max-age=300;"))
        #expect(throws: PreparedFile.InvalidField.self) { try PreparedFile(body: [], modified: 0, options: equivalent) }
        #expect(plain.parts.cacheControl == "max-age=300;")
    }
}
