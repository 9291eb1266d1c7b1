import HTTP1
import HTTP2
import HTTPCore

// Longer than 400 lines on purpose: one connection's phases and every transition between them, for
// both framings, read as one table; split, a phase change would be made in several files.

/// What a connection's state machine needs from its worker for one event: the time, the limits,
/// whether the server is stopping, where output goes, and who answers requests.
struct ConnectionContext<Answerer: RequestAnswering> {
    /// Monotonic seconds, rounded up: every deadline is counted from here, and the worker
    /// compares deadlines with the time rounded down, so a timeout never fires early (it fires
    /// up to a second late).
    var now: Int64
    /// Monotonic milliseconds, for HTTP/2's rapid-reset window.
    var milliseconds: Int64
    var limits: Limits
    /// The server is stopping: every connection closes after its current response.
    var draining = false
    /// Bytes to write. The machine appends; the worker writes them and empties the buffer (one
    /// buffer per worker, its capacity kept, so a response that the socket takes whole is never
    /// copied a second time).
    var out: [UInt8] = []
    var answerer: Answerer
    /// What every worker's incomplete requests hold together (nil: only each session's bound).
    var budget: RequestBudget?
    /// The frame buffer the worker's HTTP/2 sessions share (nil: each its own).
    var frameBuffer: SharedFrameBuffer?
    /// HTTP/2 streams refused since the worker last counted them.
    var streamsRefused = 0
    /// The last served file's head as written, in both framings (`FileHeadCache`).
    var heads = FileHeadCache()
    /// The admin worker's count of unsent bytes, kept in line before each request is answered
    /// (`ConnectionMachine.settle`); nil on other workers.
    var adminOutput: AdminOutput?
}

/// One connection's protocol state, apart from its socket (hummingbird's connection state
/// machine; h2o's protocol handlers apart from its socket layer): a value that takes events
/// (bytes received, bytes sent, handshake done, stop) and says what the worker does next. The
/// worker owns the socket, TLS, epoll interest and the timer wheel; the machine owns phases,
/// deadlines, buffered input and pending output, and the protocol chosen once after ALPN.
///
/// Deadlines and interest are state, not actions: after each step the worker reconciles the
/// timer and epoll with `wants`.
///
/// (One file of about 400 lines on purpose: every transition of both protocols reads against the
/// same few fields, and is checked here as a whole.)
struct ConnectionMachine {
    /// Where the connection is in a request's life (named as nginx names its phases).
    enum Phase: Equatable {
        /// TLS handshake in progress.
        case handshaking
        /// Waiting for (the rest of) a request; `started` once its first byte arrived (HTTP/1.1)
        /// or while a stream is incomplete (HTTP/2).
        case readingRequest(started: Bool)
        /// Output pending that the socket would not take yet, or queued requests waiting for
        /// the next writable event; reading is paused (back-pressure).
        case writing
        /// HTTP/1.1 on the admin listener: a request's answer is being made on another thread
        /// (`PendingAnswer`); nothing is read (pipelined requests wait behind it) until it is
        /// given, and only a hang-up is watched for.
        case answering
        /// The last response is out; the write side is shut and input is read and dropped until
        /// the peer closes, so a late pipelined request cannot turn into a reset that destroys
        /// the response (nginx's lingering close).
        case lingering
    }

    /// The protocol, chosen once: plain connections speak HTTP/1.1; TLS ones what ALPN chose
    /// (h2o's on_ssl_handshake_complete). A closed set: a new protocol is a case here and a
    /// branch in `received`, nowhere else (as `acmeTLS` was).
    enum Framing {
        /// TLS before the handshake is done.
        case undecided
        case http1
        case http2(HTTP2Session)
        /// A TLS-ALPN-01 validation (RFC 8737): `acme-tls/1` carries no application data (§4),
        /// so the connection ends right after the handshake, and nothing the client sends is
        /// ever parsed.
        case acmeTLS
    }

    /// What the TLS handshake settled for the connection: ALPN's choice, or the challenge
    /// certificate that makes it `acme-tls/1`.
    enum Negotiated: Equatable {
        case http1
        case http2
        case acmeTLS
    }

