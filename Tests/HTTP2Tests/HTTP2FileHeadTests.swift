import HTTPCore
import TestSupport
import Testing

@testable import HTTP2

/// A served file's head is composed into nghttp2's field list per response (`FileHead`,
/// `HTTP2Session.respond`): the parts' values uncopied while the response's entry keeps them, the
/// values written per response copied. Decoded as a client would, it must be the list each file
/// once kept (`ReferenceHeads`), with or without a body, among other responses on one session.
@Suite("HTTP/2 heads composed for served files")
struct HTTP2FileHeadTests {
    /// The reference file and the head composed for it (`gzip`: its gzip form, 100 bytes).
    static func head(_ file: ReferenceHeads.File, gzip: Bool, notModified: Bool, parts: FileHeadParts? = nil) -> (
        FileHead, [String]
    ) {
        let varied = (file.length >= 256 ? ["Accept-Encoding"] : []) + (file.varyUserAgent ? ["User-Agent"] : [])
        let parts =
            parts
            ?? FileHeadParts(
                contentType: file.contentType, cacheControl: file.cacheControl, vary: varied.isEmpty ? nil : varied.joined(separator: ", "))
        let gzipForm = gzip ? (length: 100, etag: String(file.etag.dropLast()) + "-gz\"") : nil
        let head = FileHead(
            parts: parts, form: notModified ? .notModified : gzip ? .gzip : .ok, contentLength: gzipForm?.length ?? file.length,
            etag: gzipForm?.etag ?? file.etag, lastModified: file.lastModified)
        return (head, ReferenceHeads.http2(ReferenceHeads.fields(file, gzip: gzipForm, notModified: notModified)))
    }

    static let files: [ReferenceHeads.File] = ReferenceHeads.times.flatMap { time in
        [
            ReferenceHeads.File(length: 2, etag: "\"0123456789abcdef0123456789abcdef\"", lastModified: time),
            ReferenceHeads.File(
                contentType: "text/html; charset=utf-8", cacheControl: "public, max-age=31536000, immutable", varyUserAgent: true,
                length: 70_000, etag: "\"fedcba9876543210fedcba9876543210\"", lastModified: time),
        ]
    }

