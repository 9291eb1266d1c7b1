import HTTP2
import Logging
import Reactor
import SiteStore
import TLS

/// One loop thread, the I/O shell around its connections: its own epoll, its own SO_REUSEPORT
/// listeners, accepting, the timer wheel, the TLS handshake, and the reads and writes that
/// `ConnectionMachine` asks for. What the bytes mean is the machine's business, and what a
/// request gets is the `Exchange`'s. A request is read, parsed in place, answered from the
/// snapshot and written on this thread, with no lock; when the socket takes the whole response,
/// nothing is copied twice.
final class Worker {
    struct Listener {
        enum Kind { case https, http, admin }
        let fd: Int32
        let kind: Kind
        var tls: Bool { kind == .https }
    }

    /// One open connection: its socket and TLS state, its timer and epoll bookkeeping, and its
    /// protocol state machine.
    final class Connection {
        let fd: Int32
        let generation: UInt32
        var transport: Transport
        var machine: ConnectionMachine
        /// Identifies the connection's live timer entry (see `TimerWheel.Entry`).
        var timerTicket: UInt32 = 0
        /// The machine's deadline when the timer wheel last saw it.
        var timerDeadline: Int64
        /// Interest registered with epoll.
        var watchingRead = true
        var watchingWrite = false
        /// A TLS read needed to write: writability is watched too until the next event.
        var tlsWantsWrite = false

        init(fd: Int32, generation: UInt32, transport: Transport, machine: ConnectionMachine) {
            self.fd = fd
            self.generation = generation
            self.transport = transport
            self.machine = machine
            timerDeadline = machine.deadline
        }
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

    private var connections: [Connection?] = []
    private var nextGeneration: UInt32 = 1
    private var wheel: TimerWheel
    private let clock = MonotonicClock()
    private var acceptPausedUntil: Int64?
    /// Whether the listeners are in the epoll set (they leave it while accepting is paused).
    private var listening = true
    private var drainDeadline: Int64 = .max
    /// Connections in the table (kept as a count: the drain loop checks it every iteration).
    private var openConnections = 0
    private let readBuffer: UnsafeMutableRawBufferPointer
    private let stopFlag: StopFlag
    /// This worker's counters, for /metrics.
    private let counters: WorkerCounters
    /// What every connection's machine is given: the time, the limits, the output buffer and the
    /// exchange that answers requests.
    private var context: ConnectionContext<Exchange>

    /// The size of the loop's read buffer: several TLS records, or many pipelined requests.
    static let readBufferSize = 64 * 1024

    init(
        index: Int, listeners: [Listener], tls: TLSServer?, store: SnapshotStore, limits: Limits, logger: Logger,
        stopFlag: StopFlag, counters: WorkerCounters, admin: AdminEndpoint? = nil, fetchLog: FetchLog? = nil,
        accessLog: AccessLog? = nil
    ) throws(SystemError) {
        self.counters = counters
        self.index = index
        self.listeners = listeners
        self.tls = tls
        self.store = store
        self.limits = limits
        self.logger = logger
        self.stopFlag = stopFlag
        loop = try EventLoop()
        let milliseconds = clock.milliseconds()
        let exchange = Exchange(
            snapshot: store.snapshot(), counters: counters, fetchLog: fetchLog, accessLog: accessLog.map(AccessLogBuffer.init),
            admin: admin)
        context = ConnectionContext(now: milliseconds / 1000, milliseconds: milliseconds, limits: limits, answerer: exchange)
        context.out.reserveCapacity(limits.outputHighWater + Self.readBufferSize)
        wheel = TimerWheel(now: milliseconds / 1000)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        for (i, listener) in listeners.enumerated() {
            try loop.add(listener.fd, data: Self.listenerTag | UInt64(i), read: true, write: false)
        }
    }

    deinit {
        readBuffer.deallocate()
    }

    private var now: Int64 { context.now }

    /// Runs until the stop flag is raised.
    func run() {
        loop.claimThread()
        context.answerer.tick(wallSeconds: WallClock.seconds())
        while true {
            if stopFlag.isRaised {
                if !context.draining { beginDrain() }
                if openConnections == 0 || now >= drainDeadline { break }
            }
            do {
                // Wake at least once a second for timeouts and the Date header.
                try loop.wait(timeoutMilliseconds: context.draining ? 100 : 1000) { event in dispatch(event) }
            } catch {
                logger.error("event loop failed", metadata: ["error": "\(error)"])
                return
            }
            context.answerer.flushLog()
            tick()
        }
        defer { context.answerer.flushLog() }
        for case let c? in connections {
            // HTTP/2 clients learn the server is going (GOAWAY) rather than seeing a bare close.
            if case .http2 = c.machine.framing, !c.machine.hasPendingOutput {
                _ = c.machine.stop(&context)
                if !context.out.isEmpty { _ = context.out.withUnsafeBytes { write(c, $0) } }
                context.out.removeAll(keepingCapacity: true)
            }
            close(c)
        }
    }