    /// What the worker does next.
    enum Next: Equatable {
        /// Write `context.out` and report how much went with `sent(_:_:)` (never said while
        /// output is pending: new output then queues behind it).
        case write
        /// Wait for readiness or the deadline (see `wants`).
        case wait
        /// Shut the write side and drain input until the peer closes; then `linger(_:)`.
        case linger
        /// Close now.
        case close
    }

    let peer: Peer
    private(set) var phase: Phase
    private(set) var framing: Framing
    /// Monotonic second at which the current phase times out.
    private(set) var deadline: Int64
    /// The certificate the TLS handshake chose, for the 421 rule.
    private(set) var tlsIdentity: Responder.TLSIdentity = .none
    private var parser = HTTP1Parser()
    /// Bytes read but not answered yet, from `inputOffset` on: an unfinished request head, or
    /// pipelined requests waiting for the socket to take earlier responses (empty almost always:
    /// complete requests are parsed straight from the worker's read buffer). The worker stops
    /// reading at `Limits.maximumBufferedInput`.
    private var input: [UInt8] = []
    /// Where the unanswered input starts. Answering moves it; the array is compacted only when
    /// the answered part is at least half of it, so a long pipeline costs linear work.
    private var inputOffset = 0
    /// What this connection's unsent output counts in the admin worker's `AdminOutput` (`settle`).
    var account = AdminOutput.Account()
    /// Output the socket did not take yet, from `outputOffset` on.
    private(set) var output: [UInt8] = []
    private(set) var outputOffset = 0
    /// Output pending after `output`, each sent whole in turn and never copied into it: a large
    /// admin answer's body, the same storage as other connections' answers of one render.
    private var later: [[UInt8]] = []
    /// The shared body while any of it is unsent: in `later`, or `output` itself.
    private(set) var sharedBody: [UInt8]?
    /// `output` is `sharedBody`: new output goes in `later`, never into it (a copy).
    private var outputIsShared = false
    /// Close once the pending output is written.
    private var closeAfterWrite = false
    /// Milliseconds an idle connection is given, once a stop begins, for a request on its way
    /// (HTTP/1.1), or for streams sent before the client saw the first GOAWAY (HTTP/2).
    static let stopGraceMilliseconds: Int64 = 1000
    /// Until when that grace runs (monotonic milliseconds); set by the first `stop`.
    private var graceUntilMilliseconds: Int64?
    /// The second the timer wheel files the grace's end at (never before it).
    private var graceUntil: Int64? { graceUntilMilliseconds.map { ($0 + 999) / 1000 } }

    /// Whether a stop's grace has run out.
    private func graceOver<A>(_ context: ConnectionContext<A>) -> Bool {
        graceUntilMilliseconds.map { context.milliseconds >= $0 } ?? false
    }

    /// An idle connection whose stop grace ran out: it closes without counting as a timeout.
    func endsWithStop<A>(_ context: ConnectionContext<A>) -> Bool {
        context.draining && graceOver(context) && phase == .readingRequest(started: false)
    }
    /// HTTP/1.1: answering stopped at the output high-water mark (or, on the admin listener,
    /// after one answer) with input left, so complete requests may be waiting.
    private var queued = false
    /// HTTP/1.1: rounds of answering already-read requests left in this readiness event
    /// (`Limits.answerRoundsPerEvent`); none after an admin answer (one a turn).
    private var rounds = 0
    /// HTTP/1.1: the request waiting for its answer from another thread, and whether its
    /// connection stays open after it.
    private var awaiting: (deferred: AdminEndpoint.Deferred, keepAlive: Bool)?
    /// Seconds a connection waits for an answer made on another thread before it is closed: the
    /// longest render of `/sites` measured is well under it (docs/benchmarks.md).
    static let answerTimeout: Int64 = 300
    /// HTTP/2: the second since which the session has held incomplete requests without
    /// completing one.
    private var incompleteSince: Int64?
    /// HTTP/2: the session's count of completed requests when the deadline was last set.
    private var completedSeen = 0
    /// HTTP/2: since when the session has held no incomplete request, `incompleteSince` kept.
    private var settledSince: Int64?

    init(peer: Peer, tls: Bool, now: Int64, limits: Limits) {
        self.peer = peer
        phase = tls ? .handshaking : .readingRequest(started: false)
        framing = tls ? .undecided : .http1
        deadline = now + (tls ? limits.handshakeTimeout : limits.idleTimeout)
    }

    var hasPendingOutput: Bool { outputOffset < output.count || !later.isEmpty }

