import HTTPCore
import Testing

@testable import HTTP2

/// The frames of h2spec 2.x's cases that aasad once failed (scripts/h2spec.sh), sent to a
/// session as h2spec sends them, so that the suite keeps them without h2spec: frames on
/// half-closed (remote) and closed streams (RFC 9113 §5.1), a lower stream identifier never
/// opened (§5.1.1), and PRIORITY frames the RFC calls errors (§5.3.1, §6.3). nghttp2 keeps no
/// closed streams and skips PRIORITY frames unread while the session announces
/// SETTINGS_NO_RFC7540_PRIORITIES; the session checks these itself (`HTTP2Session.check`,
/// `StreamHistory`, `InboundFrames`). Then what must stay allowed, the window's bound, and floods.
/// Tests/DaemonServeTests/HTTP2ConformanceServeTests.swift sends the same frames with Python over
/// TLS.
@Suite("HTTP/2 session: h2spec's stream-state and PRIORITY cases")
struct HTTP2ConformanceTests {
    static let protocolError: UInt32 = 1
    static let streamClosed: UInt32 = 5

    /// A session past the preface, with `bytes` received and whatever it answered taken; then
    /// `then` received: the RST_STREAM and GOAWAY codes written after it.
    static func errors(after bytes: [UInt8], then: [UInt8]) -> [String] {
        let session = HTTP2Session()
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + bytes))
        _ = HTTP2EarlyAnswerTests.answer(session)
        _ = SessionIO.receive(session, then)
        return HTTP2EarlyAnswerTests.errors(HTTP2EarlyAnswerTests.answer(session).output)
    }

    /// The codes written when `bytes` (after the preface and SETTINGS) arrive split in two reads
    /// at `split`, each answered as it arrives.
    static func errors(_ bytes: [UInt8], splitAt split: Int) -> [String] {
        let session = HTTP2Session()
        var output: [UInt8] = []
        for piece in [Array(bytes[..<split]), Array(bytes[split...])] where !piece.isEmpty {
            _ = SessionIO.receive(session, piece)
            output += HTTP2EarlyAnswerTests.answer(session).output
        }
        return HTTP2EarlyAnswerTests.errors(output)
    }

    static let goAwayStreamClosed = ["GOAWAY \(streamClosed)"]
    static let goAwayProtocolError = ["GOAWAY \(protocolError)"]

    static func data(_ stream: Int32, endStream: Bool = true) -> [UInt8] {
        ClientFrames.frame(type: 0, flags: endStream ? 1 : 0, stream: stream, Array("test".utf8))
    }

    static func priority(_ stream: Int32, dependsOn: UInt32) -> [UInt8] {
        ClientFrames.frame(type: 2, flags: 0, stream: stream, withUnsafeBytes(of: dependsOn.bigEndian, Array.init) + [15])
    }

    // MARK: - h2spec's cases

    @Test("h2spec 5.1 #5, #11, 6.1 #2: DATA on a stream the client ended, answered or not yet, is a STREAM_CLOSED connection error")
    func dataAfterEndStream() {
        // 6.1 #2 sends a POST. In the read that ended it (half-closed (remote)), and after the
        // answer (closed).
        for method in ["GET", "POST"] {
            let request = ClientFrames.get(stream: 1, method: method)
            let sameRead = Self.errors(after: [], then: request + Self.data(1))
            let later = Self.errors(after: request, then: Self.data(1))
            #expect(sameRead == Self.goAwayStreamClosed, "\(method): \(sameRead)")
            #expect(later == Self.goAwayStreamClosed, "\(method): \(later)")
        }
    }

    @Test("h2spec 5.1 #6, #12: a second HEADERS on a stream the client ended is a STREAM_CLOSED connection error, not a second answer")
    func headersAfterEndStream() {
        let sameRead = Self.errors(after: [], then: ClientFrames.get(stream: 1) + ClientFrames.get(stream: 1))
        let later = Self.errors(after: ClientFrames.get(stream: 1), then: ClientFrames.get(stream: 1))
        #expect(sameRead == Self.goAwayStreamClosed, "\(sameRead)")
        #expect(later == Self.goAwayStreamClosed, "\(later)")
    }

    @Test("h2spec 5.1 #8, #9: DATA or HEADERS after the client reset its stream is STREAM_CLOSED")
    func framesAfterClientReset() {
        let opened = ClientFrames.get(stream: 1, endStream: false) + ClientFrames.reset(stream: 1)
        let data = Self.errors(after: [], then: opened + Self.data(1))
        let headers = Self.errors(after: [], then: opened + ClientFrames.get(stream: 1))
        let later = Self.errors(after: opened, then: Self.data(1))
        #expect(data == Self.goAwayStreamClosed, "\(data)")
        #expect(headers == Self.goAwayStreamClosed, "\(headers)")
        #expect(later == Self.goAwayStreamClosed, "\(later)")
    }

    @Test("h2spec 5.1.1 #2: HEADERS on a stream below one the client opened, never opened itself, is a PROTOCOL_ERROR connection error")
    func lowerStreamIdentifier() {
        let sameRead = Self.errors(after: [], then: ClientFrames.get(stream: 5) + ClientFrames.get(stream: 3))
        let later = Self.errors(after: ClientFrames.get(stream: 5), then: ClientFrames.get(stream: 3))
        #expect(sameRead == Self.goAwayProtocolError, "\(sameRead)")
        #expect(later == Self.goAwayProtocolError, "\(later)")
        // DATA on such a stream is STREAM_CLOSED (RFC 9113 §6.1: it is closed, not idle).
        let data = Self.errors(after: ClientFrames.get(stream: 5), then: Self.data(3))
        #expect(data == Self.goAwayStreamClosed, "\(data)")
    }

    @Test("h2spec 6.3 #1: PRIORITY on stream 0 is a connection error PROTOCOL_ERROR (RFC 9113 §6.3)")
    func priorityOnStreamZero() {
        let errors = Self.errors(after: [], then: Self.priority(0, dependsOn: 1))
        #expect(errors == Self.goAwayProtocolError, "\(errors)")
    }

    @Test("h2spec 5.3.1 #2: a PRIORITY frame making a stream depend on itself is PROTOCOL_ERROR (RFC 9113 §5.3.1), the exclusive bit aside")
    func priorityOnItself() {
        for dependency: UInt32 in [1, 0x8000_0001] {
            let idle = Self.errors(after: [], then: Self.priority(1, dependsOn: dependency))
            let open = Self.errors(after: ClientFrames.get(stream: 1, endStream: false), then: Self.priority(1, dependsOn: dependency))
            #expect(idle == Self.goAwayProtocolError, "\(idle)")
            #expect(open == Self.goAwayProtocolError, "\(open)")
        }
    }

    @Test("each case gives the same error whichever byte its frames are split at between two reads")
    func everySplitPoint() {
        let cases: [(String, [UInt8], [String])] = [
            ("DATA after END_STREAM", ClientFrames.get(stream: 1) + Self.data(1), Self.goAwayStreamClosed),
            ("HEADERS after END_STREAM", ClientFrames.get(stream: 1) + ClientFrames.get(stream: 1), Self.goAwayStreamClosed),
            (
                "DATA after RST_STREAM", ClientFrames.get(stream: 1, endStream: false) + ClientFrames.reset(stream: 1) + Self.data(1),
                Self.goAwayStreamClosed
            ),
            ("lower identifier", ClientFrames.get(stream: 5) + ClientFrames.get(stream: 3), Self.goAwayProtocolError),
            ("PRIORITY on 0", Self.priority(0, dependsOn: 1), Self.goAwayProtocolError),
            ("PRIORITY on itself", ClientFrames.get(stream: 1) + Self.priority(3, dependsOn: 3), Self.goAwayProtocolError),
        ]
        let head = ClientFrames.preface + ClientFrames.settings
        for (name, frames, expected) in cases {
            let bytes = head + frames
            for split in 1..<bytes.count {
                let errors = Self.errors(bytes, splitAt: split)
                #expect(errors == expected, "\(name), split at \(split): \(errors)")
            }
        }
    }

    // MARK: - What stays allowed

    @Test(
        "WINDOW_UPDATE, PRIORITY and RST_STREAM on a stream the client ended stay allowed (RFC 9113 §5.1), and the connection serves on"
    )
    func allowedOnEndedStreams() {
        let session = HTTP2Session()
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1)))
        _ = HTTP2EarlyAnswerTests.answer(session)
        let after =
            ClientFrames.frame(type: 8, flags: 0, stream: 1, [0, 0, 0, 1]) + Self.priority(1, dependsOn: 0) + ClientFrames.reset(stream: 1)
            + Self.priority(3, dependsOn: 1) + ClientFrames.get(stream: 3)
        #expect(SessionIO.receive(session, after))
        let (requests, output) = HTTP2EarlyAnswerTests.answer(session)
        #expect(requests.map(\.stream) == [3] && HTTP2EarlyAnswerTests.errors(output).isEmpty && session.isAlive)
    }

    @Test("a request body and its trailers (HEADERS with END_STREAM on an open stream) are no error")
    func bodyAndTrailers() {
        let frames =
            ClientFrames.get(stream: 1, endStream: false, method: "POST") + Self.data(1, endStream: false)
            + ClientFrames.frame(type: 1, flags: 0x5, stream: 1, ClientFrames.literal("x-trailer", "1"))
        let errors = Self.errors(after: [], then: frames)
        #expect(errors.isEmpty, "\(errors)")
    }

    @Test(
        "frames on a stream the server reset itself are ignored (RFC 9113 §5.1): a refused one and one reset with NO_ERROR after its answer"
    )
    func framesAfterServerReset() {
        // A malformed request (a fragment in :path) is refused with PROTOCOL_ERROR before the
        // client ends it; what the client sent after is ignored.
        let refused = Self.errors(
            after: ClientFrames.get(stream: 1, path: "/a#b", endStream: false), then: Self.data(1) + ClientFrames.get(stream: 3))
        #expect(refused.isEmpty, "\(refused)")
        // HTTP2EarlyAnswerTests.framesAfterEarlyAnswer covers the stream reset with NO_ERROR.
    }

    // MARK: - The window's bound and identifiers

    @Test(
        "a stream the client ended is remembered while it is within StreamHistory.window identifiers of the highest opened: at N the frame is an error, at N + 1 it is ignored as nghttp2 ignores it"
    )
    func windowBound() {
        let window = Int32(StreamHistory.window)
        // Stream 1 ended; then a stream opened k identifiers above it (k client streams, 2k).
        for (k, expected) in [(window - 1, Self.goAwayStreamClosed), (window, [])] {
            let errors = Self.errors(after: ClientFrames.get(stream: 1) + ClientFrames.get(stream: 1 + 2 * k), then: Self.data(1))
            #expect(errors == expected, "stream 1 at \(k) below the highest: \(errors)")
            // Below the window, a HEADERS on a stream never opened is no longer known either.
            let lower = Self.errors(after: ClientFrames.get(stream: 3 + 2 * k), then: ClientFrames.get(stream: 3))
            #expect(lower == (k < window ? Self.goAwayProtocolError : []), "stream 3 at \(k) below the highest: \(lower)")
        }
    }

    @Test("the highest stream identifier (2^31-1) and identifiers with the reserved bit set are the same streams nghttp2 sees")
    func identifiersAtTheTop() {
        let top = Int32.max
        let ended = Self.errors(after: ClientFrames.get(stream: 1) + ClientFrames.get(stream: top), then: Self.data(top))
        #expect(ended == Self.goAwayStreamClosed, "\(ended)")
        let lower = Self.errors(after: ClientFrames.get(stream: top), then: ClientFrames.get(stream: top - 2))
        #expect(lower == Self.goAwayProtocolError, "\(lower)")
        // The reserved bit is ignored on receipt (RFC 9113 §4.1): 0x80000001 is stream 1.
        var withReservedBit = Self.data(1)
        withReservedBit[5] |= 0x80
        let reserved = Self.errors(after: ClientFrames.get(stream: 1), then: withReservedBit)
        #expect(reserved == Self.goAwayStreamClosed, "\(reserved)")
    }

    // MARK: - Floods

    @Test("a flood of frames on streams the client ended gets one GOAWAY and nothing per frame: no reset is sent for any of them")
    func floodOnEndedStreams() {
        var flood: [UInt8] = []
        for stream in stride(from: Int32(1), through: 199, by: 2) {
            flood += ClientFrames.get(stream: stream, endStream: false) + ClientFrames.reset(stream: stream)
        }
        for _ in 0..<1_000 { flood += Self.data(1) + ClientFrames.get(stream: 3) }
        let errors = Self.errors(after: [], then: flood)
        #expect(errors == Self.goAwayStreamClosed, "\(errors.prefix(5)) … \(errors.count) errors")
    }

    @Test("a flood of 20,000 PRIORITY frames that are no error (on idle, open and ended streams) costs no output and keeps nothing")
    func priorityFlood() {
        let session = HTTP2Session()
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1)))
        _ = HTTP2EarlyAnswerTests.answer(session)
        let capacity = session.tableCapacity
        var flood: [UInt8] = []
        for k in 0..<20_000 {
            flood += Self.priority(Int32(1 + 2 * (k % 5000)), dependsOn: UInt32(k % 7 == 0 ? 0 : 1 + 2 * (k % 5000) + 2))
        }
        #expect(SessionIO.receive(session, flood))
        #expect(SessionIO.output(session).isEmpty && session.isAlive && session.tableCapacity == capacity && session.heldBytes == 0)
    }
}