    // MARK: - Graceful stop

    /// Stops taking connections and lets the open ones finish (SIGTERM): what the kernel already
    /// accepted is taken and served, listeners close, idle connections close now (HTTP/2 ones
    /// after GOAWAY), busy ones close after their current response. The loop ends when none are
    /// left, or at the drain timeout.
    private func beginDrain() {
        context.draining = true
        drainDeadline = now + limits.drainTimeout
        for listener in listeners {
            accept(listener, draining: true)
            if listening { loop.remove(listener.fd) }
            Socket.close(listener.fd)
        }
        listening = false
        for case let c? in connections where c.machine.phase != .lingering {
            perform(c, c.machine.stop(&context))
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
        guard fd < connections.count, let c = connections[fd], c.generation == UInt32(event.data >> 32) else { return }
        refreshSnapshot()
        switch c.machine.phase {
        case .handshaking:
            handshake(c)
        case .readingRequest:
            readRequests(c)
        case .writing:
            if event.writable || event.hangup { flush(c) }
        case .lingering:
            drain(c)
        }
    }

    private func refreshSnapshot() {
        if store.generation != context.answerer.snapshot.generation { context.answerer.snapshot = store.snapshot() }
    }

    private func tick() {
        let milliseconds = clock.milliseconds()
        context.milliseconds = milliseconds
        context.now = milliseconds / 1000
        context.answerer.tick(wallSeconds: WallClock.seconds())
        wheel.advance(to: now) { entry in
            let fd = Int(entry.slot)
            guard fd < connections.count, let c = connections[fd], c.generation == entry.generation, c.timerTicket == entry.ticket else {
                return nil
            }
            if c.machine.deadline > now { return c.machine.deadline }
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
        guard !listening, !context.draining, acceptPausedUntil == nil, !atConnectionLimit else { return }
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
                if error.isDescriptorExhaustion {
                    // nginx's answer to a full descriptor table: stop accepting for a moment
                    // instead of spinning on a listener that stays readable.
                    logger.warning("too many open files; accepting pauses", metadata: ["seconds": "\(limits.acceptPause)"])
                    pauseAccepting()
                    acceptPausedUntil = now + limits.acceptPause
                    return
                }
                continue  // ECONNABORTED and the like: that client is gone
            }
            Socket.setNoDelay(fd)
            let transport: Transport
            if listener.tls {
                guard let tls, let connection = tls.makeConnection(fd: fd) else {
                    Socket.close(fd)
                    continue
                }
                transport = .tls(connection)
            } else {
                transport = .plain
            }
            let generation = nextGeneration
            nextGeneration = nextGeneration == 0x7FFF_FFFF ? 1 : nextGeneration + 1
            let counted: Traffic.ListenerClass? = listener.kind == .admin ? nil : listener.tls ? .https : .http
            let peer = Peer(
                fd: fd, client: context.answerer.accessLog == nil ? "-" : (try? Socket.peerAddress(fd).host) ?? "-",
                isAdmin: listener.kind == .admin, counted: counted)
            let c = Connection(
                fd: fd, generation: generation, transport: transport,
                machine: ConnectionMachine(peer: peer, tls: listener.tls, now: now, limits: limits))
            if let counted { counters.opened(counted) }
            if Int(fd) >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: Int(fd) - connections.count + 1))
            }
            connections[Int(fd)] = c
            openConnections += 1
            do {
                try loop.add(fd, data: data(c), read: true, write: false)
            } catch {
                close(c)
                continue
            }
            wheel.schedule(.init(slot: fd, generation: generation, ticket: c.timerTicket), at: c.timerDeadline)
        }
    }

    private func data(_ c: Connection) -> UInt64 { UInt64(c.generation) << 32 | UInt64(UInt32(c.fd)) }

    // MARK: - Carrying out the machine's decisions

    /// Does what the machine decided, feeding results back until it waits or the connection
    /// ends. True while the connection is reading requests.
    @discardableResult
    private func perform(_ c: Connection, _ first: ConnectionMachine.Next) -> Bool {
        var next = first
        while true {
            switch next {
            case .write:
                if c.machine.hasPendingOutput {
                    next = c.machine.enqueue(&context)
                    continue
                }
                var written = 0
                if !context.out.isEmpty {
                    guard let n = context.out.withUnsafeBytes({ write(c, $0) }) else {
                        context.out.removeAll(keepingCapacity: true)
                        close(c)
                        return false
                    }
                    written = n
                }
                next = c.machine.sent(written, &context)
            case .wait:
                sync(c)
                if case .readingRequest = c.machine.phase { return true }
                return false
            case .linger:
                startLingering(c)
                return false
            case .close:
                close(c)
                return false
            }
        }
    }

    /// Brings the timer wheel and epoll in line with the machine. A later deadline costs a store
    /// (the timer entry re-files itself when it fires); an earlier one files a new entry and
    /// retires the old one.
    private func sync(_ c: Connection) {
        let deadline = c.machine.deadline
        if deadline < c.timerDeadline {
            c.timerTicket &+= 1
            wheel.schedule(.init(slot: c.fd, generation: c.generation, ticket: c.timerTicket), at: deadline)
        }
        c.timerDeadline = deadline
        guard c.machine.phase != .handshaking else { return }
        watch(c, read: c.machine.wantsRead, write: c.machine.wantsWrite || c.tlsWantsWrite)
    }

    private func timedOut(_ c: Connection) {
        logger.debug("connection timed out", metadata: ["phase": "\(c.machine.phase)"])
        if c.machine.peer.counted != nil {
            switch c.machine.phase {
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
            let identity: Responder.TLSIdentity = t.serverName.map { .serverName($0, certificate: t.certificateNames) } ?? .none
            // The first request may already be inside OpenSSL's buffers.
            if perform(c, c.machine.handshakeCompleted(http2: http2, identity: identity, &context)) { readRequests(c) }
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

    // MARK: - Reading and writing

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
                c.tlsWantsWrite = true
                return .wouldBlock
            case .closed, .failed: return .closed
            }
        }
    }

    private func readRequests(_ c: Connection) {
        // Write interest was only for a TLS read that needed to write: drop it, or a level-
        // triggered epoll reports the (always) writable socket in a loop.
        c.tlsWantsWrite = false
        for _ in 0..<limits.readsPerEvent {
            // Back-pressure: the machine stops reading while answered-but-unsent or complete-
            // but-unanswered requests are buffered. The bound is a second line of defence:
            // reaching it means that rule broke, and returning with read interest on would spin a
            // level-triggered epoll, so the connection is closed instead.
            guard c.machine.bufferedInput < limits.maximumBufferedInput else {
                logger.debug("buffered input over its bound; closing", metadata: ["bytes": "\(c.machine.bufferedInput)"])
                close(c)
                return
            }
            switch read(c) {
            case .wouldBlock:
                sync(c)
                return
            case .closed:
                close(c)
                return
            case .bytes(let n):
                let fresh = UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])
                guard perform(c, c.machine.received(fresh, &context)) else { return }
                // A short read drained the socket; epoll reports the next bytes.
                if n < Self.readBufferSize { return }
            }
        }
    }

    /// Writes the pending output (or lets queued requests be answered when none is pending).
    private func flush(_ c: Connection) {
        let written = c.machine.output.withUnsafeBytes { write(c, UnsafeRawBufferPointer(rebasing: $0[c.machine.outputOffset...])) }
        guard let written else {
            close(c)
            return
        }
        perform(c, c.machine.flushed(written, &context))
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

    // MARK: - Closing

    private func startLingering(_ c: Connection) {
        if case .tls(let t) = c.transport { t.shutdown() }
        Socket.shutdownWrite(c.fd)
        c.machine.linger(&context)
        sync(c)
    }

    /// Reads and drops input until the peer closes (or the linger timeout).
    private func drain(_ c: Connection) {
        for _ in 0..<limits.readsPerEvent {
            switch try? Socket.read(c.fd, into: readBuffer) {
            case .done(let n) where n > 0: continue
            case .wouldBlock: return
            default: break
            }
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
        if let listener = c.machine.peer.counted { counters.closed(listener) }
        if !listening { resumeAccepting() }
        c.transport = .plain  // frees the SSL object before the descriptor number can be reused
        Socket.close(c.fd)
    }
}
