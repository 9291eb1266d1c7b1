import Foundation
import HTTPCore
import TestSupport
import Testing

@testable import HTTP2

/// Replays the HTTP/2 fuzzing corpus and saved failures (scripts/fuzz.sh http2) with the fuzz
/// target's steps and checks (Fuzz/FuzzHTTP2.swift): feed in two reads, answer every request,
/// produce the output, never keep state for a stream nghttp2 closed, and count what the fields
/// hold within the session's budget and the process-wide one (48 KB here, as in the target); and
/// for the saved failures, two sessions writing through one shared frame buffer produce what a
/// session of its own does (`HTTP2Fuzz.sharedFrameBuffer`, the target's own check).
@Suite("HTTP/2 fuzz corpus replay")
struct HTTP2FuzzReplayTests {
    static let body = [UInt8](repeating: 0x41, count: 70_000)
    static let headers = PreparedFields([("Content-Type", "application/json"), ("Content-Length", "70000"), ("Connection", "close")])

    /// The fuzz target's steps; returns how many requests were answered. `shared`: the target's
    /// shared-frame-buffer check too (three more sessions, in small steps: it made the corpus's
    /// replay 3.7 to 12.5 s on a loaded machine, so the corpus leaves it to the fuzz runs).
    @discardableResult
    static func exercise(_ input: [UInt8], shared: Bool = false) -> Int {
        let bytes = input.starts(with: ClientFrames.preface) ? input : ClientFrames.preface + input
        let budget = RequestBudget(limit: 48 * 1024)
        let answered = exercise(bytes, budget: budget)
        #expect(budget.inUse == 0, "an ended session left bytes counted in the process budget")
        guard shared else { return answered }
        // Sessions sharing one frame buffer, as a worker's do (the check the target runs too).
        let failure = HTTP2Fuzz.sharedFrameBuffer(bytes, fields: headers, body: body)
        #expect(failure == nil, "a session writing through the shared frame buffer produced other bytes: \(failure ?? "")")
        return answered
    }

    private static func exercise(_ bytes: [UInt8], budget: RequestBudget) -> Int {
        let session = HTTP2Session(budget: budget)
        var output: [UInt8] = []
        session.produce(into: &output, limit: 1 << 16)
        let prefix = ClientFrames.preface.count
        // As the target splits (Fuzz/FuzzHTTP2.swift): where the last byte says, over the whole input.
        let split = bytes.count > prefix ? prefix + Int(bytes[bytes.count - 1]) * (bytes.count - prefix) / 255 : bytes.count
        var answered = 0
        for piece in [bytes[..<split], bytes[split...]] where !piece.isEmpty {
            let alive = piece.withUnsafeBytes { session.receive($0, now: 0) }
            #expect(session.heldBytesAreCounted && budget.inUse == session.heldBytes)
            #expect(budget.inUse <= budget.limit, "held past the process budget at the end of a read")
            session.answer { request in
                #expect(request.stream > 0 && request.stream % 2 == 1)
                session.respond(
                    stream: request.stream, status: .ok, fields: headers, date: Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8),
                    body: body,
                    sendsBody: request.method == .get)
                answered += 1
            }
            #expect(session.heldStreamsAreOpen, "state kept for a stream nghttp2 closed")
            for _ in 0..<64 where session.wantsWrite {
                output.removeAll(keepingCapacity: true)
                session.produce(into: &output, limit: 1 << 16)
                if output.isEmpty { break }
            }
            #expect(session.heldStreamsAreOpen, "state kept for a stream nghttp2 closed")
            #expect(session.activeStreams <= 2 * Int(HTTP2Session.maximumConcurrentStreams) + 2)
            #expect(session.heldBytesAreCounted && budget.inUse == session.heldBytes)
            if !alive { break }
        }
        return answered
    }

    @Test("the corpus is present and every input keeps the session's invariants")
    func corpus() {
        let inputs = FuzzCorpus.inputs("http2-corpus").map(\.bytes)
        #expect(inputs.count >= 8)
        // The shared-buffer check triples this suite's time, so the normal run keeps it to the
        // saved failures below; scripts/fuzz-replay.sh (AASAD_FUZZ_REPLAY=full) runs it on all.
        let shared = ProcessInfo.processInfo.environment["AASAD_FUZZ_REPLAY"] == "full"
        let answered = inputs.map { Self.exercise($0, shared: shared) }.reduce(0, +)
        #expect(answered > 0, "no corpus input reached a request")
    }

    @Test(
        "every saved failure stays fixed (streams reset in the read that opened them, a stream-ending frame split past the process budget, a DATA frame's header left in the shared frame buffer)"
    )
    func failures() {
        let inputs = FuzzCorpus.failCases("http2-fail-cases").map(\.bytes)
        inputs.forEach { Self.exercise($0, shared: true) }
    }
}