    /// Pending bytes that are this connection's alone: all but `sharedBody`.
    var unsharedPending: Int {
        let first = outputIsShared ? 0 : output.count - outputOffset
        let rest = later.reduce(0) { $0 + $1.count }
        return first + rest - (sharedBody != nil && !outputIsShared ? sharedBody!.count : 0)
    }

    /// The next segment of `later` becomes the output, once `output` is all written.
    private mutating func advanceOutput() {
        guard outputOffset >= output.count, !later.isEmpty else { return }
        if outputIsShared { sharedBody = nil }
        output = later.removeFirst()
        outputOffset = 0
        outputIsShared = sharedBody.map { AdminOutput.key($0) == AdminOutput.key(output) } ?? false
    }
    /// Input read and not yet answered.
    var bufferedInput: Int { input.count - inputOffset }
    /// What the worker arranges after a step, read in one access: epoll interest (outside the
    /// handshake, during which the worker follows TLS's wishes), the deadline, and whether the
    /// connection is reading requests.
    struct Wants {
        var read: Bool
        var write: Bool
        var deadline: Int64
        var handshaking: Bool
        var readingRequests: Bool
        /// Waiting for an answer made on another thread (phase `answering`).
        var answering = false
    }

    var wants: Wants {
        let reading: Bool
        if case .readingRequest = phase { reading = true } else { reading = false }
        return Wants(
            read: phase != .writing && phase != .answering, write: phase == .writing, deadline: deadline,
            handshaking: phase == .handshaking, readingRequests: reading, answering: phase == .answering)
    }

    // MARK: - Events

    /// The TLS handshake finished: ALPN's choice is final. HTTP/2 sends its SETTINGS first;
    /// `acme-tls/1` ends the connection: close_notify, then the lingering close, during which
    /// input is dropped unread (RFC 8737 §4: the validation is the handshake itself).
    mutating func handshakeCompleted<A>(
        _ negotiated: Negotiated, identity: Responder.TLSIdentity, _ context: inout ConnectionContext<A>
    ) -> Next {
        tlsIdentity = identity
        phase = .readingRequest(started: false)
        deadline = context.now + context.limits.idleTimeout
        switch negotiated {
        case .http1:
            framing = .http1
            return .wait
        case .http2:
            let session = HTTP2Session(budget: context.budget, frameBuffer: context.frameBuffer)
            framing = .http2(session)
            session.produce(into: &context.out, limit: context.limits.outputHighWater)
            return .write
        case .acmeTLS:
            framing = .acmeTLS
            closeAfterWrite = true
            return .linger
        }
    }

    /// Bytes arrived (the worker reads only while `wants.read`). Their answers are appended to
    /// `context.out`.
    mutating func received<A>(_ bytes: UnsafeRawBufferPointer, _ context: inout ConnectionContext<A>) -> Next {
        switch framing {
        case .undecided:
            return .close  // the worker reads requests only after the handshake
        case .acmeTLS:
            return .close  // never parsed: acme-tls/1 has no application data (RFC 8737 §4)
        case .http2(let session):
            // A session that ended (GOAWAY sent for a protocol error) closes once its last frames are out.
            let refused = session.refusedStreams
            if !session.receive(bytes, now: context.milliseconds) { closeAfterWrite = true }
            context.streamsRefused += session.refusedStreams - refused
            answerHTTP2(session, &context)
            setHTTP2Deadline(session, context)
            return .write
        case .http1:
            rounds = context.limits.answerRoundsPerEvent
            if bufferedInput == 0 {
                // The common case: requests parsed straight from the read buffer, no copy.
                let (consumed, more) = answerHTTP1(bytes, &context)
                queued = more
                if consumed < bytes.count {
                    clearInput()
                    appendInput(UnsafeRawBufferPointer(rebasing: bytes[consumed...]))
                }
            } else {
                appendInput(bytes)
                queued = answerInput(&context)
            }
            return .write
        }
    }

    /// The transport holds input that is not bytes yet (part of a TLS record). On an idle
    /// connection that is a request begun: the request timeout applies (slowloris one layer
    /// down), never extended by more partial input.
    mutating func partialInput<A>(_ context: inout ConnectionContext<A>) {
        guard phase == .readingRequest(started: false) else { return }
        phase = .readingRequest(started: true)
        deadline = context.now + context.limits.requestTimeout
    }

