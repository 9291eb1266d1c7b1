import HTTPCore
import Testing

@testable import HTTPServer

/// Answers every request with a fixed body and records what it saw: the state machine's
/// decisions, tested without sockets, TLS or a snapshot.
private struct RecordingAnswerer: RequestAnswering {
    var dateLine: DateLine = {
        var line = DateLine()
        line.update(now: 784_111_777)
        return line
    }()
    var bodySize = 10
    /// Answers ask for the connection to close (as plain HTTP's redirect to HTTPS does).
    var closing = false
    var paths: [String] = []
    var refused: [Status] = []

    mutating func answer(_ request: RequestView, peer: Peer, tls: Responder.TLSIdentity) -> Response {
        paths.append(String(decoding: request.path, as: UTF8.self))
        let body = [UInt8](repeating: 120, count: bodySize)
        let fields = PreparedFields([(name: "Content-Length", value: "\(body.count)")])
        return Response(status: .ok, headers: fields, body: body, sendsBody: true, close: closing).answering(request.method)
    }

    mutating func refuse(_ status: Status, peer: Peer) -> Response {
        refused.append(status)
        return .error(status, close: true)
    }
}

private typealias Context = ConnectionContext<RecordingAnswerer>

private func makeContext(now: Int64 = 1_000, bodySize: Int = 10) -> Context {
    var answerer = RecordingAnswerer()
    answerer.bodySize = bodySize
    return Context(now: now, milliseconds: now * 1000, limits: Limits(), answerer: answerer)
}

private func plainMachine(_ context: Context) -> ConnectionMachine {
    ConnectionMachine(peer: Peer(fd: -1, client: "-", isAdmin: false, counted: nil), tls: false, now: context.now, limits: context.limits)
}

private func request(_ path: String, close: Bool = false) -> [UInt8] {
    Array("GET \(path) HTTP/1.1\r\nHost: a.test\r\n\(close ? "Connection: close\r\n" : "")\r\n".utf8)
}

/// Runs the machine's decision the way the worker does with a socket that takes at most
/// `socketTakes` bytes per write (nil: everything); returns the bytes "written" and the final
/// decision.
private func run(
    _ machine: inout ConnectionMachine, _ first: ConnectionMachine.Next, _ context: inout Context, socketTakes: Int? = nil,
    written: inout [UInt8]
) -> ConnectionMachine.Next {
    var next = first
    for _ in 0..<100_000 {
        guard next == .write else { return next }
        if machine.hasPendingOutput {
            next = machine.enqueue(&context)
            continue
        }
        let n = min(context.out.count, socketTakes ?? .max)
        written += context.out[..<n]
        next = machine.sent(n, &context)
    }
    Issue.record("the machine kept asking to write")
    return next
}

/// Counts HTTP/1.1 status lines in a byte stream.
private func responses(in bytes: [UInt8]) -> Int {
    let marker = Array("HTTP/1.1 200 OK\r\n".utf8)
    guard bytes.count >= marker.count else { return 0 }
    var count = 0
    var i = 0
    while i + marker.count <= bytes.count {
        if bytes[i] == 72 && bytes[i..<(i + marker.count)].elementsEqual(marker) {
            count += 1
            i += marker.count
        } else {
            i += 1
        }
    }
    return count
}

@Suite("Connection state machine")
struct ConnectionMachineTests {
    @Test("three pipelined requests split at every byte get three answers, in order")
    func everySplit() {
        let stream = request("/a") + request("/b") + request("/c")
        for split in 0...stream.count {
            var context = makeContext()
            var machine = plainMachine(context)
            var written: [UInt8] = []
            for piece in [stream[..<split], stream[split...]] where !piece.isEmpty {
                let next = piece.withUnsafeBytes { machine.received($0, &context) }
                #expect(run(&machine, next, &context, written: &written) == .wait, "split \(split)")
            }
            #expect(context.answerer.paths == ["/a", "/b", "/c"], "split \(split)")
            #expect(responses(in: written) == 3, "split \(split)")
            #expect(machine.bufferedInput == 0 && machine.phase == .readingRequest(started: false), "split \(split)")
            #expect(machine.inputCapacity == 0, "split \(split): an idle connection keeps no input storage")
        }
    }

