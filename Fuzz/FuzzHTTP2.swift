// libFuzzer entry point over the HTTP/2 request path: raw client bytes into HTTP2Session
// (libnghttp2), every request answered as the worker answers it, the session's output produced.
// Built by scripts/fuzz.sh with Sources/HTTP2, Sources/HTTP1 and Sources/HTTPCore as one module
// (hence no imports), linked with -lnghttp2. The checks are repeated in
// Tests/HTTP2Tests/HTTP2FuzzReplayTests.swift; the shared frame buffer's is
// Sources/HTTP2/HTTP2Fuzz.swift, which both run.

let clientPreface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
/// A body larger than one DATA frame and the default window, so flow control is exercised.
let responseBody = [UInt8](repeating: 0x41, count: 70_000)
let responseHeaders = PreparedFields([("Content-Type", "application/json"), ("Content-Length", "70000"), ("Connection", "close")])

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    // Inputs may carry the preface or not: without it, the fuzzer's bytes start at the frames.
    let bytes = input.starts(with: clientPreface) ? Array(input) : clientPreface + Array(input)
    exerciseHTTP2(bytes)
    if let failure = HTTP2Fuzz.sharedFrameBuffer(bytes, fields: responseHeaders, body: responseBody) {
        preconditionFailure("a session writing through the shared frame buffer produced other bytes: \(failure)")
    }
    return 0
}

/// A process-wide budget below one session's own (48 KB against 64 KB), so that inputs reach
/// both bounds.
let fuzzBudgetLimit = 48 * 1024

/// Feeds `bytes` in two reads (split where the input's last byte says), answers every request, produces
/// output; after each step the session holds state only for streams nghttp2 has open, and the
/// fields it holds are counted and within both budgets. Once it ends, the budget is whole again.
func exerciseHTTP2(_ bytes: [UInt8]) {
    let budget = RequestBudget(limit: fuzzBudgetLimit)
    exerciseHTTP2(bytes, budget: budget)
    precondition(budget.inUse == 0, "an ended session left \(budget.inUse) bytes counted in the process budget")
}

func exerciseHTTP2(_ bytes: [UInt8], budget: RequestBudget) {
    let session = HTTP2Session(budget: budget)
    var output: [UInt8] = []
    session.produce(into: &output, limit: 1 << 16)
    // Split where the input's last byte says, scaled over the whole input: a valid first frame
    // begins with its length's high byte, always 0, so taking the split from there fed every
    // meaningful input in one read after the preface, and no frame ever arrived in two.
    let split =
        bytes.count > clientPreface.count
        ? clientPreface.count + Int(bytes[bytes.count - 1]) * (bytes.count - clientPreface.count) / 255 : bytes.count
    for piece in [bytes[..<split], bytes[split...]] where !piece.isEmpty {
        let alive = piece.withUnsafeBytes { session.receive($0, now: 0) }
        precondition(session.heldBytesAreCounted, "held bytes miscounted or over HTTP2Session.maximumHeldBytes")
        // At the end of a read everything held was checked against the process budget (a
        // request whose stream-ending frame is still arriving included).
        precondition(session.heldBytes <= fuzzBudgetLimit, "held bytes past the process budget at the end of a read")
        precondition(budget.inUse == session.heldBytes, "the process budget does not match what the session holds")
        session.answer { request in
            precondition(request.stream > 0 && request.stream % 2 == 1, "a request on a stream the client cannot open")
            // The server's own field handling, on the request's values, through the same view
            // the server answers from.
            let notModified = request.withFields { target, path, authority, inm, ims, _ in
                precondition(path.count <= target.count, "a path longer than its target")
                _ = authority.map(HTTPFields.normalizeHost)
                return HTTPFields.notModified(etag: "\"abc\"", lastModified: 784_111_777, ifNoneMatch: inm, ifModifiedSince: ims)
            }
            session.respond(
                stream: request.stream, status: notModified ? .notModified : .ok, fields: responseHeaders,
                date: Array("Sun, 06 Nov 1994 08:49:37 GMT".utf8),
                body: responseBody, sendsBody: !notModified && request.method == .get)
        }
        precondition(session.heldStreamsAreOpen, "state kept for a stream nghttp2 closed")
        for _ in 0..<64 where session.wantsWrite {
            output.removeAll(keepingCapacity: true)
            session.produce(into: &output, limit: 1 << 16)
            if output.isEmpty { break }
        }
        precondition(session.heldStreamsAreOpen, "state kept for a stream nghttp2 closed")
        precondition(session.activeStreams <= 2 * Int(HTTP2Session.maximumConcurrentStreams) + 2, "streams beyond the concurrency bound")
        precondition(session.heldBytesAreCounted && budget.inUse == session.heldBytes, "held bytes miscounted after output")
        if !alive { break }
    }
}
