import HTTPCore
import Testing

@testable import HTTP2

/// Raw HTTP/2 client bytes (RFC 9113 §4.1 frames), built by hand so a test controls exactly what
/// arrives in one read.
enum ClientFrames {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, flags: UInt8, stream: Int32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags]
            + withUnsafeBytes(of: UInt32(stream).bigEndian, Array.init) + payload
    }

    static let settings = frame(type: 4, flags: 0, stream: 0, [])
    static let settingsAck = frame(type: 4, flags: 1, stream: 0, [])

    /// A header field as an HPACK literal without indexing, new name (RFC 7541 §6.2.2); names
    /// and values under 127 bytes.
    static func literal(_ name: String, _ value: String) -> [UInt8] {
        [0, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(value.utf8.count)] + Array(value.utf8)
    }

    /// HEADERS with END_HEADERS (and END_STREAM unless `endStream` is false) for a GET, or
    /// `method`.
    static func get(
        stream: Int32, path: String = "/.well-known/apple-app-site-association", authority: String = "a.test", endStream: Bool = true,
        method: String = "GET"
    )
        -> [UInt8]
    {
        let block = literal(":method", method) + literal(":scheme", "https") + literal(":authority", authority) + literal(":path", path)
        return frame(type: 1, flags: endStream ? 0x5 : 0x4, stream: stream, block)
    }

    /// An HPACK integer with a `prefix`-bit prefix (RFC 7541 §5.1); `flags` are the first byte's
    /// other bits.
    static func integer(_ value: Int, prefix: Int, flags: UInt8) -> [UInt8] {
        let largest = (1 << prefix) - 1
        if value < largest { return [flags | UInt8(value)] }
        var out = [flags | UInt8(largest)]
        var rest = value - largest
        while rest >= 128 {
            out.append(UInt8(rest % 128 + 128))
            rest /= 128
        }
        return out + [UInt8(rest)]
    }

    /// A field the decoder adds to its dynamic table (RFC 7541 §6.2.1), its name the static
    /// table's `nameIndex` (58: user-agent); any length of value.
    static func indexing(nameIndex: Int, _ value: [UInt8]) -> [UInt8] {
        integer(nameIndex, prefix: 6, flags: 0x40) + integer(value.count, prefix: 7, flags: 0) + value
    }

    /// A field from the tables (RFC 7541 §6.1): 2 `:method: GET`, 4 `:path: /`, 7 `:scheme: https`,
    /// 62 the dynamic table's newest entry.
    static func indexed(_ index: Int) -> [UInt8] { integer(index, prefix: 7, flags: 0x80) }

    /// RST_STREAM with CANCEL (RFC 9113 §6.4, §7).
    static func reset(stream: Int32) -> [UInt8] { frame(type: 3, flags: 0, stream: stream, [0, 0, 0, 8]) }
}

/// Feeds bytes to a session, answers every request it completes with `body`, and collects what
/// it produces.
private func exchange(_ session: HTTP2Session, _ bytes: [UInt8], body: [UInt8]) -> (requests: [HTTP2Request], output: [UInt8], ok: Bool) {
    let ok = bytes.withUnsafeBytes { session.receive($0, now: 0) }
    let requests = session.takeRequests()
    for request in requests {
        session.respond(
            stream: request.stream, status: .ok, fields: PreparedFields([("Content-Type", "application/json")]), date: [],
            body: body, sendsBody: true)
    }
    var output: [UInt8] = []
    for _ in 0..<100 where session.wantsWrite { session.produce(into: &output, limit: 1 << 20) }
    return (requests, output, ok)
}

@Suite("HTTP/2 session over raw frames")
struct HTTP2SessionTests {
    static let body = [UInt8](repeating: 0x41, count: 1_000)

