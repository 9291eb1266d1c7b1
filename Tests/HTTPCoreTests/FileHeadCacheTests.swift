import TestSupport
import Testing

@testable import HTTPCore

/// A worker keeps the last served file's head as written (`FileHeadCache`): a response of another
/// file must never get those bytes, however alike the two files are.
@Suite("The worker's cache of the last file head written")
struct FileHeadCacheTests {
    static let parts = FileHeadParts(contentType: "application/json", cacheControl: "max-age=3600", vary: "Accept-Encoding")

    /// Two files alike in everything but their Last-Modified: the same parts, length and ETag
    /// (the same content, written a second apart), as sites sharing a file are.
    static func twins(_ first: Int64, _ second: Int64) -> (FileHeadSource, FileHeadSource) {
        let etag = "\"0123456789abcdef0123456789abcdef\""
        return (
            FileHeadSource(parts: parts, contentLength: 300, etag: etag, lastModified: first),
            FileHeadSource(parts: parts, contentLength: 300, etag: etag, lastModified: second)
        )
    }

    static func uncached(_ head: FileHead) -> [UInt8] {
        var out: [UInt8] = []
        head.writeHTTP1(into: &out)
        return out
    }

    @Test("two files differing only in Last-Modified, served alternately: each its own date, every time")
    func alternatingTwins() {
        let (a, b) = Self.twins(1_700_000_000, 1_700_000_001)
        var cache = FileHeadCache()
        var out: [UInt8] = []
        let plan: [(FileHeadSource, FileHead.Form)] = [
            (a, .ok), (b, .ok), (a, .ok), (a, .ok), (b, .notModified), (b, .ok), (a, .notModified),
        ]
        for (source, form) in plan {
            let head = FileHead(source: source, form: form)
            let start = out.count
            cache.writeHTTP1(head, into: &out)
            let written = String(decoding: out[start...], as: UTF8.self)
            #expect(written == String(decoding: Self.uncached(head), as: UTF8.self))
            #expect(written.contains("\r\nLast-Modified: \(HTTPDate.format(source.lastModified))\r\n"), "\(written)")
        }
    }

    @Test("a file replaced by one of the same values but its date (a reload) gets the new date")
    func replaced() {
        var cache = FileHeadCache()
        var out: [UInt8] = []
        var lines: [String] = []
        for time in [Int64(86_400), 86_400, 172_800, 172_800, -1] {
            let (file, _) = Self.twins(time, 0)
            out.removeAll()
            cache.writeHTTP1(FileHead(source: file, form: .ok), into: &out)
            lines.append(
                String(decoding: out, as: UTF8.self).split(separator: "\r\n").first { $0.hasPrefix("Last-Modified") }.map(String.init) ?? ""
            )
        }
        #expect(lines == [Int64(86_400), 86_400, 172_800, 172_800, -1].map { "Last-Modified: \(ReferenceHeads.date($0))" })
    }

    @Test("forgotten, the cache holds neither file, and a file made where the last one was gets its own head")
    func forgotten() {
        var cache = FileHeadCache()
        var out: [UInt8] = []
        weak var held: FileHeadSource?
        do {
            let (file, _) = Self.twins(86_400, 0)
            held = file
            cache.writeHTTP1(FileHead(source: file, form: .ok), into: &out)
            cache.holdHTTP2Values(FileHead(source: file, form: .ok))
        }
        #expect(held != nil)
        cache.forget()
        #expect(held == nil)
        // The allocator likely gives the next file the freed one's address: it is still another key.
        for time in [Int64(172_800), 259_200] {
            let (file, _) = Self.twins(time, 0)
            out.removeAll()
            cache.writeHTTP1(FileHead(source: file, form: .ok), into: &out)
            #expect(out == Self.uncached(FileHead(source: file, form: .ok)))
            cache.forget()
        }
    }
}
