import HTTPCore
import Testing

@testable import HTTP2

/// What a client can make a session hold: the fields of its incomplete requests, bounded per
/// session (`HTTP2Session.maximumHeldBytes`) and per process (`RequestBudget`), with repeated
/// single-valued fields refused rather than kept again. Raw frames, so that a test sends exactly
/// the HPACK-indexed header blocks an attacker would.
@Suite("HTTP/2 session: memory budgets")
struct HTTP2BudgetTests {
    /// A User-Agent of 3,950 bytes: with its name and HPACK's 32 bytes of overhead it fits the
    /// 4,096-byte dynamic table, so every copy after the first costs one byte on the wire.
    static let userAgent = [UInt8](repeating: 0x61, count: 3_950)

    /// HEADERS with END_HEADERS and without END_STREAM: `:method POST` (or GET), `:scheme https`,
    /// `:path /`, `:authority a.test`, and `copies` of the User-Agent, the first added to the
    /// dynamic table when `indexFirst`, every other one a reference to it. POST by default: a
    /// GET is answered when its header block ends, and only other methods wait for END_STREAM.
    static func held(stream: Int32, copies: Int, indexFirst: Bool, endStream: Bool = false, get: Bool = false) -> [UInt8] {
        var block =
            ClientFrames.indexed(get ? 2 : 3) + ClientFrames.indexed(7) + ClientFrames.indexed(4)
            + ClientFrames.literal(":authority", "a.test")
        for k in 0..<copies {
            block += k == 0 && indexFirst ? ClientFrames.indexing(nameIndex: 58, userAgent) : ClientFrames.indexed(62)
        }
        return ClientFrames.frame(type: 1, flags: endStream ? 0x5 : 0x4, stream: stream, block)
    }

    /// RST_STREAM frames in a session's output: stream and error code (RFC 9113 §6.4).
    static func resets(_ output: [UInt8]) -> [(stream: Int32, code: UInt32)] {
        var found: [(Int32, UInt32)] = []
        var i = 0
        while i + 9 <= output.count {
            let length = Int(output[i]) << 16 | Int(output[i + 1]) << 8 | Int(output[i + 2])
            if output[i + 3] == 3 && length == 4 && i + 13 <= output.count {
                let stream =
                    Int32(output[i + 5] & 0x7F) << 24 | Int32(output[i + 6]) << 16 | Int32(output[i + 7]) << 8 | Int32(output[i + 8])
                let code = output[(i + 9)..<(i + 13)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
                found.append((stream, code))
            }
            i += 9 + length
        }
        return found
    }

    static let refusedStream: UInt32 = 7
    static let protocolError: UInt32 = 1

    @Test("the reported attack: 100 streams of four HPACK-indexed 3,950-byte User-Agents hold nothing, each refused")
    func reportedAttack() {
        // Before: each stream kept all four copies (15.8 KB), 1.58 MB for the connection.
        let budget = RequestBudget()
        let session = HTTP2Session(budget: budget)
        #expect(SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings))
        var output: [UInt8] = []
        for k in 0..<100 {
            #expect(SessionIO.receive(session, Self.held(stream: Int32(1 + 2 * k), copies: 4, indexFirst: k == 0, get: k % 2 == 0)))
            #expect(session.heldBytes == 0 && budget.inUse == 0, "stream \(k): \(session.heldBytes) bytes held")
            output += SessionIO.output(session)
        }
        let resets = Self.resets(output)
        #expect(resets.count == 100 && resets.allSatisfy { $0.code == Self.protocolError }, "\(resets.prefix(3))")
        #expect(session.refusedStreams == 100 && !session.hasIncompleteRequests)
        #expect(session.isAlive, "a refused stream ends itself, not the connection")
    }

    @Test("one 3,950-byte User-Agent per stream: N streams fit the session's 64 KB, stream N+1 is refused with REFUSED_STREAM")
    func sessionBudget() throws {
        let session = HTTP2Session()
        #expect(
            SessionIO.receive(session, ClientFrames.preface + ClientFrames.settings + Self.held(stream: 1, copies: 1, indexFirst: true)))
        let each = session.heldBytes
        #expect(each >= Self.userAgent.count && each < Self.userAgent.count + 128, "one stream holds \(each) bytes")
        var kept = 1
        var refused: Int32?
        for k in 1..<100 where refused == nil {
            let stream = Int32(1 + 2 * k)
            let before = session.heldBytes
            #expect(SessionIO.receive(session, Self.held(stream: stream, copies: 1, indexFirst: false)))
            #expect(session.heldBytes <= HTTP2Session.maximumHeldBytes, "held bytes passed the budget")
            if session.heldBytes == before {
                refused = stream
                // N + 1: it would have passed the budget (the check counts the allocator's slack).
                #expect(before + each > HTTP2Session.maximumHeldBytes - HTTP2Request.allocationSlack)
            } else {
                kept += 1
            }
        }
        // N: every stream kept is within it.
        #expect(kept * each <= HTTP2Session.maximumHeldBytes && kept == HTTP2Session.maximumHeldBytes / each, "\(kept) kept")
        let resets = Self.resets(SessionIO.output(session))
        #expect(resets.count == 1 && resets.first?.stream == refused && resets.first?.code == Self.refusedStream, "\(resets)")
        // The streams kept still complete and are answered; what they held is released.
        var ends: [UInt8] = []
        for k in 0..<kept { ends += ClientFrames.frame(type: 0, flags: 1, stream: Int32(1 + 2 * k), []) }
        #expect(SessionIO.receive(session, ends))
        #expect(session.takeRequests().count == kept && session.heldBytes == 0)
    }