    /// The worker wrote `written` bytes of `context.out` (there was no pending output). What the
    /// socket did not take is kept, and the connection waits for writability.
    mutating func sent<A>(_ written: Int, _ context: inout ConnectionContext<A>) -> Next {
        if written < context.out.count || !later.isEmpty {
            output = Array(context.out[written...])
            outputOffset = 0
            advanceOutput()
            context.out.removeAll(keepingCapacity: true)
            phase = .writing
            deadline = context.now + context.limits.writeTimeout
            return .wait
        }
        context.out.removeAll(keepingCapacity: true)
        return outputDone(flushed: false, &context)
    }

    /// New output while older output is still pending goes after it, never ahead of it: written
    /// first it would land inside a half-sent HTTP/2 frame (GOAWAY on a graceful stop) or break
    /// OpenSSL's rule that a retried write repeats the same bytes.
    mutating func enqueue<A>(_ context: inout ConnectionContext<A>) -> Next {
        if outputIsShared || !later.isEmpty {
            later.append(context.out)
            context.out.removeAll(keepingCapacity: true)
            return .wait
        }
        if outputOffset > 0 {
            output.removeFirst(outputOffset)
            outputOffset = 0
        }
        output.append(contentsOf: context.out)
        context.out.removeAll(keepingCapacity: true)
        return .wait
    }

    /// The socket was writable and took `written` bytes of the pending output (none may have
    /// been pending: queued requests waiting for their turn).
    mutating func flushed<A>(_ written: Int, _ context: inout ConnectionContext<A>) -> Next {
        outputOffset += written
        advanceOutput()
        if hasPendingOutput {
            // The write timeout is between two writes that make progress (nginx's send_timeout).
            if written > 0 { deadline = context.now + context.limits.writeTimeout }
            return .wait
        }
        output = []
        outputOffset = 0
        sharedBody = nil
        outputIsShared = false
        rounds = context.limits.answerRoundsPerEvent
        return outputDone(flushed: true, &context)
    }

    /// The server is stopping: HTTP/2 sends the first of its two GOAWAYs; an idle HTTP/1.1
    /// connection gets a second for a next request, then closes; a busy one closes after its
    /// current response.
    mutating func stop<A>(_ context: inout ConnectionContext<A>) -> Next {
        if graceUntilMilliseconds == nil { graceUntilMilliseconds = context.milliseconds + Self.stopGraceMilliseconds }
        switch framing {
        case .http2(let session):
            // RFC 9113 §6.8: a GOAWAY that refuses nothing yet, a second for the streams the
            // client sent before seeing it (and for a new session's first request), then the
            // GOAWAY naming the last stream served (`graceEnded`, or `outputDone` once idle).
            session.shutdownNotice()
            // A response being written keeps its write timeout.
            if phase != .writing, let graceUntil { deadline = min(deadline, graceUntil) }
            session.produce(into: &context.out, limit: context.limits.outputHighWater)
            if context.out.isEmpty { return .wait }
            // The only event that can produce output while output is pending.
            return hasPendingOutput ? enqueue(&context) : .write
        case .http1:
            if phase == .readingRequest(started: false) && bufferedInput == 0 && !hasPendingOutput {
                // Its next request may be on the way: a kept-alive client sends without waiting,
                // and a new connection was made as the stop began. A second to send it, answered
                // with `Connection: close`, rather than a close it would race (and have to retry
                // on another connection); then it closes like an idle one.
                if let graceUntil { deadline = min(deadline, graceUntil) }
            }
            return .wait
        case .undecided:
            return .wait  // it may still send a request; the handshake timeout bounds it
        case .acmeTLS:
            return .wait  // already lingering; the linger timeout bounds it
        }
    }

    /// The stop's grace is over (its deadline came): an HTTP/2 session sends the GOAWAY naming
    /// the last stream it served, finishes the streams in flight and ends. nil: nothing to do but
    /// the timeout (an HTTP/1.1 connection still idle closes).
    mutating func graceEnded<A>(_ context: inout ConnectionContext<A>) -> Next? {
        guard context.draining, graceOver(context), case .http2(let session) = framing, !session.goingAway, session.isAlive else {
            return nil
        }
        session.goAway()
        session.produce(into: &context.out, limit: context.limits.outputHighWater)
        let busy = session.activeStreams > 0 || hasPendingOutput || !context.out.isEmpty
        // What is left to send gets the write timeout; the drain timeout bounds it all.
        if busy { deadline = context.now + context.limits.writeTimeout }
        if context.out.isEmpty { return busy ? .wait : .linger }
        return hasPendingOutput ? enqueue(&context) : .write
    }

