import CAASALinux
import Glibc
import HTTP1
import HTTP2
import HTTPCore
import Logging
import Reactor
import SiteStore
import TLS

/// One loop thread: its own epoll, its own SO_REUSEPORT listeners, its own connections. A request
/// is read, parsed in place, answered from the snapshot and written, on this thread, with no lock
/// and, when the socket takes the whole response, no allocation.
final class Worker {
    struct Listener {
        enum Kind { case https, http, admin }
        let fd: Int32
        let kind: Kind
        var tls: Bool { kind == .https }
    }

    /// epoll data of a listener: the top bit set, the listener's index below.
    private static let listenerTag: UInt64 = 1 << 63

    let index: Int
    let loop: EventLoop
    private let listeners: [Listener]
    private let tls: TLSServer?
    private let store: SnapshotStore
    private let limits: Limits
    private let logger: Logger
    private var snapshot: Snapshot

    private var connections: [Connection?] = []
    private var nextGeneration: UInt32 = 1
    private var wheel: TimerWheel
    private var dateLine = DateLine()
    private let clock = MonotonicClock()
    private var now: Int64
    private var acceptPausedUntil: Int64?
    /// Whether the listeners are in the epoll set (they leave it while accepting is paused).
    private var listening = true
    /// Stopping: no new connections, each open one closes after its current response.
    private var draining = false
    private var drainDeadline: Int64 = .max
    /// Connections in the table (kept as a count: the drain loop checks it every iteration).
    private var openConnections = 0
    private let readBuffer: UnsafeMutableRawBufferPointer
    private var out: [UInt8] = []
    private let stopFlag: AtomicFlag
    /// Answers the admin listener's requests (only the admin worker has one).
    private let admin: AdminEndpoint?
    /// Where fetches by Apple's CDN are noted.
    private let fetchLog: FetchLog?
    /// This worker's counters, for /metrics.
    private let counters: WorkerCounters
    /// Access log lines waiting for the end of the loop iteration; nil without an access log.
    private var accessLog: AccessLogBuffer?

    /// The size of the loop's read buffer: several TLS records, or many pipelined requests.
    static let readBufferSize = 64 * 1024

    init(
        index: Int, listeners: [Listener], tls: TLSServer?, store: SnapshotStore, limits: Limits, logger: Logger,
        stopFlag: AtomicFlag, counters: WorkerCounters, admin: AdminEndpoint? = nil, fetchLog: FetchLog? = nil,
        accessLog: AccessLog? = nil
    ) throws(SystemError) {
        self.counters = counters
        self.accessLog = accessLog.map(AccessLogBuffer.init)
        self.admin = admin
        self.fetchLog = fetchLog
        self.index = index
        self.listeners = listeners
        self.tls = tls
        self.store = store
        self.limits = limits
        self.logger = logger
        self.stopFlag = stopFlag
        loop = try EventLoop()
        snapshot = store.snapshot()
        now = clock.milliseconds() / 1000
        wheel = TimerWheel(now: now)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        out.reserveCapacity(limits.outputHighWater + Self.readBufferSize)
        for (i, listener) in listeners.enumerated() {
            try loop.add(listener.fd, data: Self.listenerTag | UInt64(i), read: true, write: false)
        }
    }

    deinit {
        readBuffer.deallocate()
    }

    /// Runs until the stop flag is raised.
    func run() {
        loop.claimThread()
        dateLine.update(now: Int64(time(nil)))
        while true {
            if stopFlag.isRaised {
                if !draining { beginDrain() }
                if openConnections == 0 || now >= drainDeadline { break }
            }
            do {
                // Wake at least once a second for timeouts and the Date header.
                try loop.wait(timeoutMilliseconds: draining ? 100 : 1000) { event in dispatch(event) }
            } catch {
                logger.error("event loop failed", metadata: ["error": "\(error)"])
                return
            }
            if accessLog?.isEmpty == false { accessLog!.flush() }
            tick()
        }
        defer { accessLog?.flush() }
        for case let connection? in connections {
            // HTTP/2 clients learn the server is going (GOAWAY) rather than seeing a bare close.
            if let session = connection.http2, !connection.hasPendingOutput {
                session.goAway()
                session.produce(into: &out, limit: limits.outputHighWater)
                _ = send(connection)
            }
            close(connection)
        }
    }