    @Test("200, gzip 200 and 304, with a body, as HEAD and as 304 (copied), at every awkward time")
    func sameFields() {
        var failures: [String] = []
        for file in Self.files {
            let cases = [(false, false, true), (true, false, true), (false, false, false), (false, true, false), (true, true, false)]
            let (session, requests) = HTTP2UncopiedResponseTests.session(streams: (0..<Int32(cases.count)).map { 2 * $0 + 1 })
            var expected: [Int32: [String]] = [:]
            for (request, (gzip, notModified, sendsBody)) in zip(requests, cases) {
                let (head, fields) = Self.head(file, gzip: gzip, notModified: notModified)
                expected[request.stream] = [":status: \(notModified ? 304 : 200)", "date: d"] + fields
                session.respond(
                    stream: request.stream, status: notModified ? .notModified : .ok, head: .file(head), date: Array("d".utf8),
                    body: [1, 2, 3], sendsBody: sendsBody)
            }
            let answers = HTTP2UncopiedResponseTests.answers(HTTP2UncopiedResponseTests.produce(session, limit: 1 << 20))
            for (stream, fields) in expected {
                let got = answers[stream]?.fields.map { "\($0.name): \($0.value)" } ?? []
                if got != fields { failures.append("\(file.lastModified) stream \(stream): \(got)") }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
    }

    @Test("prepared fields, a file's head, the same prepared fields, another file: each response has its own list")
    func mixedOnOneSession() {
        let (session, requests) = HTTP2UncopiedResponseTests.session(streams: [1, 3, 5, 7, 9])
        let prepared = PreparedFields([("Content-Length", "0"), ("Cache-Control", "no-store")])
        let a = Self.head(ReferenceHeads.File(length: 300, etag: "\"a\"", lastModified: 1_700_000_000), gzip: false, notModified: false)
        let b = Self.head(ReferenceHeads.File(length: 3, etag: "\"b\"", lastModified: 1_700_000_001), gzip: false, notModified: false)
        let heads: [ResponseHead] = [.prepared(prepared), .file(a.0), .prepared(prepared), .file(b.0), .file(a.0)]
        for (request, head) in zip(requests, heads) {
            session.respond(stream: request.stream, status: .ok, head: head, date: [], body: [7], sendsBody: true)
        }
        let answers = HTTP2UncopiedResponseTests.answers(HTTP2UncopiedResponseTests.produce(session, limit: 1 << 20))
        let lists = [["content-length: 0", "cache-control: no-store"], a.1, ["content-length: 0", "cache-control: no-store"], b.1, a.1]
        for (stream, list) in zip([Int32(1), 3, 5, 7, 9], lists) {
            #expect(answers[stream]?.fields.map { "\($0.name): \($0.value)" } == [":status: 200"] + list, "stream \(stream)")
        }
    }

    @Test("heads of the same parts one after another (the list kept): each response has its own length, ETag and date")
    func samePartsAgain() {
        let (session, requests) = HTTP2UncopiedResponseTests.session(streams: [1, 3, 5, 7, 9, 11, 13])
        let first = ReferenceHeads.File(length: 300, etag: "\"first\"", lastModified: 1_700_000_000)
        let a = Self.head(first, gzip: false, notModified: false)
        let second = ReferenceHeads.File(length: 45_000, etag: "\"second-and-longer\"", lastModified: -5)
        let b = Self.head(second, gzip: false, notModified: false, parts: a.0.parts)
        let b304 = Self.head(second, gzip: false, notModified: true, parts: a.0.parts)
        let a304 = Self.head(first, gzip: false, notModified: true, parts: a.0.parts)
        // (head, expected fields, body sent, location)
        let plan: [(FileHead, [String], Bool, String?)] = [
            (a.0, a.1, true, nil), (b.0, b.1, true, nil), (b.0, b.1, true, "https://a.test/x"), (a.0, a.1, true, nil),
            (a.0, a.1, false, nil), (b304.0, b304.1, false, nil), (a304.0, a304.1, false, nil),
        ]
        for (request, (head, _, sendsBody, location)) in zip(requests, plan) {
            session.respond(
                stream: request.stream, status: head.form == .notModified ? .notModified : .ok, head: .file(head), date: [],
                location: location.map { Array($0.utf8) }, body: [7], sendsBody: sendsBody)
        }
        let answers = HTTP2UncopiedResponseTests.answers(HTTP2UncopiedResponseTests.produce(session, limit: 1 << 20))
        for (stream, (head, fields, _, location)) in zip([Int32(1), 3, 5, 7, 9, 11, 13], plan) {
            let status = head.form == .notModified ? "304" : "200"
            let expected = [":status: \(status)"] + fields + (location.map { ["location: \($0)"] } ?? [])
            #expect(answers[stream]?.fields.map { "\($0.name): \($0.value)" } == expected, "stream \(stream)")
        }
    }

    @Test("two files differing only in Last-Modified, alternately on two connections of one worker (one cache): each its own date")
    func alternatingTwinsOneWorker() {
        let parts = FileHeadParts(contentType: "application/json", cacheControl: "max-age=300", vary: "Accept-Encoding")
        let etag = "\"0123456789abcdef0123456789abcdef\""
        let files = [1_700_000_000, 1_700_000_001].map { ReferenceHeads.File(length: 300, etag: etag, lastModified: $0) }
        let sources = files.map { FileHeadSource(parts: parts, contentLength: 300, etag: etag, lastModified: $0.lastModified) }
        let streams: [Int32] = [1, 3, 5, 7]
        let connections = [HTTP2UncopiedResponseTests.session(streams: streams), HTTP2UncopiedResponseTests.session(streams: streams)]
        var heads = FileHeadCache()
        // (connection, file, 304): a on the first, b on the second, a again on the first, ...
        let plan = [(0, 0, false), (1, 1, false), (0, 0, false), (1, 1, true), (1, 0, false), (0, 1, false), (0, 1, true), (1, 0, true)]
        var expected: [[Int32: [String]]] = [[:], [:]]
        var next = [0, 0]
        for (connection, file, notModified) in plan {
            let (session, requests) = connections[connection]
            let stream = requests[next[connection]].stream
            next[connection] += 1
            let head = FileHead(source: sources[file], form: notModified ? .notModified : .ok)
            session.respond(
                stream: stream, status: notModified ? .notModified : .ok, head: .file(head), date: [], body: [7], sendsBody: !notModified,
                heads: &heads)
            expected[connection][stream] =
                [":status: \(notModified ? 304 : 200)"] + ReferenceHeads.http2(ReferenceHeads.fields(files[file], notModified: notModified))
        }
        for (index, (session, _)) in connections.enumerated() {
            let answers = HTTP2UncopiedResponseTests.answers(HTTP2UncopiedResponseTests.produce(session, limit: 1 << 20))
            for (stream, fields) in expected[index] {
                #expect(answers[stream]?.fields.map { "\($0.name): \($0.value)" } == fields, "connection \(index) stream \(stream)")
            }
        }
    }

    @Test("the shared parts a response points into stay alive until its frames are written")
    func partsOutliveTheCaller() {
        let (session, requests) = HTTP2UncopiedResponseTests.session(streams: [1, 3, 5])
        let file = ReferenceHeads.File(
            contentType: "application/x-watched", cacheControl: "max-age=12345", length: 50_000, etag: "\"w\"", lastModified: 86_400)
        weak var watched: FileHeadParts?
        var expected: [String] = []
        do {
            let (head, fields) = Self.head(file, gzip: false, notModified: false)
            watched = head.parts
            expected = fields
            session.respond(
                stream: requests[0].stream, status: .ok, head: .file(head), date: [], body: Array(repeating: 1, count: 50_000),
                sendsBody: true)
        }
        // A response of other fields before anything is written: the session's own list lets go
        // of the parts, so only the first response's entry can keep them alive now.
        session.respond(stream: requests[1].stream, status: .ok, fields: .none, date: [], body: [2], sendsBody: true)
        #expect(watched != nil, "the parts were freed before nghttp2 encoded the fields pointing into them")
        let clobber = (0..<64).map { _ in [UInt8](repeating: 0x58, count: 64) }
        let answers = HTTP2UncopiedResponseTests.answers(HTTP2UncopiedResponseTests.produce(session, limit: 700))
        _ = clobber
        #expect(answers[1]?.fields.dropFirst().map { "\($0.name): \($0.value)" } == expected)
        #expect(answers[1]?.body.count == 50_000)
        // Once its frames are written, no one holds them: neither the finished response nor
        // the session (its list was dropped for the other response's fields).
        session.respond(stream: requests[2].stream, status: .ok, fields: .none, date: [], body: [1], sendsBody: true)
        _ = HTTP2UncopiedResponseTests.produce(session, limit: 1 << 20)
        #expect(watched == nil, "the session holds a finished response's parts")
    }
}