    /// The request a `PendingAnswer` held (phase `answering`, or `writing` what came before it)
    /// is what is waited for. nil: none.
    var awaited: AdminEndpoint.Deferred? { awaiting?.deferred }

    /// The answer the connection waited for is given: it is sent, then the requests read after it
    /// are answered.
    mutating func answered<A>(_ response: Response, _ context: inout ConnectionContext<A>) -> Next {
        guard let waited = awaiting else { return .wait }
        awaiting = nil
        let behind = hasPendingOutput
        var response = response
        response.close = response.close || !waited.keepAlive || context.draining
        let shared = sharing(&response)
        response.serialize(into: &context.out, dateLine: context.answerer.dateLine.bytes, heads: &context.heads)
        if response.close {
            closeAfterWrite = true
            clearInput()
        } else {
            // The requests after it wait for the next turn, as after any admin answer.
            queued = bufferedInput > 0
            rounds = 0
        }
        // Output before it still pending: this one queues behind it, and the socket's
        // writability is what is waited for. Kept though the admin listener, the only one that
        // defers, answers one request a turn (so a deferred ask finds nothing pending there):
        // the tests drive it on another listener (ConnectionMachineDeferredTests).
        if behind {
            if phase != .writing {
                phase = .writing
                deadline = context.now + context.limits.writeTimeout
            }
            let next = enqueue(&context)
            queueShared(shared)
            return next
        }
        queueShared(shared)
        phase = .readingRequest(started: false)
        deadline = context.now + context.limits.idleTimeout
        return .write
    }

    /// A large body is sent from the answer's own storage, which the other requests of its render
    /// and the page kept for the next ask share: counted once (`AdminOutput`), copied for none
    /// (`AdminEndpoint.frame` admits it for that). Takes the body and tail out of `response`, to
    /// go after its head (`queueShared`); nil: sent as usual. None is held already: output is
    /// pending only from the round that read this request, which began with nothing pending.
    private func sharing(_ response: inout Response) -> [[UInt8]]? {
        guard response.sendsBody, response.body.count >= AdminOutput.smallAnswer, sharedBody == nil else { return nil }
        response.sendsBody = false
        return [response.body, response.tail]
    }

    /// The body and tail `sharing` took, after everything else pending or in `context.out`.
    private mutating func queueShared(_ shared: [[UInt8]]?) {
        guard let shared else { return }
        sharedBody = shared[0]
        later += shared
    }

    /// The worker shut the write side: input is drained, for at most the linger timeout.
    mutating func linger<A>(_ context: inout ConnectionContext<A>) {
        phase = .lingering
        clearInput()
        deadline = context.now + context.limits.lingerTimeout
    }

    // MARK: - After output

    /// Everything produced so far is written: HTTP/2 sends frames it held back; HTTP/1.1
    /// answers requests already read (a client may send all its requests at once and read only
    /// when they are all answered: they must not wait for input that will never come).
    private mutating func outputDone<A>(flushed: Bool, _ context: inout ConnectionContext<A>) -> Next {
        if closeAfterWrite { return .linger }
        if awaiting != nil {
            // What came before the deferred request is out; its own answer is not made yet.
            if phase != .answering { deadline = context.now + Self.answerTimeout }
            phase = .answering
            return .wait
        }
        if flushed {
            phase = .readingRequest(started: false)
            deadline = context.now + context.limits.idleTimeout
        }
        switch framing {
        case .undecided:
            return .wait
        case .acmeTLS:
            return .linger
        case .http2(let session):
            setHTTP2Deadline(session, context)
            if session.wantsWrite {
                session.produce(into: &context.out, limit: context.limits.outputHighWater)
                if !context.out.isEmpty { return .write }
            }
            if !session.isAlive { return .linger }
            if context.draining && session.activeStreams == 0 {
                // Stopping: streams sent before the client saw the first GOAWAY may still
                // come until the grace ends; then the last GOAWAY, and it ends rather than wait
                // for input that may never come.
                if let graceUntil, !graceOver(context), !session.goingAway {
                    deadline = min(deadline, graceUntil)
                    return .wait
                }
                if !session.goingAway {
                    session.goAway()
                    session.produce(into: &context.out, limit: context.limits.outputHighWater)
                    if !context.out.isEmpty { return .write }
                }
                return .linger
            }
            if session.activeStreams == 0 { session.releaseIdleStorage() }
            return .wait
        case .http1:
            guard (queued || flushed) && bufferedInput > 0 else {
                // Stopping: a connection whose last response is out and that holds no request
                // ends now instead of idling until the drain timeout. It lingers rather than
                // closes: a request the client pipelined while the response was being written
                // may still be unread in the socket, and closing over unread input sends a reset
                // that discards the response's unsent tail (RFC 9112 §9.6).
                if context.draining && bufferedInput == 0 { return .linger }
                return .wait
            }
            guard rounds > 0 else {
                // Out of rounds: wait for writability (the socket is writable, so the next loop
                // iteration comes back through `flushed`, which answers more), not for input.
                phase = .writing
                deadline = context.now + context.limits.writeTimeout
                return .wait
            }
            rounds -= 1
            queued = answerInput(&context)
            return .write
        }
    }

