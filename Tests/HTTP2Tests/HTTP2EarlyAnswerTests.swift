import HTTPCore
import Testing

@testable import HTTP2

/// A GET or HEAD is answered when its header block ends, whether or not the client ends its
/// stream (RFC 9113 §8.1), and the stream is then reset with NO_ERROR: a client that never ends
/// its streams makes the session hold none of them.
@Suite("HTTP/2 session: GET and HEAD answered at the end of their header block")
struct HTTP2EarlyAnswerTests {
    static let noError: UInt32 = 0
    static let refusedStream: UInt32 = 7

    /// Answers what the session completed with a small body and returns the frames it writes.
    static func answer(_ session: HTTP2Session) -> (requests: [HTTP2Request], output: [UInt8]) {
        let requests = session.takeRequests()
        for request in requests {
            session.respond(stream: request.stream, status: .ok, fields: .none, date: [], body: [0x41, 0x42], sendsBody: true)
        }
        return (requests, SessionIO.output(session))
    }

    /// Frames in `output` as (type, flags, stream), in order.
    static func frames(_ output: [UInt8]) -> [(type: UInt8, flags: UInt8, stream: Int32)] {
        var found: [(UInt8, UInt8, Int32)] = []
        var i = 0
        while i + 9 <= output.count {
            let length = Int(output[i]) << 16 | Int(output[i + 1]) << 8 | Int(output[i + 2])
            let stream =
                Int32(output[i + 5] & 0x7F) << 24 | Int32(output[i + 6]) << 16 | Int32(output[i + 7]) << 8 | Int32(output[i + 8])
            found.append((output[i + 3], output[i + 4], stream))
            i += 9 + length
        }
        return found
    }

    @Test(
        "100 GETs of a 3,950-byte User-Agent that never end their streams (the concurrent-stream limit, N) are each answered and reset with NO_ERROR, holding nothing; 100 more on the same connection (N + 1 on) are answered too"
    )
    func neverEndedStreams() {
        let budget = RequestBudget()
        let session = HTTP2Session(budget: budget)
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings))
        _ = SessionIO.output(session)
        for batch in 0..<2 {
            var bytes: [UInt8] = []
            let streams = (0..<Int32(HTTP2Session.maximumConcurrentStreams)).map { 1 + 2 * ($0 + Int32(batch) * 100) }
            for stream in streams {
                bytes += HTTP2BudgetTests.held(stream: stream, copies: 1, indexFirst: stream == 1, get: true)
            }
            #expect(SessionIO.receive(session, bytes))
            #expect(session.heldBytes == 0 && budget.inUse == 0 && !session.hasIncompleteRequests, "batch \(batch)")
            let (requests, output) = Self.answer(session)
            #expect(requests.map(\.stream) == streams, "batch \(batch): every stream answered")
            let sent = Self.frames(output)
            for stream in streams {
                let own = sent.filter { $0.stream == stream }
                // DATA with END_STREAM, then RST_STREAM: the reset follows the whole response.
                let ended = own.firstIndex { $0.type == 0 && $0.flags & 1 != 0 }
                let reset = own.firstIndex { $0.type == 3 }
                #expect(ended != nil && reset != nil && ended! < reset!, "stream \(stream): \(own)")
            }
            let codes = HTTP2BudgetTests.resets(output)
            #expect(codes.count == streams.count && codes.allSatisfy { $0.code == Self.noError }, "batch \(batch)")
            #expect(session.activeStreams == 0 && session.heldStreamsAreOpen && session.isAlive)
        }
        #expect(session.answeredEarly == 200 && session.completedRequests == 200 && session.refusedStreams == 0)
        // The client ends one of them after all: DATA on a stream the server reset is ignored.
        #expect(SessionIO.receive(session, ClientFrames.frame(type: 0, flags: 1, stream: 1, [0x41])))
        #expect(session.takeRequests().isEmpty && session.isAlive)
        #expect(!Self.frames(SessionIO.output(session)).contains { $0.type == 7 }, "no GOAWAY")
    }

    @Test("HEAD is answered at its block's end too; POST and other methods wait for END_STREAM")
    func methods() {
        let session = HTTP2Session()
        let bytes =
            ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1, endStream: false, method: "HEAD")
            + ClientFrames.get(stream: 3, endStream: false, method: "POST")
            + ClientFrames.get(stream: 5, endStream: false, method: "OPTIONS")
        #expect(SessionIO.receive(session, bytes))
        #expect(session.takeRequests().map(\.stream) == [1])
        #expect(session.hasIncompleteRequests && session.heldBytes > 0, "POST and OPTIONS wait")
        #expect(SessionIO.receive(session, ClientFrames.frame(type: 0, flags: 1, stream: 3, [0x41])))
        let post = session.takeRequests()
        #expect(post.map(\.stream) == [3] && post.first?.hasBody == true)
    }

    @Test("a header block continued in CONTINUATION over two reads is answered once the block ends, not before")
    func continuedBlock() {
        let session = HTTP2Session()
        let block =
            ClientFrames.literal(":method", "GET") + ClientFrames.literal(":scheme", "https") + ClientFrames.literal(":authority", "a.test")
        let headers = ClientFrames.frame(type: 1, flags: 0, stream: 1, block)
        let continuation = ClientFrames.frame(type: 9, flags: 0x4, stream: 1, ClientFrames.literal(":path", "/p"))
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + headers))
        #expect(session.takeRequests().isEmpty && session.hasIncompleteRequests)
        #expect(SessionIO.receive(session, continuation))
        let requests = session.takeRequests()
        #expect(requests.map(\.stream) == [1] && requests.first.map { Array($0.path) } == Array("/p".utf8))
        #expect(!session.hasIncompleteRequests && session.heldBytes == 0)
    }

    @Test("content-length other than 0 on a GET answered early marks a body (refused as if it had come); 0 and none do not")
    func announcedBody() {
        for (length, body) in [("3", true), ("0", false), ("000", false), ("10", true), (nil, false)] {
            let session = HTTP2Session()
            var block =
                ClientFrames.literal(":method", "GET") + ClientFrames.literal(":scheme", "https")
                + ClientFrames.literal(":authority", "a.test") + ClientFrames.literal(":path", "/")
            if let length { block += ClientFrames.literal("content-length", length) }
            let frame = ClientFrames.frame(type: 1, flags: 0x4, stream: 1, block)
            #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + frame))
            let requests = session.takeRequests()
            #expect(requests.count == 1 && requests.first?.hasBody == body, "content-length \(length ?? "none")")
        }
    }
}