    @Test("a request is answered and its stream forgotten once the body is out")
    func answered() {
        let session = HTTP2Session()
        let (requests, output, ok) = exchange(
            session, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1), body: Self.body)
        #expect(ok)
        #expect(requests.map(\.stream) == [1])
        #expect(requests.first.map { Array($0.path) } == Array("/.well-known/apple-app-site-association".utf8))
        #expect(output.count > Self.body.count, "the response's frames were produced")
        #expect(session.activeStreams == 0)
    }

    @Test("HEADERS with END_STREAM then RST_STREAM in one read leaves no stream and no body behind")
    func resetInSameRead() {
        let session = HTTP2Session()
        var bytes = ClientFrames.preface + ClientFrames.settings
        for k in 0..<50 {
            let stream = Int32(1 + 2 * k)
            bytes += ClientFrames.get(stream: stream) + ClientFrames.reset(stream: stream)
        }
        let (_, _, ok) = exchange(session, bytes, body: Self.body)
        #expect(ok)
        #expect(session.activeStreams == 0, "bodies kept for streams the client reset")
        // The session still serves a new stream afterwards.
        let (requests, _, _) = exchange(session, ClientFrames.get(stream: 101), body: Self.body)
        #expect(requests.map(\.stream) == [101])
        #expect(session.activeStreams == 0)
    }

    @Test("a client that had 100 streams open and reset 100 more leaves no table storage once idle; the next stream is answered")
    func idleBetweenStreams() {
        // Idle-connection memory is an attack surface: the tables grown for a burst of streams
        // (kilobytes) must not stay with a connection the client then holds open doing nothing.
        let session = HTTP2Session()
        let body = [UInt8](repeating: 0x41, count: 10)  // 100 bodies within the first flow-control window
        var bytes = ClientFrames.preface + ClientFrames.settings
        // POST: a GET would be answered at its header block's end, not wait.
        for k in 0..<100 { bytes += ClientFrames.get(stream: Int32(1 + 2 * k), endStream: false, method: "POST") }
        #expect(bytes.withUnsafeBytes { session.receive($0, now: 0) })
        #expect(session.hasIncompleteRequests)
        var ends: [UInt8] = []
        for k in 0..<100 { ends += ClientFrames.frame(type: 0, flags: 1, stream: Int32(1 + 2 * k), []) }
        for k in 100..<200 {
            ends +=
                ClientFrames.get(stream: Int32(1 + 2 * k), endStream: false, method: "POST") + ClientFrames.reset(stream: Int32(1 + 2 * k))
        }
        let (requests, _, ok) = exchange(session, ends, body: body)
        #expect(ok && requests.count == 100 && session.activeStreams == 0)
        session.releaseIdleStorage()
        #expect(session.tableCapacity > 0, "reset times within the window are kept (rapid-reset accounting)")
        // Later, past the reset window: a new stream on the same connection.
        #expect(ClientFrames.get(stream: 401).withUnsafeBytes { session.receive($0, now: 10_000) })
        let later = session.takeRequests()
        #expect(later.map(\.stream) == [401])
        for request in later { session.respond(stream: request.stream, status: .ok, fields: .none, date: [], body: body, sendsBody: true) }
        var output: [UInt8] = []
        for _ in 0..<100 where session.wantsWrite { session.produce(into: &output, limit: 1 << 20) }
        #expect(session.activeStreams == 0 && !output.isEmpty)
        session.releaseIdleStorage()
        // Before: 639 entries of room; now at most what one usual client keeps.
        #expect(session.tableCapacity <= 3 * HTTP2Session.keptCapacity)
    }

    @Test("idle storage released from inside `answer`: the batch being lent keeps its buffer, every request is answered")
    func releaseWhileAnswering() {
        // `answer` lends requests from its batch's buffer in place; dropping that buffer from
        // inside it (releaseIdleStorage, were a future path to call it there) would leave it
        // reading freed memory. 40 GETs: a batch past keptCapacity, which an idle release drops.
        let session = HTTP2Session()
        var bytes = ClientFrames.preface + ClientFrames.settings
        for k in 0..<40 { bytes += ClientFrames.get(stream: Int32(1 + 2 * k)) }
        #expect(bytes.withUnsafeBytes { session.receive($0, now: 0) })
        var streams: [Int32] = []
        var capacityInside = 0
        session.answer { request in
            if streams.isEmpty {
                let before = session.tableCapacity
                session.releaseIdleStorage()
                capacityInside = session.tableCapacity
                #expect(capacityInside == before, "storage released while a batch was being answered")
            }
            streams.append(request.stream)
        }
        // The expected list made outside #expect, with its types given: inside the macro the
        // closure's literal arithmetic took the type checker seven seconds.
        let everyStream: [Int32] = (0..<40).map { (k: Int) -> Int32 in Int32(1 + 2 * k) }
        #expect(streams == everyStream)
        #expect(capacityInside > 2 * HTTP2Session.keptCapacity)
        // Once the batch is answered, the same call releases it.
        session.releaseIdleStorage()
        #expect(session.tableCapacity <= 3 * HTTP2Session.keptCapacity)
    }

    @Test("a request with a body beside a plain GET: each keeps its own fields, repeated if-none-match lines are joined")
    func interleavedRequests() {
        // Stream 1's header block ends without END_STREAM (a body follows; a POST, since a GET
        // is answered when its block ends); stream 3 is complete in one block; then stream 1's
        // DATA ends it. Each request must keep its own bytes.
        let session = HTTP2Session()
        let first = ClientFrames.frame(
            type: 1, flags: 0x4, stream: 1,
            ClientFrames.literal(":method", "POST") + ClientFrames.literal(":scheme", "https")
                + ClientFrames.literal(":authority", "one.test") + ClientFrames.literal(":path", "/one?q=1")
                + ClientFrames.literal("host", "ignored.test") + ClientFrames.literal("if-none-match", "\"e0\"")
                + ClientFrames.literal("user-agent", "second") + ClientFrames.literal("if-none-match", "\"e1\""))
        let second = ClientFrames.frame(
            type: 1, flags: 0x5, stream: 3,
            ClientFrames.literal(":method", "HEAD") + ClientFrames.literal(":scheme", "https")
                + ClientFrames.literal(":path", "/two") + ClientFrames.literal("host", "two.test")
                + ClientFrames.literal("if-modified-since", "Sun, 06 Nov 1994 08:49:37 GMT"))
        let data = ClientFrames.frame(type: 0, flags: 1, stream: 1, [0x41])
        let (requests, _, ok) = exchange(session, ClientFrames.preface + ClientFrames.settings + first + second + data, body: Self.body)
        #expect(ok && requests.map(\.stream) == [3, 1], "\(requests.map(\.stream))")
        guard requests.count == 2 else { return }
        let two = requests[0]
        let one = requests[1]
        #expect(two.method == .head && Array(two.target) == Array("/two".utf8) && two.authority.map(Array.init) == Array("two.test".utf8))
        #expect(two.ifModifiedSince.map(Array.init) == Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8) && two.userAgent == nil && !two.hasBody)
        #expect(one.method == .other && Array(one.target) == Array("/one?q=1".utf8) && Array(one.path) == Array("/one".utf8))
        #expect(one.authority.map(Array.init) == Array("one.test".utf8), ":authority wins over host")
        #expect(one.userAgent.map(Array.init) == Array("second".utf8))
        #expect(one.ifNoneMatch.map(Array.init) == Array("\"e0\", \"e1\"".utf8), "RFC 9110 §5.3: a list's lines joined")
        #expect(one.hasBody && one.ifModifiedSince == nil)
        one.withFields { target, path, authority, ifNoneMatch, ifModifiedSince, userAgent in
            #expect(Array(target) == Array("/one?q=1".utf8) && Array(path) == Array("/one".utf8))
            #expect(authority.map(Array.init) == Array("one.test".utf8) && userAgent.map(Array.init) == Array("second".utf8))
            #expect(ifNoneMatch != nil && ifModifiedSince == nil)
        }
        #expect(session.activeStreams == 0)
    }

    @Test("a stream reset after its request was taken gets no body stored")
    func resetBeforeRespond() {
        let session = HTTP2Session()
        _ = (ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1)).withUnsafeBytes { session.receive($0, now: 0) }
        let requests = session.takeRequests()
        _ = ClientFrames.reset(stream: 1).withUnsafeBytes { session.receive($0, now: 0) }
        for request in requests {
            session.respond(stream: request.stream, status: .ok, fields: .none, date: [], body: Self.body, sendsBody: true)
        }
        #expect(session.activeStreams == 0)
    }

    @Test("prepared fields go out lower-cased, without connection-specific fields, with :status and date first")
    func preparedFields() {
        let session = HTTP2Session()
        _ = (ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1)).withUnsafeBytes { session.receive($0, now: 0) }
        let fields = PreparedFields([("Content-Type", "application/json"), ("Connection", "close"), ("X-Content-Type-Options", "nosniff")])
        #expect(fields.http2Spans.count == 2)
        #expect(fields.value(of: "content-type") == "application/json")
        #expect(fields.value(of: "Connection") == nil)
        #expect(fields.http1 == Array("Content-Type: application/json\r\nConnection: close\r\nX-Content-Type-Options: nosniff\r\n".utf8))
        for request in session.takeRequests() {
            session.respond(
                stream: request.stream, status: .notModified, fields: fields, date: Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8), body: [],
                sendsBody: false)
        }
        var output: [UInt8] = []
        session.produce(into: &output, limit: 1 << 16)
        #expect(!output.isEmpty)
        // HPACK (RFC 7541 Appendix A): ":status: 304" is static-table index 11, sent as one byte 0x8B.
        #expect(output.contains(0x8B))
    }
}