    @Test("a large partial request left idle keeps its bytes, is answered once the rest arrives, and leaves no storage behind")
    func partialRequestThenIdle() {
        // An attacker's shape: a long head sent in part, the connection left idle, then finished.
        // The bytes must survive the wait; once answered, the connection must not keep the
        // buffer's capacity for as long as it stays open.
        var context = makeContext()
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let filler = String(repeating: "x", count: 12_000)
        let head = Array("GET /big HTTP/1.1\r\nHost: a.test\r\nX-Filler: \(filler)\r\n\r\n".utf8) + request("/next")
        let cut = head.count / 2
        var next = head[..<cut].withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .wait)
        #expect(machine.bufferedInput == cut && context.answerer.paths.isEmpty)
        next = head[cut...].withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .wait)
        #expect(context.answerer.paths == ["/big", "/next"])
        #expect(responses(in: written) == 2)
        #expect(machine.bufferedInput == 0 && machine.inputCapacity == 0)
    }

    @Test("an unfinished head arms the request timeout; a complete request the idle timeout")
    func requestAndIdleDeadlines() {
        var context = makeContext(now: 500)
        var machine = plainMachine(context)
        #expect(machine.deadline == 500 + context.limits.idleTimeout)
        var written: [UInt8] = []
        let head = request("/a")
        context.now = 510
        var next = head[..<5].withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .wait)
        #expect(machine.phase == .readingRequest(started: true))
        #expect(machine.deadline == 510 + context.limits.requestTimeout)
        // More bytes of the same head do not extend it (slowloris).
        context.now = 515
        next = head[5..<10].withUnsafeBytes { machine.received($0, &context) }
        _ = run(&machine, next, &context, written: &written)
        #expect(machine.deadline == 510 + context.limits.requestTimeout)
        context.now = 518
        next = head[10...].withUnsafeBytes { machine.received($0, &context) }
        _ = run(&machine, next, &context, written: &written)
        #expect(machine.phase == .readingRequest(started: false))
        #expect(machine.deadline == 518 + context.limits.idleTimeout)
    }

    @Test("part of a TLS record on an idle connection arms the request timeout, once; a complete request the idle timeout again")
    func partialRecordArmsRequestTimeout() {
        var context = makeContext(now: 500)
        var machine = plainMachine(context)
        context.now = 510
        machine.partialInput(&context)
        #expect(machine.phase == .readingRequest(started: true))
        #expect(machine.deadline == 510 + context.limits.requestTimeout)
        context.now = 515
        machine.partialInput(&context)
        #expect(machine.deadline == 510 + context.limits.requestTimeout, "more partial input must not extend it")
        var written: [UInt8] = []
        let next = request("/a").withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .wait)
        #expect(machine.phase == .readingRequest(started: false))
        #expect(machine.deadline == 515 + context.limits.idleTimeout)
    }

    @Test("200 pipelined requests with a blocked writer: reading pauses, every request is answered as the socket drains")
    func pipeliningWithBlockedWriter() {
        var context = makeContext(bodySize: 100 * 1024)
        var machine = plainMachine(context)
        let stream = (0..<200).flatMap { request("/r\($0)") }
        var written: [UInt8] = []
        // The socket takes nothing at first: output is kept, reading stops, the write timeout runs.
        var next = stream.withUnsafeBytes { machine.received($0, &context) }
        next = run(&machine, next, &context, socketTakes: 0, written: &written)
        #expect(next == .wait)
        #expect(machine.phase == .writing && !machine.wants.read && machine.wants.write)
        #expect(machine.hasPendingOutput)
        #expect(machine.deadline == context.now + context.limits.writeTimeout)
        #expect(machine.bufferedInput > 0, "the requests not yet answered are kept, not dropped")
        // Then it drains 64 KB per writable event, and never needs another read.
        var events = 0
        while events < 10_000 {
            events += 1
            if machine.hasPendingOutput {
                let chunk = min(64 * 1024, machine.output.count - machine.outputOffset)
                written += machine.output[machine.outputOffset..<(machine.outputOffset + chunk)]
                next = machine.flushed(chunk, &context)
            } else {
                next = machine.flushed(0, &context)
            }
            next = run(&machine, next, &context, socketTakes: 64 * 1024, written: &written)
            #expect(next == .wait)
            if machine.phase == .readingRequest(started: false) && machine.bufferedInput == 0 && !machine.hasPendingOutput { break }
        }
        #expect(context.answerer.paths.count == 200)
        #expect(responses(in: written) == 200)
        #expect(written.count == 200 * (100 * 1024) + 200 * responseHeadSize(context))
    }

    @Test("answering already-read requests yields after its rounds and asks for writability, not input")
    func roundsYieldToWritability() {
        var context = makeContext(bodySize: 64 * 1024)
        var machine = plainMachine(context)
        let stream = (0..<(context.limits.answerRoundsPerEvent + 8)).flatMap { request("/r\($0)") }
        var written: [UInt8] = []
        let next = stream.withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .wait)
        #expect(machine.phase == .writing && machine.wants.write && !machine.hasPendingOutput)
        #expect(context.answerer.paths.count < context.limits.answerRoundsPerEvent + 8)
        // The writable event answers the rest.
        _ = run(&machine, machine.flushed(0, &context), &context, written: &written)
        #expect(context.answerer.paths.count == context.limits.answerRoundsPerEvent + 8)
    }

    @Test("a stop while a response is pending lets it finish, then lingers; an idle connection closes at once, a new one after a second")
    func stopWhileWriting() {
        var context = makeContext(bodySize: 200 * 1024)
        var machine = plainMachine(context)
        var written: [UInt8] = []
        var next = request("/big").withUnsafeBytes { machine.received($0, &context) }
        next = run(&machine, next, &context, socketTakes: 1000, written: &written)
        #expect(next == .wait && machine.hasPendingOutput)
        context.draining = true
        #expect(machine.stop(&context) == .wait, "a busy connection is not cut")
        let pending = machine.output.count - machine.outputOffset
        written += machine.output[machine.outputOffset...]
        // Lingering, not closing: a request sent meanwhile may be unread in the socket, and a
        // close over it would reset the connection and lose the response's unsent tail.
        #expect(machine.flushed(pending, &context) == .linger)
        #expect(responses(in: written) == 1)
        #expect(written.count == 200 * 1024 + responseHeadSize(makeContext(bodySize: 200 * 1024)))

        // A new connection gets a second for the request it was opened for, and so does one
        // that has been answered and sits idle (its next request may be on the way).
        var fresh = plainMachine(context)
        #expect(fresh.stop(&context) == .wait)
        #expect(fresh.deadline <= (context.milliseconds + ConnectionMachine.stopGraceMilliseconds + 999) / 1000)
        var idle = plainMachine(context)
        var idleWritten: [UInt8] = []
        context.draining = false
        let answered = request("/small").withUnsafeBytes { idle.received($0, &context) }
        _ = run(&idle, answered, &context, socketTakes: 1 << 20, written: &idleWritten)
        context.draining = true
        #expect(idle.stop(&context) == .wait)
        #expect(idle.deadline <= (context.milliseconds + ConnectionMachine.stopGraceMilliseconds + 999) / 1000)
        #expect(!idle.endsWithStop(context))
        // Once the grace is over it closes as the stop's, not as a timeout.
        context.milliseconds += ConnectionMachine.stopGraceMilliseconds
        #expect(idle.endsWithStop(context))
    }

    /// Two pipelined requests on a context `prepare` set up: only the first is answered, with
    /// Connection: close, and the connection lingers after it.
    private func expectClosedAfterFirst(_ prepare: (inout Context) -> Void) {
        var context = makeContext()
        prepare(&context)
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let next = (request("/a") + request("/b")).withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .linger)
        #expect(context.answerer.paths == ["/a"])
        #expect(String(decoding: written, as: UTF8.self).contains("Connection: close\r\n"))
    }

    @Test("a request answered while stopping says Connection: close and lingers after it")
    func answerWhileStopping() {
        expectClosedAfterFirst { $0.draining = true }
    }

    @Test("an answer that asks to close says Connection: close on a keep-alive request and lingers; the pipelined one is not answered")
    func answerAsksToClose() {
        expectClosedAfterFirst { $0.answerer.closing = true }
    }

    @Test("a malformed request is refused once, and the connection lingers after the answer")
    func badRequest() {
        var context = makeContext()
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let next = Array("GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n".utf8).withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, written: &written) == .linger)
        #expect(context.answerer.refused == [.badRequest])
        #expect(String(decoding: written, as: UTF8.self).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        machine.linger(&context)
        #expect(machine.phase == .lingering && machine.deadline == context.now + context.limits.lingerTimeout)
    }

    @Test("a started head behind a blocked response keeps the request timeout once the response is out (slowloris)")
    func startedHeadAfterFlush() {
        // A response under the high-water mark: the next head is parsed (and found unfinished)
        // before the write, which the socket takes only in part.
        var context = makeContext(now: 100, bodySize: 10 * 1024)
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let stream = request("/a") + Array("GET /b HTTP/1.1\r\nHo".utf8)
        let next = stream.withUnsafeBytes { machine.received($0, &context) }
        #expect(run(&machine, next, &context, socketTakes: 1000, written: &written) == .wait)
        #expect(machine.phase == .writing && machine.bufferedInput > 0)
        context.now = 103
        let pending = machine.output.count - machine.outputOffset
        #expect(run(&machine, machine.flushed(pending, &context), &context, written: &written) == .wait)
        #expect(machine.phase == .readingRequest(started: true))
        #expect(machine.deadline == 103 + context.limits.requestTimeout, "an unfinished head must not get the idle timeout")
    }

    @Test("a partial write arms the write timeout; progress extends it, no progress does not")
    func writeTimeout() {
        var context = makeContext(now: 100, bodySize: 300 * 1024)
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let next = request("/a").withUnsafeBytes { machine.received($0, &context) }
        _ = run(&machine, next, &context, socketTakes: 10, written: &written)
        #expect(machine.deadline == 100 + context.limits.writeTimeout)
        context.now = 120
        #expect(machine.flushed(0, &context) == .wait)
        #expect(machine.deadline == 100 + context.limits.writeTimeout)
        #expect(machine.flushed(5, &context) == .wait)
        #expect(machine.deadline == 120 + context.limits.writeTimeout)
    }

    @Test("new output while output is pending goes after it")
    func enqueueKeepsOrder() {
        var context = makeContext(bodySize: 100)
        var machine = plainMachine(context)
        var written: [UInt8] = []
        let next = request("/a").withUnsafeBytes { machine.received($0, &context) }
        _ = run(&machine, next, &context, socketTakes: 7, written: &written)
        let pendingBefore = Array(machine.output[machine.outputOffset...])
        context.out = Array("LATER".utf8)
        #expect(machine.enqueue(&context) == .wait)
        #expect(context.out.isEmpty)
        #expect(Array(machine.output[machine.outputOffset...]) == pendingBefore + Array("LATER".utf8))
    }

    @Test("TLS: nothing is read before the handshake; ALPN h2 sends SETTINGS first and then speaks HTTP/2")
    func handshakeChoosesProtocol() {
        var context = makeContext()
        let peer = Peer(fd: -1, client: "-", isAdmin: false, counted: .https)
        var machine = ConnectionMachine(peer: peer, tls: true, now: context.now, limits: context.limits)
        #expect(machine.phase == .handshaking)
        #expect(machine.deadline == context.now + context.limits.handshakeTimeout)
        #expect(request("/a").withUnsafeBytes { machine.received($0, &context) } == .close)

        var h2 = ConnectionMachine(peer: peer, tls: true, now: context.now, limits: context.limits)
        #expect(h2.handshakeCompleted(.http2, identity: .none, &context) == .write)
        // A SETTINGS frame: 9-byte header with type 0x4 on stream 0.
        #expect(context.out.count >= 9 && context.out[3] == 0x4)
        #expect(h2.sent(context.out.count, &context) == .wait)
        guard case .http2 = h2.framing else {
            Issue.record("ALPN h2 did not choose HTTP/2")
            return
        }
        var h1 = ConnectionMachine(peer: peer, tls: true, now: context.now, limits: context.limits)
        #expect(h1.handshakeCompleted(.http1, identity: .none, &context) == .wait)
        #expect(context.out.isEmpty)
    }
}

