import HTTPCore
import Testing

@testable import HTTP2

/// The HPACK dynamic table a client may fill in the session's decoder: the protocol's 4,096 bytes,
/// never lowered by a SETTINGS entry (`HTTP2Session.headerTableSize`, RFC 9113 §6.5.2, RFC 7541
/// §4.2), so a client's encoder owes the session no table size update. Raw frames, so that a
/// test decides exactly when the acknowledgement arrives.
@Suite("HTTP/2 session: the decoder's header table")
struct HTTP2HeaderTableTests {
    /// A 3,950-byte User-Agent: it fits the 4,096-byte table, which then holds 3,992 bytes (its
    /// name, 10, and 32 of overhead).
    static let userAgent = [UInt8](repeating: 0x61, count: 3_950)
    static let tableEntry = 10 + 3_950 + 32

    /// A dynamic table size update (RFC 7541 §6.3).
    static func sizeUpdate(_ size: Int) -> [UInt8] { ClientFrames.integer(size, prefix: 5, flags: 0x20) }

    /// A complete GET whose header block begins with `prefix` and ends with `fields`.
    static func get(stream: Int32, prefix: [UInt8] = [], _ fields: [UInt8]) -> [UInt8] {
        let block =
            prefix + ClientFrames.indexed(2) + ClientFrames.indexed(7) + ClientFrames.literal(":authority", "a.test")
            + ClientFrames.literal(":path", "/.well-known/apple-app-site-association") + fields
        return ClientFrames.frame(type: 1, flags: 0x5, stream: stream, block)
    }

    /// Feeds `bytes` and writes what the session answers: the error code of its GOAWAY, if it
    /// sent one (RFC 9113 §6.8), and whether the session is still alive after it.
    static func goAway(_ session: HTTP2Session, _ bytes: [UInt8]) -> (code: UInt32?, alive: Bool) {
        _ = SessionIO.receive(session, bytes)
        let out = SessionIO.output(session)
        var i = 0
        var code: UInt32?
        while i + 9 <= out.count {
            let length = Int(out[i]) << 16 | Int(out[i + 1]) << 8 | Int(out[i + 2])
            if out[i + 3] == 7 && length >= 8 && i + 17 <= out.count {
                code = out[(i + 13)..<(i + 17)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            }
            i += 9 + length
        }
        return (code, session.isAlive)
    }

    /// COMPRESSION_ERROR (RFC 9113 §7).
    static let compressionError: UInt32 = 9

    /// A session that took the client's preface and SETTINGS, and a first request whose
    /// User-Agent the client indexed.
    static func indexedSession() -> HTTP2Session {
        let session = HTTP2Session()
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings))
        #expect(SessionIO.receive(session, get(stream: 1, ClientFrames.indexing(nameIndex: 58, userAgent))))
        #expect(session.takeRequests().map(\.stream) == [1])
        return session
    }

    @Test("the session's SETTINGS leave the header table at the protocol's 4,096 bytes: no HEADER_TABLE_SIZE entry")
    func advertised() {
        let output = SessionIO.output(HTTP2Session())
        // The first frame is SETTINGS (type 4); entries are 2-byte identifiers and 4-byte values.
        #expect(output.count >= 9 && output[3] == 4)
        let length = Int(output[0]) << 16 | Int(output[1]) << 8 | Int(output[2])
        var table: UInt32?
        for i in stride(from: 9, to: 9 + length, by: 6) where output[i] == 0 && output[i + 1] == 1 {
            table = output[(i + 2)..<(i + 6)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        }
        #expect(table == nil, "SETTINGS_HEADER_TABLE_SIZE \(table.map(String.init) ?? "") obliges every client to a size update")
        #expect(HTTP2Session.headerTableSize == 4_096)
    }

    @Test("the client's indexed value is kept across the acknowledgement and a one-byte reference to it is served")
    func keptAcrossAcknowledgement() {
        let session = Self.indexedSession()
        #expect(session.decoderTableBytes == Self.tableEntry)
        #expect(SessionIO.receive(session, ClientFrames.settingsAck))
        #expect(session.decoderTableBytes == Self.tableEntry)
        #expect(SessionIO.receive(session, Self.get(stream: 3, ClientFrames.indexed(62))))
        #expect(session.takeRequests().first.flatMap { $0.userAgent.map(Array.init) } == Self.userAgent)
        #expect(session.isAlive)
    }

    @Test(
        "after the acknowledgement a header block without a size update is served (h2spec's client sends none), and one with an update to 0 too"
    )
    func servedAfterAcknowledgement() {
        let session = Self.indexedSession()
        #expect(SessionIO.receive(session, ClientFrames.settingsAck))
        #expect(SessionIO.receive(session, Self.get(stream: 3, ClientFrames.literal("user-agent", "curl/8"))))
        #expect(session.takeRequests().map(\.stream) == [3])
        #expect(session.isAlive)
        // A client may still shrink the table itself: the entry is then evicted.
        #expect(SessionIO.receive(session, Self.get(stream: 5, prefix: Self.sizeUpdate(0), ClientFrames.literal("user-agent", "curl/8"))))
        #expect(session.takeRequests().map(\.stream) == [5])
        #expect(session.decoderTableBytes == 0)
        #expect(session.isAlive)
    }

    @Test("a size update above 4,096 bytes, or a reference to an evicted entry, ends the connection with COMPRESSION_ERROR")
    func refused() {
        // An update above the protocol's size is refused (RFC 7541 §6.3).
        let larger = Self.indexedSession()
        #expect(SessionIO.receive(larger, ClientFrames.settingsAck))
        let above = Self.goAway(
            larger,
            Self.get(
                stream: 3, prefix: Self.sizeUpdate(Int(HTTP2Session.headerTableSize) + 1), ClientFrames.literal("user-agent", "curl/8")))
        #expect(above.code == Self.compressionError && !above.alive)
        // The entry evicted by an update to 0: a reference to it decodes nothing (RFC 7541 §2.3.3).
        let dropped = Self.indexedSession()
        let reference = Self.goAway(dropped, Self.get(stream: 3, prefix: Self.sizeUpdate(0), ClientFrames.indexed(62)))
        #expect(reference.code == Self.compressionError && !reference.alive)
    }
}