    // MARK: - HTTP/1.1

    /// Answers the buffered requests, up to the high-water mark; true when it stopped there with
    /// bytes left.
    private mutating func answerInput<A>(_ context: inout ConnectionContext<A>) -> Bool {
        let buffer = input  // shares storage: answering reads the buffer and never appends
        let (consumed, more) = buffer.withUnsafeBytes { answerHTTP1(UnsafeRawBufferPointer(rebasing: $0[inputOffset...]), &context) }
        inputOffset += consumed
        if inputOffset >= input.count { clearInput() }
        return more
    }

    /// Parses and answers the complete requests at the start of `bytes`; returns how many bytes
    /// were used, and whether it stopped at the output high-water mark with bytes left.
    private mutating func answerHTTP1<A>(_ bytes: UnsafeRawBufferPointer, _ context: inout ConnectionContext<A>) -> (
        consumed: Int, more: Bool
    ) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch parser.parse(rest) {
            case .incomplete:
                if phase == .readingRequest(started: false) {
                    phase = .readingRequest(started: true)
                    deadline = context.now + context.limits.requestTimeout
                }
                return (offset, false)
            case .failed(let error):
                // The stream position is no longer known: answer and close.
                let response = context.answerer.refuse(Status(rawValue: error.status) ?? .badRequest, peer: peer)
                response.serialize(into: &context.out, dateLine: context.answerer.dateLine.bytes, heads: &context.heads)
                closeAfterWrite = true
                return (bytes.count, false)
            case .complete(let head):
                func slice(_ r: Range<Int>?) -> UnsafeRawBufferPointer? { r.map { UnsafeRawBufferPointer(rebasing: rest[$0]) } }
                let request = RequestView(
                    version: .http1, method: head.method, authority: slice(head.host), path: slice(head.path)!,
                    target: slice(head.target)!, ifNoneMatch: slice(head.ifNoneMatch), ifModifiedSince: slice(head.ifModifiedSince),
                    userAgent: slice(head.userAgent), acceptsGzip: head.acceptsGzip)
                if let output = context.adminOutput { settle(output) }
                var response = context.answerer.answer(request, peer: peer, tls: tlsIdentity)
                if let deferred = response.deferred {
                    // Answered later (`answered`): the requests after it wait, unparsed.
                    awaiting = (deferred, head.keepAlive && !context.draining)
                    parser.reset()
                    return (offset + head.length, false)
                }
                // An answer may close on its own (plain HTTP's redirect to HTTPS); the client or a
                // stop may close any.
                response.close = response.close || !head.keepAlive || context.draining
                // An admin answer (`/sites` when its page is rendered already): nothing is pending
                // while requests are read and answered (reading stops while writing), so a large
                // body goes after this round's output, and the round ends.
                let shared = peer.isAdmin && !hasPendingOutput ? sharing(&response) : nil
                response.serialize(into: &context.out, dateLine: context.answerer.dateLine.bytes, heads: &context.heads)
                queueShared(shared)
                parser.reset()
                offset += head.length
                phase = .readingRequest(started: false)
                deadline = context.now + context.limits.idleTimeout
                if response.close {
                    closeAfterWrite = true
                    return (bytes.count, false)
                }
                // The admin listener answers one request per connection per turn of the loop
                // (`rounds` spent): each admin page costs work on its thread even when its answer
                // is small (`HEAD /sites` takes the page's cache key, `/metrics` a scrape), so a
                // client that pipelines thousands of them would otherwise hold the probes on
                // other connections for seconds (docs/benchmarks.md, "The admin listener").
                if peer.isAdmin { rounds = 0 }
                if peer.isAdmin || shared != nil || context.out.count >= context.limits.outputHighWater {
                    return (offset, offset < bytes.count)
                }
            }
        }
        return (offset, false)
    }

    /// Keeps bytes after what is buffered, compacting first when most of the buffer is answered.
    private mutating func appendInput(_ bytes: UnsafeRawBufferPointer) {
        if inputOffset > 0 && inputOffset >= input.count / 2 {
            input.removeFirst(inputOffset)
            inputOffset = 0
        }
        input.append(contentsOf: bytes)
    }

    /// Empties the input and gives its storage back: a connection that once held an unfinished
    /// or pipelined request keeps none of it while idle (a client could otherwise leave up to
    /// `Limits.maximumBufferedInput` of capacity on every connection it holds open). Input is
    /// cleared only once every byte of it is answered (or when the connection lingers).
    private mutating func clearInput() {
        input = []
        inputOffset = 0
    }

    /// Capacity of the input buffer (for tests: zero when nothing is buffered).
    var inputCapacity: Int { input.capacity }

    // MARK: - HTTP/2

    /// Answers the session's complete requests through the same exchange as HTTP/1.1, and
    /// appends the frames to send to `context.out`.
    private mutating func answerHTTP2<A>(_ session: HTTP2Session, _ context: inout ConnectionContext<A>) {
        session.answer { request in
            let response = request.withFields { target, path, authority, ifNoneMatch, ifModifiedSince, userAgent in
                let view = RequestView(
                    version: .http2, method: request.method, authority: authority, path: path, target: target,
                    ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince, userAgent: userAgent,
                    acceptsGzip: request.acceptsGzip, hasBody: request.hasBody)
                let response = context.answerer.answer(view, peer: peer, tls: tlsIdentity)
                // Only the admin listener defers, and it speaks HTTP/1.1 alone.
                return response.deferred == nil ? response : .error(.serviceUnavailable, close: false)
            }
            session.respond(
                stream: request.stream, status: response.status, head: response.head, date: context.answerer.dateLine.value,
                location: response.location, body: response.body, sendsBody: response.sendsBody, heads: &context.heads)
        }
        session.produce(into: &context.out, limit: context.limits.outputHighWater)
    }

    /// The deadline after a read or a flush: the idle timeout while the session holds no
    /// incomplete request; otherwise the request timeout counted from when the oldest
    /// still-incomplete state began. Every frame resets the idle timeout, so without this a
    /// client could hold 100 streams of header state for ever by sending a PING now and then.
    private mutating func setHTTP2Deadline<A>(_ session: HTTP2Session, _ context: ConnectionContext<A>) {
        defer {
            // Stopping: the last GOAWAY comes at the grace's end whatever the streams do (a
            // client that keeps streams open must not keep the first GOAWAY's door open).
            if context.draining && !session.goingAway, let graceUntil { deadline = min(deadline, graceUntil) }
        }
        // A completed request starts the count again; streams that end by a reset do not: a
        // client that resets its incomplete streams before the timeout and opens new ones would
        // otherwise hold their fields for ever. Only a request timeout without any incomplete
        // request forgets it.
        if session.completedRequests != completedSeen {
            completedSeen = session.completedRequests
            incompleteSince = nil
            settledSince = nil
        }
        guard session.hasIncompleteRequests else {
            if incompleteSince != nil && settledSince == nil { settledSince = context.now }
            deadline = context.now + context.limits.idleTimeout
            return
        }
        if let settled = settledSince {
            if context.now - settled >= context.limits.requestTimeout { incompleteSince = nil }
            settledSince = nil
        }
        let since = incompleteSince ?? context.now
        incompleteSince = since
        if case .readingRequest = phase { phase = .readingRequest(started: true) }
        deadline = since + context.limits.requestTimeout
    }
}