extension ConnectionMachineTests {
    @Test("acme-tls/1: the handshake ends the connection (close_notify, then linger); bytes after it are never parsed")
    func acmeTLSNeverReadsRequests() {
        var context = makeContext()
        let peer = Peer(fd: -1, client: "-", isAdmin: false, counted: .https)
        var machine = ConnectionMachine(peer: peer, tls: true, now: context.now, limits: context.limits)
        // RFC 8737 §4: acme-tls/1 carries no application data; the server ends it at once.
        #expect(machine.handshakeCompleted(.acmeTLS, identity: .none, &context) == .linger)
        #expect(context.out.isEmpty)
        guard case .acmeTLS = machine.framing else {
            Issue.record("acme-tls/1 did not choose its own framing")
            return
        }
        machine.linger(&context)
        #expect(machine.phase == .lingering && machine.deadline == context.now + context.limits.lingerTimeout)
        // A request sent after the handshake, whole or at any split: nothing is answered or written.
        let bytes = request("/.well-known/apple-app-site-association") + request("/a")
        for split in 0...bytes.count {
            for piece in [bytes[..<split], bytes[split...]] where !piece.isEmpty {
                #expect(piece.withUnsafeBytes { machine.received($0, &context) } == .close, "split \(split)")
            }
        }
        #expect(context.answerer.paths.isEmpty && context.answerer.refused.isEmpty)
        #expect(context.out.isEmpty && !machine.hasPendingOutput && machine.bufferedInput == 0)
        // A graceful stop has nothing to add; an output event ends it as well.
        context.draining = true
        #expect(machine.stop(&context) == .wait && context.out.isEmpty)
        #expect(machine.sent(0, &context) == .linger)
    }
}

/// Bytes of one 200 head as the recording answerer's responses are framed.
private func responseHeadSize(_ context: Context) -> Int {
    var out: [UInt8] = []
    Response(
        status: .ok, headers: PreparedFields([(name: "Content-Length", value: "\(context.answerer.bodySize)")]), body: [], sendsBody: false,
        close: false
    ).serialize(into: &out, dateLine: context.answerer.dateLine.bytes)
    return out.count
}