    // MARK: - Graceful stop

    /// Stops taking connections and lets the open ones finish (SIGTERM): what the kernel already
    /// accepted is taken and served, listeners close, idle connections close now (HTTP/2 ones
    /// after GOAWAY), busy ones close after their current response. The loop ends when none are
    /// left, or at the drain timeout.
    private func beginDrain() {
        draining = true
        drainDeadline = now + limits.drainTimeout
        for listener in listeners {
            accept(listener, draining: true)
            if listening { loop.remove(listener.fd) }
            Glibc.close(listener.fd)
        }
        listening = false
        for case let c? in connections {
            if let session = c.http2 {
                session.goAway()
                session.produce(into: &out, limit: limits.outputHighWater)
                if !sendHTTP2(c, session) { continue }
                if !session.isAlive { startLingering(c) }
            } else if case .readingRequest(started: false) = c.phase, c.bufferedInput == 0, !c.hasPendingOutput {
                close(c)
            } else if case .handshaking = c.phase {
                continue  // it may still send a request; the handshake timeout bounds it
            }
        }
    }

    // MARK: - Dispatch

    private func dispatch(_ event: EventLoop.Event) {
        if event.data == EventLoop.wakeData { return }
        if event.data & Self.listenerTag != 0 {
            accept(listeners[Int(event.data & ~Self.listenerTag)])
            return
        }
        let fd = Int(event.data & 0xFFFF_FFFF)
        // A descriptor closed and reused within one batch: the event is for the old connection.
        guard fd < connections.count, let connection = connections[fd], connection.generation == UInt32(event.data >> 32) else { return }
        refreshSnapshot()
        switch connection.phase {
        case .handshaking:
            handshake(connection)
        case .readingRequest:
            readRequests(connection)
        case .writing:
            if event.writable || event.hangup { flush(connection) }
        case .lingering:
            drain(connection)
        }
    }

    private func refreshSnapshot() {
        if store.generation != snapshot.generation { snapshot = store.snapshot() }
    }

    private func tick() {
        let ms = clock.milliseconds()
        now = ms / 1000
        dateLine.update(now: Int64(time(nil)))
        wheel.advance(to: now) { entry in
            let fd = Int(entry.slot)
            guard fd < connections.count, let c = connections[fd], c.generation == entry.generation, c.timerTicket == entry.ticket else {
                return nil
            }
            if c.deadline > now { return c.deadline }
            timedOut(c)
            return nil
        }
        if let until = acceptPausedUntil, now >= until {
            acceptPausedUntil = nil
            resumeAccepting()
        }
    }

    // MARK: - Accepting

    /// Takes the listeners out of the epoll set: connections wait in the kernel's backlog.
    private func pauseAccepting() {
        guard listening else { return }
        listening = false
        for listener in listeners { loop.remove(listener.fd) }
    }

    private func resumeAccepting() {
        guard !listening, !draining, acceptPausedUntil == nil, !atConnectionLimit else { return }
        listening = true
        for (i, listener) in listeners.enumerated() {
            try? loop.add(listener.fd, data: Self.listenerTag | UInt64(i), read: true, write: false)
        }
    }

    /// `limits.maxConnections` reached: accepting waits until a connection closes (nginx's
    /// worker_connections), so a flood of connections cannot take all memory or descriptors.
    private var atConnectionLimit: Bool { limits.maxConnections > 0 && openConnections >= limits.maxConnections }