/// Sessions of one thread writing their frames into one buffer (`SharedFrameBuffer`).
@Suite("HTTP/2 sessions: a shared frame buffer")
struct SharedFrameBufferTests {
    /// Feeds a request to `session` and answers it with `body` (its frames are produced later).
    static func request(_ session: HTTP2Session, stream: Int32, body: [UInt8]) {
        let bytes = (stream == 1 ? ClientFrames.preface + ClientFrames.settings : []) + ClientFrames.get(stream: stream)
        _ = bytes.withUnsafeBytes { session.receive($0, now: 0) }
        for request in session.takeRequests() {
            session.respond(
                stream: request.stream, status: .ok, fields: PreparedFields([("Content-Type", "application/json")]), date: [],
                body: body, sendsBody: true)
        }
    }

    @Test("two sessions taking turns in one buffer produce, byte for byte, what sessions of their own produce")
    func turns() {
        let shared = SharedFrameBuffer()
        let bodies = [[UInt8](repeating: 0x41, count: 40_000), [UInt8](repeating: 0x42, count: 3_000)]
        let sharing = [HTTP2Session(frameBuffer: shared), HTTP2Session(frameBuffer: shared)]
        let own = [HTTP2Session(), HTTP2Session()]
        #expect(sharing.allSatisfy(\.writesSharedFrameBuffer) && !own.contains(where: \.writesSharedFrameBuffer))
        var outputs = [[UInt8]](repeating: [], count: 4)
        for stream in [Int32(1), 3, 5] {
            for (k, session) in (sharing + own).enumerated() {
                Self.request(session, stream: stream, body: bodies[k % 2])
            }
            // Each session produces a piece (about one frame) in turn until all are done, so
            // that one session's frame is written over the other's between its calls.
            var more = true
            while more {
                more = false
                for (k, session) in (sharing + own).enumerated() where session.wantsWrite {
                    session.produce(into: &outputs[k], limit: outputs[k].count + 1)
                    more = true
                }
            }
        }
        // The first body fills the stream and connection windows (65,535 bytes, RFC 9113 §6.9.2).
        #expect(outputs[0].count > 65_000 && outputs[1].count > 9_000)
        #expect(outputs[0] == outputs[2], "the first sharing session's frames differ from its twin's")
        #expect(outputs[1] == outputs[3], "the second sharing session's frames differ from its twin's")
    }
}