    @Test(
        "the process-wide budget: streams that would pass it are refused before anything is kept; requests whole in one frame are still answered"
    )
    func processBudget() {
        let first = HTTP2Session()
        _ = SessionIO.receive(first, ClientFrames.preface + ClientFrames.settings + Self.held(stream: 1, copies: 1, indexFirst: true))
        let each = first.heldBytes
        // Room for exactly two such streams, all sessions together.
        let budget = RequestBudget(limit: 2 * each + HTTP2Request.allocationSlack)
        let one = HTTP2Session(budget: budget)
        let two = HTTP2Session(budget: budget)
        #expect(SessionIO.receive(one, ClientFrames.preface + ClientFrames.settings + Self.held(stream: 1, copies: 1, indexFirst: true)))
        #expect(budget.inUse == each && one.heldBytes == each)
        // N = 2: the second, on another connection, fits.
        #expect(SessionIO.receive(two, ClientFrames.preface + ClientFrames.settings + Self.held(stream: 1, copies: 1, indexFirst: true)))
        #expect(budget.inUse == 2 * each)
        // N + 1: refused on either connection, and nothing more is counted.
        #expect(SessionIO.receive(two, Self.held(stream: 3, copies: 1, indexFirst: false)))
        #expect(budget.inUse == 2 * each && two.heldBytes == each)
        #expect(Self.resets(SessionIO.output(two)).map(\.code) == [Self.refusedStream])
        // A request whole in its frame is answered within the read: it never waits on the budget.
        #expect(SessionIO.receive(two, ClientFrames.get(stream: 5)))
        #expect(two.takeRequests().map(\.stream) == [5])
        // Streams that end release their bytes; a closed session releases all it held.
        #expect(SessionIO.receive(one, ClientFrames.frame(type: 0, flags: 1, stream: 1, [])))
        #expect(one.takeRequests().count == 1 && budget.inUse == each)
        #expect(SessionIO.receive(two, ClientFrames.reset(stream: 1)))
        #expect(budget.inUse == 0 && two.heldBytes == 0)
    }