    private func accept(_ listener: Listener, draining: Bool = false) {
        // While draining, take everything the kernel has queued: closing the listener would reset it.
        for _ in 0..<(draining ? Int.max : limits.acceptBatch) {
            if atConnectionLimit && !draining {
                pauseAccepting()
                return
            }
            let fd: Int32
            do {
                switch try Socket.accept(listener.fd) {
                case .wouldBlock: return
                case .done(let accepted): fd = accepted
                }
            } catch {
                if error.errno == EMFILE || error.errno == ENFILE {
                    // nginx's answer to a full descriptor table: stop accepting for a moment
                    // instead of spinning on a listener that stays readable.
                    logger.warning("too many open files; accepting pauses", metadata: ["seconds": "\(limits.acceptPause)"])
                    pauseAccepting()
                    acceptPausedUntil = now + limits.acceptPause
                    return
                }
                continue  // ECONNABORTED and the like: that client is gone
            }
            try? Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
            let transport: Transport
            if listener.tls {
                guard let tls, let connection = tls.makeConnection(fd: fd) else {
                    Glibc.close(fd)
                    continue
                }
                transport = .tls(connection)
            } else {
                transport = .plain
            }
            let generation = nextGeneration
            nextGeneration = nextGeneration == 0x7FFF_FFFF ? 1 : nextGeneration + 1
            let deadline = now + (listener.tls ? limits.handshakeTimeout : limits.idleTimeout)
            let connection = Connection(fd: fd, generation: generation, transport: transport, deadline: deadline)
            connection.isAdmin = listener.kind == .admin
            if accessLog != nil { connection.client = (try? Socket.peerAddress(fd).host) ?? "-" }
            if listener.kind != .admin {
                connection.counted = listener.tls ? .https : .http
                counters.opened(connection.counted!)
            }
            if Int(fd) >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: Int(fd) - connections.count + 1))
            }
            connections[Int(fd)] = connection
            openConnections += 1
            do {
                try loop.add(fd, data: data(connection), read: true, write: false)
            } catch {
                close(connection)
                continue
            }
            wheel.schedule(.init(slot: fd, generation: generation, ticket: connection.timerTicket), at: deadline)
        }
    }

    private func data(_ c: Connection) -> UInt64 { UInt64(c.generation) << 32 | UInt64(UInt32(c.fd)) }

    // MARK: - Deadlines

    /// Moves a connection's deadline. Later deadlines cost a store (the timer entry re-files itself
    /// when it fires); an earlier one files a new entry and retires the old one.
    private func setDeadline(_ c: Connection, _ seconds: Int64) {
        let deadline = now + seconds
        if deadline < c.deadline {
            c.timerTicket &+= 1
            wheel.schedule(.init(slot: c.fd, generation: c.generation, ticket: c.timerTicket), at: deadline)
        }
        c.deadline = deadline
    }

    /// An HTTP/2 connection's deadline after a read or a flush: the idle timeout while it holds
    /// no incomplete request; otherwise the request timeout counted from when the oldest
    /// still-incomplete state began. Every frame resets the idle timeout, so without this a client
    /// could hold 100 streams of header state for ever by sending a PING now and then.
    private func setHTTP2Deadline(_ c: Connection, _ session: HTTP2Session) {
        guard session.hasIncompleteRequests else {
            c.incompleteSince = nil
            setDeadline(c, limits.idleTimeout)
            return
        }
        let since = c.incompleteSince ?? now
        c.incompleteSince = since
        if case .readingRequest = c.phase { c.phase = .readingRequest(started: true) }
        setDeadline(c, since + limits.requestTimeout - now)
    }

    private func timedOut(_ c: Connection) {
        logger.debug("connection timed out", metadata: ["phase": "\(c.phase)"])
        if c.counted != nil {
            switch c.phase {
            case .handshaking:
                counters.timedOut(.handshake)
                counters.handshakeFailed(.timeout)
            case .readingRequest(let started): counters.timedOut(started ? .request : .idle)
            case .writing: counters.timedOut(.write)
            case .lingering: counters.timedOut(.linger)
            }
        }
        close(c)
    }

    // MARK: - TLS handshake

    private func handshake(_ c: Connection) {
        guard case .tls(let t) = c.transport else { return }
        switch t.handshake() {
        case .done:
            let http2 = t.alpn == "h2"
            counters.handshake(tls13: t.isTLS13, resumed: t.resumed, http2: http2)
            c.tlsIdentity = t.serverName.map { .serverName($0, certificate: t.certificateNames) } ?? .none
            c.phase = .readingRequest(started: false)
            setDeadline(c, limits.idleTimeout)
            watch(c, read: true, write: false)
            if http2 {
                // ALPN picks the protocol once (h2o's on_ssl_handshake_complete): the server's
                // SETTINGS go first.
                let session = HTTP2Session()
                c.http2 = session
                session.produce(into: &out, limit: limits.outputHighWater)
                if !send(c) { return }
            }
            // The first request may already be inside OpenSSL's buffers.
            readRequests(c)
        case .wantRead:
            watch(c, read: true, write: false)
        case .wantWrite:
            watch(c, read: false, write: true)
        case .closed:
            counters.handshakeFailed(.peerClosed)
            close(c)
        case .failed(let failure, let detail):
            logger.debug("TLS handshake failed", metadata: ["reason": "\(failure.rawValue)", "detail": "\(detail)"])
            counters.handshakeFailed(failure)
            close(c)
        }
    }

    // MARK: - Reading and answering

    private enum ReadOutcome {
        case bytes(Int)
        case wouldBlock
        case closed
    }

    private func read(_ c: Connection) -> ReadOutcome {
        switch c.transport {
        case .plain:
            do {
                switch try Socket.read(c.fd, into: readBuffer) {
                case .wouldBlock: return .wouldBlock
                case .done(0): return .closed
                case .done(let n): return .bytes(n)
                }
            } catch {
                return .closed
            }
        case .tls(let t):
            let (progress, n) = t.read(into: readBuffer)
            switch progress {
            case .done: return .bytes(n)
            case .wantRead: return .wouldBlock
            case .wantWrite:
                watch(c, read: true, write: true)
                return .wouldBlock
            case .closed, .failed: return .closed
            }
        }
    }

    private func readRequests(_ c: Connection) {
        // Write interest was only for a TLS read that needed to write: drop it, or a level-
        // triggered epoll reports the (always) writable socket in a loop.
        if c.watchingWrite { watch(c, read: true, write: false) }
        for _ in 0..<limits.readsPerEvent {
            // Back-pressure: nothing more is read while answered-but-unsent or complete-but-
            // unanswered requests are buffered (answerBuffered returns to reading only when what is
            // left is an unfinished head). The bound is a second line of defence: reaching it means
            // that rule broke, and returning with read interest on would spin a level-triggered
            // epoll, so the connection is closed instead.
            guard c.bufferedInput < limits.maximumBufferedInput else {
                logger.debug("buffered input over its bound; closing", metadata: ["bytes": "\(c.bufferedInput)"])
                close(c)
                return
            }
            switch read(c) {
            case .wouldBlock:
                return
            case .closed:
                close(c)
                return
            case .bytes(let n):
                let fresh = UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])
                if let session = c.http2 {
                    if !session.receive(fresh, now: clock.milliseconds()) {
                        logger.debug("HTTP/2 session ended", metadata: ["reason": "\(session.failure ?? "")"])
                        c.closeAfterWrite = true
                    }
                    answerHTTP2(c, session)
                    setHTTP2Deadline(c, session)
                    if !sendHTTP2(c, session) { return }
                    if !session.isAlive || (draining && !session.wantsWrite && session.activeStreams == 0) {
                        startLingering(c)
                        return
                    }
                    if n < Self.readBufferSize { return }
                    continue
                }
                var more: Bool
                if c.bufferedInput == 0 {
                    // The common case: requests parsed straight from the read buffer, no copy.
                    let (consumed, stopped) = answer(c, fresh)
                    more = stopped
                    if consumed < n {
                        c.clearInput()
                        c.appendInput(UnsafeRawBufferPointer(rebasing: fresh[consumed...]))
                    }
                } else {
                    c.appendInput(fresh)
                    more = answerInput(c)
                }
                if !send(c) { return }
                guard case .readingRequest = c.phase else { return }
                if more && !answerBuffered(c) { return }
                // A short read drained the socket; epoll reports the next bytes.
                if n < Self.readBufferSize { return }
            }
        }
    }

    /// Answers the connection's buffered requests, up to the high-water mark; true when it stopped
    /// there with bytes left (complete requests may be waiting).
    private func answerInput(_ c: Connection) -> Bool {
        let (consumed, more) = c.input.withUnsafeBytes { answer(c, UnsafeRawBufferPointer(rebasing: $0[c.inputOffset...])) }
        c.consumeInput(consumed)
        return more
    }

    /// Keeps answering pipelined requests already read while the socket takes the responses (a
    /// client may send all its requests at once and read only when they are all answered: they
    /// must not wait for input that will never come). Bounded by `limits.answerRoundsPerEvent`;
    /// when the rounds run out, write interest brings the connection back on the next loop
    /// iteration. True when what is left is an unfinished request (read more); false when the
    /// connection waits for the socket, stopped, or yielded.
    private func answerBuffered(_ c: Connection) -> Bool {
        for _ in 0..<limits.answerRoundsPerEvent {
            guard c.bufferedInput > 0 else { return true }
            let more = answerInput(c)
            if !send(c) { return false }
            guard case .readingRequest = c.phase else { return false }
            if !more { return true }
        }
        guard c.bufferedInput > 0 else { return true }
        // Out of rounds: wait for writability (the socket is writable: the next iteration comes
        // back through flush, which answers more), not for input.
        c.phase = .writing
        setDeadline(c, limits.writeTimeout)
        watch(c, read: false, write: true)
        return false
    }

    /// Parses and answers the complete requests at the start of `bytes`, appending the responses to
    /// the worker's output buffer; returns how many bytes were used, and whether it stopped at the
    /// output high-water mark with bytes left.
    private func answer(_ c: Connection, _ bytes: UnsafeRawBufferPointer) -> (consumed: Int, more: Bool) {
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            switch c.parser.parse(rest) {
            case .incomplete:
                if case .readingRequest(started: false) = c.phase {
                    c.phase = .readingRequest(started: true)
                    setDeadline(c, limits.requestTimeout)
                }
                return (offset, false)
            case .failed(let error):
                logger.debug("bad request", metadata: ["status": "\(error.status)", "reason": "\(error)"])
                let response = Response.error(Status(rawValue: error.status) ?? .badRequest, close: true)
                if c.counted != nil { counters.request(.http1, .unknown, .other, response.status) }
                logAccess(c, method: .other, host: nil, target: nil, http2: false, response, userAgent: nil)
                response.serialize(into: &out, dateLine: dateLine.bytes)
                c.closeAfterWrite = true
                return (bytes.count, false)
            case .complete(let head):
                var response = respond(c, head, rest)
                response.close = !head.keepAlive || draining
                response.serialize(into: &out, dateLine: dateLine.bytes)
                c.requests += 1
                c.parser.reset()
                offset += head.length
                c.phase = .readingRequest(started: false)
                setDeadline(c, limits.idleTimeout)
                if response.close {
                    c.closeAfterWrite = true
                    return (bytes.count, false)
                }
                if out.count >= limits.outputHighWater { return (offset, offset < bytes.count) }
            }
        }
        return (offset, false)
    }

    /// Answers an HTTP/2 session's complete requests through the same responder as HTTP/1.1, and
    /// appends the frames it has to send to the output buffer.
    private func answerHTTP2(_ c: Connection, _ session: HTTP2Session) {
        for request in session.takeRequests() {
            let host = request.authority.map { $0.withUnsafeBytes(HTTPFields.normalizeHost) }
            var routed = request.path.withUnsafeBytes { path in
                withBytes(request.ifNoneMatch) { ifNoneMatch in
                    withBytes(request.ifModifiedSince) { ifModifiedSince in
                        Responder.respond(
                            method: request.method, host: host, path: path, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince,
                            acceptsGzip: request.acceptsGzip, snapshot: snapshot, tls: c.tlsIdentity)
                    }
                }
            }
            // Only GET and HEAD are served, and neither has content: a body is refused, whatever
            // the path.
            if request.hasBody { routed.response = .error(.contentTooLarge, close: false) }
            let response = routed.response.answering(request.method)
            counters.request(.http2, routed.site, routed.path, response.status)
            if let agent = request.userAgent { noteAppleFetch(c, agent, routed, host: host) }
            if accessLog != nil {
                let target = request.query.map { request.path + $0 } ?? request.path
                target.withUnsafeBytes { target in
                    withBytes(request.userAgent) { agent in
                        logAccess(c, method: request.method, host: host, target: target, http2: true, response, userAgent: agent)
                    }
                }
            }
            c.requests += 1
            session.respond(
                stream: request.stream, status: response.status.rawValue, headerLines: response.headers, extra: [("date", dateLine.value)],
                body: response.body, sendsBody: response.sendsBody)
        }
        session.produce(into: &out, limit: limits.outputHighWater)
    }

    /// Adds a line to the access log, when there is one.
    private func logAccess(
        _ c: Connection, method: Method, host: String?, target: UnsafeRawBufferPointer?, http2: Bool, _ response: Response,
        userAgent: UnsafeRawBufferPointer?
    ) {
        guard accessLog != nil, !c.isAdmin else { return }
        let entry = AccessEntry(
            client: c.client, host: host, method: method, target: target ?? UnsafeRawBufferPointer(start: nil, count: 0), http2: http2,
            status: response.status.rawValue, bytes: response.sendsBody ? response.body.count : 0, userAgent: userAgent)
        accessLog!.append(entry, now: Int64(time(nil)))
        if accessLog!.isFull { accessLog!.flush() }
    }

    /// Notes a fetch of an AASA path by Apple's CDN (rare: the check is a prefix compare). The
    /// client's address is read only then (one getpeername), to tell Apple's network from a
    /// spoofed User-Agent.
    private func noteAppleFetch(_ c: Connection, _ agent: some Collection<UInt8>, _ routed: Responder.Routed, host: String?) {
        guard let fetchLog, FetchLog.isApple(agent), routed.path == .wellKnownAASA || routed.path == .rootAASA else { return }
        let site = routed.site == .configured ? host.flatMap { snapshot.site(forHost: $0)?.directory } : nil
        let fromAppleNetwork = (try? Socket.peerAddress(c.fd)).map(FetchLog.isAppleNetwork) ?? false
        fetchLog.record(site: site, status: routed.response.status, at: Int64(time(nil)), fromAppleNetwork: fromAppleNetwork)
    }

    /// Writes the output buffer, then keeps producing and writing while the session has frames
    /// and the socket takes them: frames held back by the high-water mark must not wait for the
    /// client's next bytes (it may be waiting for these). False when the connection stopped.
    private func sendHTTP2(_ c: Connection, _ session: HTTP2Session) -> Bool {
        while true {
            if !send(c) { return false }
            guard session.wantsWrite else { return true }
            session.produce(into: &out, limit: limits.outputHighWater)
            if out.isEmpty { return true }
        }
    }

    private func withBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
        guard let bytes else { return body(nil) }
        return bytes.withUnsafeBytes { body($0) }
    }

    private func respond(_ c: Connection, _ head: RequestHead, _ b: UnsafeRawBufferPointer) -> Response {
        func slice(_ r: Range<Int>?) -> UnsafeRawBufferPointer? { r.map { UnsafeRawBufferPointer(rebasing: b[$0]) } }
        if c.isAdmin, let admin {
            return admin.respond(method: head.method, path: String(decoding: slice(head.path)!, as: UTF8.self)).answering(head.method)
        }
        let host = slice(head.host).map(HTTPFields.normalizeHost)
        let routed = Responder.respond(
            method: head.method, host: host, path: slice(head.path)!, ifNoneMatch: slice(head.ifNoneMatch),
            ifModifiedSince: slice(head.ifModifiedSince), acceptsGzip: head.acceptsGzip, snapshot: snapshot, tls: c.tlsIdentity)
        counters.request(.http1, routed.site, routed.path, routed.response.status)
        if let agent = slice(head.userAgent) { noteAppleFetch(c, agent, routed, host: host) }
        let response = routed.response.answering(head.method)
        logAccess(
            c, method: head.method, host: host, target: slice(head.target), http2: false, response, userAgent: slice(head.userAgent))
        return response
    }

    // MARK: - Writing

    /// Writes the worker's output buffer to the connection. What the socket does not take is kept
    /// on the connection and reading pauses until it is written. Returns false when the
    /// connection is gone or no longer reading.
    private func send(_ c: Connection) -> Bool {
        guard !out.isEmpty else { return !c.hasPendingOutput }
        defer { out.removeAll(keepingCapacity: true) }
        // New bytes go after what the socket has not taken yet, never ahead of it: written first
        // they would land inside a half-sent HTTP/2 frame (GOAWAY on a graceful stop) or break
        // OpenSSL's rule that a retried write repeats the same bytes. flush() writes them in order.
        if c.hasPendingOutput {
            c.appendOutput(out)
            return false
        }
        let written = out.withUnsafeBytes { write(c, $0) }
        guard let written else {
            close(c)
            return false
        }
        if written < out.count {
            c.output = Array(out[written...])
            c.outputOffset = 0
            c.phase = .writing
            setDeadline(c, limits.writeTimeout)
            watch(c, read: false, write: true)
            return false
        }
        if c.closeAfterWrite {
            startLingering(c)
            return false
        }
        return true
    }

    /// Writes as much as the socket takes; nil when the connection failed.
    private func write(_ c: Connection, _ bytes: UnsafeRawBufferPointer) -> Int? {
        var total = 0
        while total < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[total...])
            switch c.transport {
            case .plain:
                do {
                    switch try Socket.write(c.fd, rest) {
                    case .wouldBlock: return total
                    case .done(let n): total += n
                    }
                } catch {
                    return nil
                }
            case .tls(let t):
                let (progress, n) = t.write(rest)
                switch progress {
                case .done: total += n
                case .wantWrite, .wantRead: return total
                case .closed, .failed: return nil
                }
            }
        }
        return total
    }

    private func flush(_ c: Connection) {
        let written = c.output.withUnsafeBytes { write(c, UnsafeRawBufferPointer(rebasing: $0[c.outputOffset...])) }
        guard let written else {
            close(c)
            return
        }
        c.outputOffset += written
        guard !c.hasPendingOutput else {
            // The write timeout is between two writes that make progress (nginx's send_timeout).
            if written > 0 { setDeadline(c, limits.writeTimeout) }
            return
        }
        c.output = []
        c.outputOffset = 0
        if c.closeAfterWrite {
            startLingering(c)
            return
        }
        c.phase = .readingRequest(started: false)
        setDeadline(c, limits.idleTimeout)
        watch(c, read: true, write: false)
        if let session = c.http2 {
            setHTTP2Deadline(c, session)
            // Frames the session held back while the socket was full.
            session.produce(into: &out, limit: limits.outputHighWater)
            guard sendHTTP2(c, session) else { return }
            // The last frames are out: a finished session (GOAWAY sent, streams done) closes now
            // rather than wait for input that may never come.
            if !session.isAlive || (draining && !session.wantsWrite && session.activeStreams == 0) { startLingering(c) }
            return
        }
        // Pipelined requests that waited for this output; epoll reports any further input.
        _ = answerBuffered(c)
    }

    // MARK: - Closing

    private func startLingering(_ c: Connection) {
        if case .tls(let t) = c.transport { t.shutdown() }
        Glibc.shutdown(c.fd, Int32(SHUT_WR))
        c.phase = .lingering
        c.clearInput()
        setDeadline(c, limits.lingerTimeout)
        watch(c, read: true, write: false)
    }

    private func drain(_ c: Connection) {
        for _ in 0..<limits.readsPerEvent {
            let n = Glibc.read(c.fd, readBuffer.baseAddress, readBuffer.count)
            if n > 0 { continue }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { return }
            break
        }
        close(c)
    }

    private func watch(_ c: Connection, read: Bool, write: Bool) {
        guard c.watchingRead != read || c.watchingWrite != write else { return }
        c.watchingRead = read
        c.watchingWrite = write
        try? loop.modify(c.fd, data: data(c), read: read, write: write)
    }

    private func close(_ c: Connection) {
        guard Int(c.fd) < connections.count, connections[Int(c.fd)] === c else { return }
        loop.remove(c.fd)
        connections[Int(c.fd)] = nil
        openConnections -= 1
        if let listener = c.counted { counters.closed(listener) }
        if !listening { resumeAccepting() }
        c.transport = .plain  // frees the SSL object before the descriptor number can be reused
        Glibc.close(c.fd)
    }

}
