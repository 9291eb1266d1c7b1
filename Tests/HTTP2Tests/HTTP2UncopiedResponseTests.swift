import CAASANghttp2
import HTTPCore
import Testing

@testable import HTTP2

/// A response's fields and body reach nghttp2 uncopied (NGHTTP2_NV_FLAG_NO_COPY_*,
/// NGHTTP2_DATA_FLAG_NO_COPY, `HTTP2Session.respond` and `sendBody`): what is sent must still be
/// the response, when the caller has let go of its fields before the frames are produced, when
/// the output's limit stops a body between frames, and when a stream ends mid-body.
@Suite("HTTP/2 responses handed to nghttp2 uncopied")
struct HTTP2UncopiedResponseTests {
    /// One stream's part of a server's output: its header block decoded, its DATA joined.
    struct Answer {
        var fields: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var ended = false
    }

    /// Splits `out` into frames (RFC 9113 §4.1) and decodes every HEADERS block with one HPACK
    /// decoder, in order, as a client would (RFC 7541 §2.2).
    static func answers(_ out: [UInt8]) -> [Int32: Answer] {
        var inflater: OpaquePointer?
        nghttp2_hd_inflate_new(&inflater)
        defer { nghttp2_hd_inflate_del(inflater) }
        var result: [Int32: Answer] = [:]
        var i = 0
        while i + 9 <= out.count {
            let length = Int(out[i]) << 16 | Int(out[i + 1]) << 8 | Int(out[i + 2])
            let type = out[i + 3]
            let flags = out[i + 4]
            let stream = Int32(bitPattern: out[(i + 5)..<(i + 9)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7FFF_FFFF)
            let payload = Array(out[(i + 9)..<min(out.count, i + 9 + length)])
            i += 9 + length
            if type == 0 {
                result[stream, default: Answer()].body += payload
                if flags & 1 != 0 { result[stream, default: Answer()].ended = true }
            } else if type == 1 {
                var rest = payload[...]
                while true {
                    var nv = nghttp2_nv()
                    var inflateFlags: Int32 = 0
                    let n = rest.withUnsafeBufferPointer {
                        nghttp2_hd_inflate_hd2(inflater, &nv, &inflateFlags, $0.baseAddress, $0.count, 1)
                    }
                    guard n >= 0 else { return [:] }
                    rest = rest.dropFirst(n)
                    if inflateFlags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                        let name = String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self)
                        let value = String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self)
                        result[stream, default: Answer()].fields.append((name, value))
                    }
                    if inflateFlags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                        nghttp2_hd_inflate_end_headers(inflater)
                        break
                    }
                    if n == 0 && rest.isEmpty { break }
                }
                if flags & 1 != 0 { result[stream, default: Answer()].ended = true }
            }
        }
        return result
    }

    /// A session that took the client's preface and GETs on `streams`, each ended.
    static func session(streams: [Int32]) -> (HTTP2Session, [HTTP2Request]) {
        let session = HTTP2Session()
        var bytes = ClientFrames.preface + ClientFrames.settings
        for stream in streams { bytes += ClientFrames.get(stream: stream) }
        #expect(SessionIO.receive(session, bytes))
        return (session, session.takeRequests())
    }

    /// Produces everything in steps of at most `limit` bytes of output each, as a worker whose
    /// socket takes a little at a time.
    static func produce(_ session: HTTP2Session, limit: Int) -> [UInt8] {
        var all: [UInt8] = []
        for _ in 0..<10_000 where session.wantsWrite {
            var out: [UInt8] = []
            session.produce(into: &out, limit: limit)
            all += out
        }
        return all
    }

    /// Field values of the size the allocator hands back right after they are freed.
    static func fields(_ tag: String) -> PreparedFields {
        PreparedFields([
            ("Content-Type", "application/\(tag)"), ("ETag", "\"\(tag)-0123456789\""), ("Cache-Control", "max-age=\(tag.count)"),
        ])
    }

    @Test("two responses whose fields only the session holds, each with a body of several frames, come out whole in small steps")
    func fieldsAndBodiesOutliveTheCaller() {
        let (session, requests) = Self.session(streams: [1, 3])
        #expect(requests.map(\.stream) == [1, 3])
        // Bodies past one frame (16,384 bytes); stream 1's past its window, and both together past
        // the connection's (65,535 each, RFC 9113 §6.9.2).
        let bodies: [Int32: [UInt8]] = [
            1: (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }, 3: Array(repeating: 0x42, count: 20_000),
        ]
        // Stream 1's fields, watched: nghttp2 points into their bytes until it has encoded the
        // HEADERS frame, so the session must keep the object alive (`HTTP2Session.Outgoing`).
        // Freed bytes often stay intact in glibc's heap, so the output alone could come out right
        // with them freed; the reference cannot. (Stream 3's are the last ones answered, which the
        // session's reused field list also holds.)
        weak var firstFields: PreparedFields?
        for request in requests {
            // The fields, the date and the body are made here and dropped at once: only the
            // session holds them when their frames are written.
            let fields = Self.fields(request.stream == 1 ? "json" : "pkcs7-mime")
            if request.stream == 1 { firstFields = fields }
            session.respond(
                stream: request.stream, status: .ok, fields: fields,
                date: Array("Fri, 27 Nov 2026 07:00:0\(request.stream) GMT".utf8), body: bodies[request.stream]!, sendsBody: true)
        }
        #expect(firstFields != nil, "stream 1's fields were freed before nghttp2 encoded them")
        // Whatever the allocator hands out next reuses blocks freed above, if any were.
        let clobber = (0..<64).map { _ in [UInt8](repeating: 0x58, count: 48) + [UInt8](repeating: 0x58, count: 16) }
        let out = Self.produce(session, limit: 700)
        _ = clobber
        let answers = Self.answers(out)
        for stream: Int32 in [1, 3] {
            let tag = stream == 1 ? "json" : "pkcs7-mime"
            let fields = answers[stream]?.fields ?? []
            #expect(fields.map(\.name) == [":status", "date", "content-type", "etag", "cache-control"])
            #expect(
                fields.map(\.value) == [
                    "200", "Fri, 27 Nov 2026 07:00:0\(stream) GMT", "application/\(tag)", "\"\(tag)-0123456789\"", "max-age=\(tag.count)",
                ])
        }
        // The connection's window is spent; each body so far is a beginning of its own.
        let sent = (answers[1]?.body.count ?? 0) + (answers[3]?.body.count ?? 0)
        #expect(sent == 65_535)
        for stream: Int32 in [1, 3] {
            let part = answers[stream]?.body ?? []
            #expect(part == Array(bodies[stream]![..<part.count]))
        }
        // WINDOW_UPDATE for the connection and stream 1: the rest of both bodies, then their ends.
        let update =
            ClientFrames.frame(type: 8, flags: 0, stream: 0, [0, 1, 0, 0]) + ClientFrames.frame(type: 8, flags: 0, stream: 1, [0, 1, 0, 0])
        #expect(SessionIO.receive(session, update))
        let rest = Self.answers(Self.produce(session, limit: 700))
        for stream: Int32 in [1, 3] {
            #expect((answers[stream]?.body ?? []) + (rest[stream]?.body ?? []) == bodies[stream])
            #expect(answers[stream]?.ended == true || rest[stream]?.ended == true)
        }
        #expect(session.activeStreams == 0)
        #expect(session.heldStreamsAreOpen)
        #expect(firstFields == nil, "the session holds a finished response's fields")
    }

    @Test("one limit for all output: a body's frames wait for the next call rather than pass it by more than a frame")
    func limitHoldsFrames() {
        let (session, requests) = Self.session(streams: [1])
        session.respond(
            stream: requests[0].stream, status: .ok, fields: Self.fields("json"), date: [], body: Array(repeating: 1, count: 50_000),
            sendsBody: true)
        var calls = 0
        var total = 0
        while session.wantsWrite && calls < 100 {
            var out: [UInt8] = []
            session.produce(into: &out, limit: 1)
            // One frame at most past the limit: the first frame produced (SETTINGS, HEADERS or a
            // DATA frame of at most 16,384 bytes and its header).
            #expect(out.count <= 16_384 + 9)
            total += out.count
            calls += 1
        }
        #expect(calls >= 4, "50,000 bytes in frames of at most 16,384 take four calls at least")
        #expect(total > 50_000)
        #expect(session.activeStreams == 0)
    }

    @Test("a stream reset while its body is half out: the rest is not sent, nothing is kept, the next request is answered")
    func resetMidBody() {
        let (session, requests) = Self.session(streams: [1])
        session.respond(
            stream: requests[0].stream, status: .ok, fields: Self.fields("json"), date: [], body: Array(repeating: 7, count: 50_000),
            sendsBody: true)
        var out: [UInt8] = []
        session.produce(into: &out, limit: 1)
        session.produce(into: &out, limit: 1)
        #expect(session.activeStreams == 1)
        #expect(SessionIO.receive(session, ClientFrames.reset(stream: 1)))
        #expect(session.activeStreams == 0)
        let after = Self.answers(Self.produce(session, limit: 1 << 20))
        #expect(after[1] == nil, "nothing more on the reset stream")
        #expect(SessionIO.receive(session, ClientFrames.get(stream: 3)))
        for request in session.takeRequests() {
            session.respond(stream: request.stream, status: .ok, fields: Self.fields("json"), date: [], body: [9, 9], sendsBody: true)
        }
        let next = Self.answers(Self.produce(session, limit: 1 << 20))
        #expect(next[3]?.body == [9, 9])
        #expect(next[3]?.ended == true)
        #expect(session.heldStreamsAreOpen)
    }

    @Test("the same file's fields again, then a HEAD and redirects of other fields, then the first again: each response has its own")
    func listReusedOnlyForTheSameFields() {
        let (session, requests) = Self.session(streams: [1, 3, 5, 7, 9, 11])
        let json = Self.fields("json")
        let redirect = PreparedFields([("Cache-Control", "no-store")])
        for request in requests {
            let stream = request.stream
            let date = Array("d\(stream)".utf8)
            switch stream {
            case 5:  // HEAD: copied fields, the same list otherwise
                session.respond(stream: stream, status: .ok, fields: json, date: date, body: [5], sendsBody: false)
            case 7, 9:  // the same redirect fields, each with a location of its own
                session.respond(
                    stream: stream, status: .found, fields: redirect, date: date, location: Array("https://a.test/\(stream)".utf8),
                    body: [], sendsBody: true)
            default:
                session.respond(stream: stream, status: .ok, fields: json, date: date, body: [UInt8(stream)], sendsBody: true)
            }
        }
        let answers = Self.answers(Self.produce(session, limit: 1 << 20))
        for stream: Int32 in [1, 3, 5, 11] {
            #expect(answers[stream]?.fields.map(\.value) == ["200", "d\(stream)", "application/json", "\"json-0123456789\"", "max-age=4"])
            #expect(answers[stream]?.body == (stream == 5 ? [] : [UInt8(stream)]))
            #expect(answers[stream]?.ended == true)
        }
        for stream: Int32 in [7, 9] {
            #expect(answers[stream]?.fields.map(\.name) == [":status", "date", "cache-control", "location"])
            #expect(answers[stream]?.fields.map(\.value) == ["302", "d\(stream)", "no-store", "https://a.test/\(stream)"])
        }
        #expect(session.activeStreams == 0)
    }
}