    @Test("a budget already spent refuses a new stream at its first frame, and an ended session gives its bytes back")
    func exhaustedBudget() {
        let budget = RequestBudget(limit: 4_096)
        do {
            let holder = HTTP2Session(budget: budget)
            #expect(
                SessionIO.receive(
                    holder, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1, endStream: false, method: "POST")))
            #expect(budget.inUse == holder.heldBytes && budget.inUse > 0)
            budget.add(budget.limit - budget.inUse)  // others hold the rest
            #expect(budget.isExhausted)
            let late = HTTP2Session(budget: budget)
            #expect(
                SessionIO.receive(
                    late, ClientFrames.preface + ClientFrames.settings + ClientFrames.get(stream: 1, endStream: false, method: "POST")))
            #expect(late.heldBytes == 0 && late.refusedStreams == 1)
            budget.add(-(budget.limit - holder.heldBytes))
        }
        #expect(budget.inUse == 0)
    }

    @Test(
        "a frame that ends its stream but arrives over two reads waits like any other request: refused if what it holds passes the process budget by a byte, kept and answered if it fits exactly"
    )
    func completingFrameAcrossReads() {
        // END_HEADERS | END_STREAM, the User-Agent whole in the first read, the frame's last two
        // bytes in the second: nghttp2 hands over the fields as their bytes arrive.
        let block =
            ClientFrames.indexed(2) + ClientFrames.indexed(7) + ClientFrames.indexed(4) + ClientFrames.literal(":authority", "a.test")
            + ClientFrames.indexing(nameIndex: 58, Self.userAgent) + ClientFrames.literal("accept", "*/*")
        let frame = ClientFrames.frame(type: 1, flags: 0x5, stream: 1, block)
        let first = ClientFrames.preface + ClientFrames.settings + frame.dropLast(2)
        let probe = HTTP2Session()
        #expect(SessionIO.receive(probe, first))
        let each = probe.heldBytes
        #expect(each >= Self.userAgent.count, "the first read keeps the User-Agent")
        for (limit, kept) in [(each, true), (each - 1, false)] {
            let budget = RequestBudget(limit: limit)
            let session = HTTP2Session(budget: budget)
            #expect(SessionIO.receive(session, first))
            #expect(budget.inUse == (kept ? each : 0) && session.heldBytes == budget.inUse, "limit \(limit)")
            #expect(Self.resets(SessionIO.output(session)).map(\.code) == (kept ? [] : [Self.refusedStream]), "limit \(limit)")
            #expect(SessionIO.receive(session, Array(frame.suffix(2))))
            #expect(session.takeRequests().map(\.stream) == (kept ? [1] : []), "limit \(limit)")
            #expect(budget.inUse == 0 && session.heldBytes == 0 && session.isAlive, "limit \(limit)")
        }
    }

    @Test("repeated single-valued fields end the stream (PROTOCOL_ERROR); a repeated if-none-match is joined within the budget")
    func duplicates() {
        for name in ["user-agent", "if-modified-since"] {
            let session = HTTP2Session()
            let block =
                ClientFrames.indexed(2) + ClientFrames.indexed(7) + ClientFrames.indexed(4) + ClientFrames.literal(":authority", "a.test")
                + ClientFrames.literal(name, "one") + ClientFrames.literal(name, "two")
            #expect(
                SessionIO.receive(
                    session, ClientFrames.preface + ClientFrames.settings + ClientFrames.frame(type: 1, flags: 5, stream: 1, block)))
            #expect(session.takeRequests().isEmpty && session.heldBytes == 0, "\(name)")
            #expect(Self.resets(SessionIO.output(session)).map(\.code) == [Self.protocolError], "\(name)")
        }
        // Joined, and the field kept after the first line (moved along) keeps its value.
        let session = HTTP2Session()
        let block =
            ClientFrames.indexed(2) + ClientFrames.indexed(7) + ClientFrames.literal(":path", "/p?q")
            + ClientFrames.literal(":authority", "a.test") + ClientFrames.literal("if-none-match", "\"a\"")
            + ClientFrames.literal("user-agent", "ua") + ClientFrames.literal("if-none-match", "\"b\", \"c\"")
        #expect(
            SessionIO.receive(
                session, ClientFrames.preface + ClientFrames.settings + ClientFrames.frame(type: 1, flags: 5, stream: 1, block)))
        let request = session.takeRequests().first
        #expect(request.flatMap(\.ifNoneMatch).map(Array.init) == Array("\"a\", \"b\", \"c\"".utf8))
        #expect(request.map { Array($0.target) } == Array("/p?q".utf8) && request.map { Array($0.path) } == Array("/p".utf8))
        #expect(request.flatMap(\.authority).map(Array.init) == Array("a.test".utf8))
        #expect(request.flatMap(\.userAgent).map(Array.init) == Array("ua".utf8))
    }

    @Test("if-none-match lines joined past the budget refuse the stream; what it held is freed")
    func joinedPastBudget() {
        // A 4 KB entity-tag list indexed once, then referenced: the 16 KB header list allows three
        // copies and the 64 KB session budget about sixteen streams of them.
        let session = HTTP2Session()
        let tags = [UInt8](repeating: 0x22, count: 4_000)
        var bytes = ClientFrames.preface + ClientFrames.settings
        for k in 0..<40 {
            var block =
                ClientFrames.indexed(3) + ClientFrames.indexed(7) + ClientFrames.indexed(4) + ClientFrames.literal(":authority", "a.test")
            block += k == 0 ? ClientFrames.indexing(nameIndex: 41, tags) : ClientFrames.indexed(62)  // 41: if-none-match
            block += ClientFrames.indexed(62) + ClientFrames.indexed(62)
            bytes += ClientFrames.frame(type: 1, flags: 4, stream: Int32(1 + 2 * k), block)
        }
        #expect(SessionIO.receive(session, bytes))
        #expect(session.heldBytes <= HTTP2Session.maximumHeldBytes && session.heldBytesAreCounted)
        let resets = Self.resets(SessionIO.output(session))
        #expect(!resets.isEmpty && resets.allSatisfy { $0.code == Self.refusedStream })
        #expect(session.heldBytes + 3 * 4_002 + 64 > HTTP2Session.maximumHeldBytes - HTTP2Request.allocationSlack, "refused with room left")
    }
}
