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
        "100 GETs of a 3,950-byte User-Agent that never end their streams (the concurrent-stream limit) are each answered, all but the last few reset with NO_ERROR, holding nothing; as many more as the open ones allow are answered too"
    )
    func neverEndedStreams() {
        let budget = RequestBudget()
        let session = HTTP2Session(budget: budget)
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings))
        _ = SessionIO.output(session)
        for batch in 0..<2 {
            var bytes: [UInt8] = []
            // The second batch: as many as the streams left open allow.
            let count = Int32(HTTP2Session.maximumConcurrentStreams) - Int32(batch * HTTP2Session.maximumAnsweredOpenStreams)
            let streams = (0..<count).map { 1 + 2 * ($0 + Int32(batch) * 100) }
            for stream in streams {
                bytes += HTTP2BudgetTests.held(stream: stream, copies: 1, indexFirst: stream == 1, get: true)
            }
            #expect(SessionIO.receive(session, bytes))
            #expect(session.heldBytes == 0 && budget.inUse == 0 && !session.hasIncompleteRequests, "batch \(batch)")
            let (requests, output) = Self.answer(session)
            #expect(requests.map(\.stream) == streams, "batch \(batch): every stream answered")
            let sent = Self.frames(output)
            for stream in streams.dropLast(HTTP2Session.maximumAnsweredOpenStreams) {
                // DATA with END_STREAM, then RST_STREAM: the reset follows the whole response.
                let ended = sent.firstIndex { $0.stream == stream && $0.type == 0 && $0.flags & 1 != 0 }
                let reset = sent.firstIndex { $0.stream == stream && $0.type == 3 }
                #expect(ended != nil && reset != nil && ended! < reset!, "stream \(stream)")
            }
            let codes = HTTP2BudgetTests.resets(output)
            // The first batch's last few stay open until the next batch's answers pass them.
            #expect(codes.count == streams.count - (batch == 0 ? HTTP2Session.maximumAnsweredOpenStreams : 0), "batch \(batch)")
            #expect(codes.allSatisfy { $0.code == Self.noError }, "batch \(batch)")
            #expect(session.answeredOpenStreams == HTTP2Session.maximumAnsweredOpenStreams)
            #expect(session.activeStreams == 0 && session.heldStreamsAreOpen && session.isAlive)
        }
        let answered = 200 - HTTP2Session.maximumAnsweredOpenStreams
        #expect(session.answeredEarly == answered && session.completedRequests == answered && session.refusedStreams == 0)
        // The client ends one of them after all: DATA on a stream the server reset is ignored.
        #expect(SessionIO.receive(session, ClientFrames.frame(type: 0, flags: 1, stream: 1, [0x41])))
        #expect(session.takeRequests().isEmpty && session.isAlive)
        #expect(!Self.frames(SessionIO.output(session)).contains { $0.type == 7 }, "no GOAWAY")
    }

    @Test(
        "answered streams the client has not ended: N stay open, the N + 1st resets the oldest with NO_ERROR; one the client ends is no longer counted"
    )
    func answeredOpenBound() {
        let session = HTTP2Session()
        let n = HTTP2Session.maximumAnsweredOpenStreams
        var bytes = ClientFrames.preface + ClientFrames.settings
        for k in 0..<n { bytes += ClientFrames.get(stream: Int32(1 + 2 * k), endStream: false) }
        #expect(SessionIO.receive(session, bytes))
        var (requests, output) = Self.answer(session)
        #expect(requests.count == n && HTTP2BudgetTests.resets(output).isEmpty && session.answeredOpenStreams == n, "N")
        #expect(SessionIO.receive(session, ClientFrames.get(stream: Int32(1 + 2 * n), endStream: false)))
        (requests, output) = Self.answer(session)
        let resets = HTTP2BudgetTests.resets(output)
        #expect(requests.count == 1 && resets.count == 1 && resets.first?.stream == 1 && resets.first?.code == Self.noError, "N + 1")
        #expect(session.answeredOpenStreams == n)
        // The client ends stream 3: closed on both sides, nghttp2 frees it.
        #expect(SessionIO.receive(session, ClientFrames.frame(type: 0, flags: 1, stream: 3, [])))
        _ = SessionIO.output(session)
        #expect(session.answeredOpenStreams == n - 1 && session.takeRequests().isEmpty && session.isAlive)
    }

    @Test(
        "what a client still sends on a GET answered early is never a second request nor a connection error: trailers (RFC 9113 §8.1) on a stream left open or reset with NO_ERROR, WINDOW_UPDATE, PRIORITY and DATA on a reset one"
    )
    func framesAfterEarlyAnswer() {
        let session = HTTP2Session()
        let n = Int32(HTTP2Session.maximumAnsweredOpenStreams)
        var bytes = ClientFrames.preface + ClientFrames.settings
        // n + 1 never-ended GETs: stream 1 is reset with NO_ERROR, the other n stay open.
        for k in 0...n { bytes += ClientFrames.get(stream: 1 + 2 * k, endStream: false) }
        #expect(SessionIO.receive(session, bytes))
        let (requests, output) = Self.answer(session)
        #expect(requests.count == Int(n) + 1 && HTTP2BudgetTests.resets(output).map(\.stream) == [1])
        let trailers = ClientFrames.literal("x-trailer", "1")
        var after: [UInt8] = []
        for stream in [1, 3] as [Int32] {
            after += ClientFrames.frame(type: 8, flags: 0, stream: stream, [0, 0, 0, 1])  // WINDOW_UPDATE
            after += ClientFrames.frame(type: 2, flags: 0, stream: stream, [0, 0, 0, 0, 15])  // PRIORITY
            after += ClientFrames.frame(type: 0, flags: 0, stream: stream, [0x41])  // DATA
            after += ClientFrames.frame(type: 1, flags: 0x5, stream: stream, trailers)  // trailers, END_STREAM
        }
        #expect(SessionIO.receive(session, after))
        #expect(session.takeRequests().isEmpty, "no second answer")
        #expect(Self.errors(SessionIO.output(session)).isEmpty && session.isAlive)
        #expect(session.answeredOpenStreams == Int(n) - 1 && session.heldStreamsAreOpen && session.heldBytes == 0)
        // The connection still serves.
        #expect(SessionIO.receive(session, ClientFrames.get(stream: 3 + 2 * n)))
        #expect(session.takeRequests().map(\.stream) == [3 + 2 * n])
    }

    /// The error codes of the RST_STREAM and GOAWAY frames in `output`, by frame type.
    static func errors(_ output: [UInt8]) -> [String] {
        var found: [String] = []
        var i = 0
        while i + 9 <= output.count {
            let length = Int(output[i]) << 16 | Int(output[i + 1]) << 8 | Int(output[i + 2])
            let type = output[i + 3]
            let at = type == 3 ? i + 9 : i + 13  // RST_STREAM: the code; GOAWAY: after the last stream id
            if (type == 3 || type == 7) && at + 4 <= output.count {
                found.append("\(type == 3 ? "RST_STREAM" : "GOAWAY") \(output[at..<at + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })")
            }
            i += 9 + length
        }
        return found
    }

    @Test(
        "an answered stream the client has not ended stays open: a WINDOW_UPDATE of 0 on it is the protocol error it is on any open stream (RFC 9113 §6.9), not ignored"
    )
    func halfClosedLocal() {
        var answers: [[String]] = []
        for method in ["GET", "POST"] {
            let session = HTTP2Session()
            #expect(
                SessionIO.receive(
                    session, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1, endStream: false, method: method)))
            let (requests, output) = Self.answer(session)
            #expect(requests.count == (method == "GET" ? 1 : 0) && Self.errors(output).isEmpty, "\(method)")
            #expect(SessionIO.receive(session, ClientFrames.frame(type: 8, flags: 0, stream: 1, [0, 0, 0, 0])), "\(method)")
            answers.append(Self.errors(SessionIO.output(session)))
        }
        #expect(answers[0] == answers[1] && answers[0] == ["GOAWAY 1"], "\(answers)")
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
