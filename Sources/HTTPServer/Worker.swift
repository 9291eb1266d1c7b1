import HTTP2
import HTTPCore
import Logging
import Reactor
import Served
import TLS

// Longer than 400 lines on purpose: the loop's dispatch, its connection table and the timer wheel
// share state owned by one thread, without a lock; accepting is in Worker+Accept.swift.

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
        /// A socket every worker accepts on (one passed by socket activation): the server closes
        /// it once every worker has stopped, not each worker.
        var shared = false
        var tls: Bool { kind == .https }
    }

    /// One open connection: its socket and TLS state, its timer and epoll bookkeeping, and its
    /// protocol state machine.
    final class Connection {
        let fd: Int32
        let generation: UInt32
        var transport: Transport
        var machine: ConnectionMachine
        /// The worker's bookkeeping of the connection with epoll and the timer wheel, one value
        /// so that a step reads and writes it once.
        var registration: Registration
        /// Counted in `Worker.holdingConnections` (`Worker.noteHolding`).
        var holding = false

        init(fd: Int32, generation: UInt32, transport: Transport, machine: ConnectionMachine) {
            self.fd = fd
            self.generation = generation
            self.transport = transport
            self.machine = machine
            registration = Registration(timerDeadline: machine.deadline)
        }
    }

    struct Registration {
        /// Identifies the connection's live timer entry (see `TimerWheel.Entry`).
        var timerTicket: UInt32 = 0
        /// The machine's deadline when the timer wheel last saw it.
        var timerDeadline: Int64
        /// Interest registered with epoll.
        var watchingRead = true
        var watchingWrite = false
        /// A TLS read needed to write: writability is watched too until the next event.
        var tlsWantsWrite = false
        /// In `postedReads`.
        var readPosted = false
        /// In `awaitingAnswers`.
        var awaiting = false
        /// EPOLLRDHUP alone is watched: the client's FIN while it waits for an answer.
        var watchingHangup = false
    }

    /// epoll data of a listener: the top bit set, the listener's index below.
    static let listenerTag: UInt64 = 1 << 63

    let index: Int
    let loop: EventLoop
    let listeners: [Listener]
    let tls: TLSServer?
    let store: SnapshotStore
    /// The limits in force: the ones every connection's machine is given (`retune` changes them).
    var limits: Limits { context.limits }
    let logger: Logger
    /// Where changed limits and access logs come from, and the version this worker took.
    let tuning: Tuning
    var tuningVersion: UInt64 = 0
    /// Where this worker records the version it took (`Tuning.took`).
    let tuningSlot: Int

    var connections: [Connection?] = []
    var nextGeneration: UInt32 = 1
    var wheel: TimerWheel
    let clock = MonotonicClock()
    var acceptPausedUntil: Int64?
    /// Connections whose HTTP/2 session holds `evictableHolding` or more (`noteHolding`).
    var holdingConnections = 0
    /// What the serving workers tell each other about their holders, and this worker's part of
    /// it (nil: the admin worker).
    let holders: HolderBoard?
    let holderSlot: HolderBoard.Slot?
    /// Whether the listeners are in the epoll set (they leave it while accepting is paused).
    var listening = true
    var drainDeadline: Int64 = .max
    /// Connections in the table (kept as a count: the drain loop checks it every iteration).
    var openConnections = 0
    /// The most connections open since memory was last given back (`trimAfterBurst`).
    var peakConnections = 0
    /// The second of the next `trimAfterBurst` check.
    var nextTrimCheck: Int64 = 0
    /// Connections open and bytes held (all workers) at the last `trimAfterBurst` check: while
    /// either still falls, the burst is still closing.
    var openAtLastCheck = 0
    var heldAtLastCheck = 0
    /// Connections to read after the current batch of events: TLS holds their input, so epoll
    /// will not report it (`postRead`).
    var postedReads: [Connection] = []
    /// Connections waiting for an answer made on another thread (the admin worker's), looked at
    /// after each batch of events; the answer's giver wakes the loop.
    var awaitingAnswers: [Connection] = []
    /// The admin endpoint's count of unsent bytes (the admin worker's only).
    let adminOutput: AdminOutput?
    let readBuffer: UnsafeMutableRawBufferPointer
    let stopFlag: AtomicFlag
    /// This worker's counters, for /metrics.
    let counters: WorkerCounters
    /// What every connection's machine is given: the time, the limits, the output buffer and the
    /// exchange that answers requests.
    var context: ConnectionContext<Exchange>

    /// The size of the loop's read buffer: many pipelined requests (TLS hands out one record, up
    /// to 16 KB, per read).
    static let readBufferSize = 64 * 1024

    init(
        index: Int, listeners: [Listener], tls: TLSServer?, store: SnapshotStore, limits: Limits, logger: Logger,
        stopFlag: AtomicFlag, tuning: Tuning, counters: WorkerCounters, admin: AdminEndpoint? = nil, fetchLog: FetchLog? = nil,
        accessLog: AccessLog? = nil, http01: HTTP01Resolver? = nil, httpsRedirect: HTTPSRedirect.Prepared? = nil,
        budget: RequestBudget? = nil, holders: HolderBoard? = nil, ownershipAnswer: OwnershipAnswerResolver? = nil
    ) throws(SystemError) {
        self.counters = counters
        adminOutput = admin?.output
        self.index = index
        self.listeners = listeners
        self.tls = tls
        self.store = store
        self.logger = logger
        self.stopFlag = stopFlag
        self.tuning = tuning
        tuningVersion = tuning.version
        tuningSlot = tuning.join(version: tuningVersion)
        loop = try EventLoop()
        self.holders = holders
        let loop = loop
        holderSlot = holders?.join(wake: { loop.wake() })
        let milliseconds = clock.milliseconds()
        let exchange = Exchange(
            snapshot: store.snapshot(), counters: counters, fetchLog: fetchLog, accessLog: accessLog.map(AccessLogBuffer.init),
            admin: admin, http01: http01, httpsRedirect: httpsRedirect, ownershipAnswer: ownershipAnswer)
        context = ConnectionContext(
            now: (milliseconds + 999) / 1000, milliseconds: milliseconds, limits: limits, answerer: exchange, budget: budget,
            frameBuffer: SharedFrameBuffer(), adminOutput: admin?.output)
        second = milliseconds / 1000
        context.out.reserveCapacity(limits.outputHighWater + Self.readBufferSize)
        wheel = TimerWheel(now: milliseconds / 1000)
        readBuffer = .allocate(byteCount: Self.readBufferSize, alignment: 16)
        for (i, listener) in listeners.enumerated() {
            try loop.add(listener.fd, data: Self.listenerTag | UInt64(i), read: true, write: false, exclusive: listener.shared)
        }
    }

    deinit {
        readBuffer.deallocate()
    }

    /// The current monotonic second, rounded down: what deadlines are compared with. Deadlines
    /// are set from `context.now`, the same time rounded up, so that no timeout fires early.
    var second: Int64
    var now: Int64 { context.now }

    /// Runs until the stop flag is raised.
    func run() {
        loop.claimThread()
        context.answerer.tick(wallSeconds: WallClock.seconds())
        while true {
            if stopFlag.isRaised {
                if !context.draining { beginDrain() }
                if openConnections == 0 || second >= drainDeadline { break }
            }
            do {
                // Wake at least once a second for timeouts and the Date header.
                // The clock is read once per batch of events, before the first: a deadline set
                // from a time read before a second-long wait would be up to that much short.
                var fresh = false
                let timeout: Int32 = postedReads.isEmpty ? (context.draining ? 100 : 1000) : 0
                try loop.wait(timeoutMilliseconds: timeout) { event in
                    if !fresh {
                        readClock()
                        fresh = true
                    }
                    dispatch(event)
                }
                if !postedReads.isEmpty {
                    if !fresh { readClock() }
                    refreshSnapshot()
                    readPosted()
                }
            } catch {
                logger.error("event loop failed", metadata: ["error": "\(error)"])
                return
            }
            context.answerer.flushLog()
            tick()
            if !awaitingAnswers.isEmpty { deliverAnswers() }
        }
        defer { context.answerer.flushLog() }
        for case let c? in connections {
            // HTTP/2 clients learn the server is going (the GOAWAY naming the last stream served)
            // rather than seeing a bare close.
            if case .http2 = c.machine.framing, !c.machine.hasPendingOutput {
                _ = c.machine.graceEnded(&context)
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
    func beginDrain() {
        context.draining = true
        drainDeadline = now + limits.drainTimeout
        for listener in listeners {
            // A passed socket stays open in the manager that passed it: what is queued there
            // waits for the next process instead of being taken in by this one as it stops.
            if !listener.shared { accept(listener, draining: true) }
            if listening { loop.remove(listener.fd) }
            if !listener.shared { Socket.close(listener.fd) }
        }
        listening = false
        for case let c? in connections where c.machine.phase != .lingering {
            perform(c, c.machine.stop(&context))
        }
    }

    // MARK: - Dispatch

    func dispatch(_ event: EventLoop.Event) {
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
        case .answering:
            // Nothing is watched but errors and hang-ups (the FIN too: EPOLLRDHUP, `sync`): the
            // client is gone, its waiting place is freed and its answer, when given, is dropped.
            if event.hangup { close(c) }
        case .lingering:
            drain(c)
        }
    }

    /// Takes the limits and access log `Server.Tuner.tune` published: each connection's next
    /// deadline is set from them (a deadline already running is kept), and a drain under way
    /// keeps its own.
    func retune() {
        let (version, fresh, log) = tuning.current()
        tuningVersion = version
        defer { tuning.took(version, slot: tuningSlot) }
        context.limits = fresh
        if listeners.first?.kind != .admin && context.answerer.accessLog?.log !== log {
            context.answerer.flushLog()
            context.answerer.accessLog = log.map(AccessLogBuffer.init)
        }
    }

    func refreshSnapshot() {
        context.refreshSnapshot(from: store)
    }

    func readClock() {
        let milliseconds = clock.milliseconds()
        context.milliseconds = milliseconds
        context.now = (milliseconds + 999) / 1000
        second = milliseconds / 1000
    }

    func tick() {
        readClock()
        evictForAsks()
        if tuning.version != tuningVersion { retune() }
        context.answerer.tick(wallSeconds: WallClock.seconds())
        // Carried out once the wheel is no longer being advanced: each connection's output is
        // produced and written by itself (the worker's output buffer is shared).
        var expired: [Connection] = []
        wheel.advance(to: second) { entry in
            let fd = Int(entry.slot)
            guard fd < connections.count, let c = connections[fd], c.generation == entry.generation,
                c.registration.timerTicket == entry.ticket
            else {
                return nil
            }
            if c.machine.deadline > second { return c.machine.deadline }
            expired.append(c)
            return nil
        }
        for c in expired {
            guard connections[Int(c.fd)] === c else { continue }
            // A stopping HTTP/2 session's grace: its last GOAWAY, not a close.
            if let next = c.machine.graceEnded(&context) {
                // Its entry was used up: the next deadline files a new one.
                c.registration.timerDeadline = .max
                perform(c, next)
            } else if c.machine.endsWithStop(context) {
                logger.debug("idle connection closed by the stop")
                close(c)
            } else {
                timedOut(c)
            }
        }
        if let until = acceptPausedUntil, second >= until {
            acceptPausedUntil = nil
            resumeAccepting()
        }
        if context.streamsRefused > 0 {
            counters.streamsRefused(context.streamsRefused)
            context.streamsRefused = 0
        }
        if second >= nextTrimCheck {
            nextTrimCheck = second + 1
            trimAfterBurst()
        }
    }

    // MARK: - Memory after a burst

    /// Connections this worker's count must fall by since its peak, and at least half the peak,
    /// before freed memory is given back: each held TLS and HTTP/2 state of about 15 to 35 KB
    /// ("Idle connections" in docs/benchmarks.md), so 32 of them leave about 1 MB in the
    /// allocator's free lists. Half the peak: a server with steady churn never trims for it.
    static let trimConnectionDrop = 32
    /// Bytes of incomplete requests (all workers) a burst must have reached, and then fallen to
    /// half of, before freed memory is given back.
    static let trimHeldBytes = 1024 * 1024

    /// Gives memory freed after a burst back to the system (`Memory.trim`, glibc's
    /// `malloc_trim`): without it the allocator keeps its peak, and a burst of connections or of
    /// held requests leaves the process at that size after they close. Only after the
    /// connections fell to half their peak (by at least `trimConnectionDrop`) or held bytes to
    /// half of at least `trimHeldBytes`, and at most once in `Memory.servingTrimInterval` for all
    /// workers together: a trim walks the allocator's free lists and holds each arena's lock
    /// meanwhile, which a steady server has no reason to pay for. While a trim is not due, the
    /// peaks keep growing, so that a burst in between is seen when it is; they start again only
    /// at a trim.
    func trimAfterBurst() {
        peakConnections = max(peakConnections, openConnections)
        let held = context.budget?.inUse ?? 0
        defer { (openAtLastCheck, heldAtLastCheck) = (openConnections, held) }
        guard Memory.serving.isDue(now: second),
            Self.burstIsOver(
                peakConnections: peakConnections, openConnections: openConnections,
                heldHighWater: context.budget?.highWaterMark ?? 0, held: held,
                openBefore: openAtLastCheck, heldBefore: heldAtLastCheck),
            Memory.serving.trim(now: second)
        else { return }
        // The next burst is measured from here.
        peakConnections = openConnections
        _ = context.budget?.takeHighWater()
    }

    /// Whether a burst is over: the connections fell from their peak by `trimConnectionDrop` and
    /// by half the peak at least, or the held bytes fell to half a high-water mark of
    /// `trimHeldBytes` or more; and neither fell since the last check (`openBefore`,
    /// `heldBefore`, a second ago). A trim while the burst's connections are still closing
    /// (in this worker or another) returns only what was freed so far, and starts the next
    /// burst's peaks at what is still held: the rest, under the bounds, would stay in the
    /// allocator for good (seen as about 1 MB of 4 kept after 40 held connections closed over
    /// two workers, Tests/aasadTests/HTTP2BudgetTests.swift `returnedAfterBurst`).
    static func burstIsOver(
        peakConnections: Int, openConnections: Int, heldHighWater: Int, held: Int, openBefore: Int = 0, heldBefore: Int = 0
    ) -> Bool {
        guard openConnections >= openBefore && held >= heldBefore else { return false }
        let drop = peakConnections - openConnections
        if drop >= trimConnectionDrop && drop >= peakConnections / 2 { return true }
        return heldHighWater >= trimHeldBytes && held <= heldHighWater / 2
    }

    // MARK: - Carrying out the machine's decisions

    /// Does what the machine decided, feeding results back until it waits or the connection
    /// ends. True while the connection is reading requests.
    @discardableResult
    func perform(_ c: Connection, _ first: ConnectionMachine.Next) -> Bool {
        var next = first
        while true {
            switch next {
            case .write:
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
                return sync(c)
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
    @discardableResult
    func sync(_ c: Connection) -> Bool {
        let wants = c.machine.wants
        var r = c.registration
        if wants.deadline < r.timerDeadline {
            r.timerTicket &+= 1
            wheel.schedule(.init(slot: c.fd, generation: c.generation, ticket: r.timerTicket), at: wants.deadline)
        }
        r.timerDeadline = wants.deadline
        if !wants.handshaking {
            let write = wants.write || r.tlsWantsWrite
            if r.watchingRead != wants.read || r.watchingWrite != write || r.watchingHangup != wants.answering {
                r.watchingRead = wants.read
                r.watchingWrite = write
                r.watchingHangup = wants.answering
                try? loop.modify(c.fd, data: data(c), read: wants.read, write: write, hangup: wants.answering)
            }
        }
        c.registration = r
        noteHolding(c)
        if adminOutput != nil { noteAdminOutput(c, wants) }
        return wants.readingRequests
    }

    func timedOut(_ c: Connection) {
        logger.debug("connection timed out", metadata: ["phase": "\(c.machine.phase)"])
        if c.machine.peer.counted != nil {
            switch c.machine.phase {
            case .handshaking:
                counters.timedOut(.handshake)
                counters.handshakeFailed(.timeout)
            case .readingRequest(let started): counters.timedOut(started ? .request : .idle)
            case .writing: counters.timedOut(.write)
            case .lingering: counters.timedOut(.linger)
            // Only the admin listener's connections wait for an answer, and they are not counted.
            case .answering: break
            }
        }
        close(c)
    }

    // MARK: - Closing

    func startLingering(_ c: Connection) {
        if case .tls(let t) = c.transport {
            t.shutdown()
            // Lingering reads the socket itself and drops what it reads: the SSL object (about
            // 12 KB, and any buffer it read ahead) has nothing left to do.
            c.transport = .plain
        }
        Socket.shutdownWrite(c.fd)
        // Write interest a TLS read once asked for must not outlive it: a lingering socket is
        // always writable, and a level-triggered epoll would report it in a loop.
        c.registration.tlsWantsWrite = false
        c.machine.linger(&context)
        sync(c)
    }

    /// Epoll interest during the handshake, as TLS asks for it.
    func watch(_ c: Connection, read: Bool, write: Bool) {
        guard c.registration.watchingRead != read || c.registration.watchingWrite != write else { return }
        c.registration.watchingRead = read
        c.registration.watchingWrite = write
        try? loop.modify(c.fd, data: data(c), read: read, write: write)
    }

    func close(_ c: Connection) {
        guard Int(c.fd) < connections.count, connections[Int(c.fd)] === c else { return }
        noteHolding(c, closing: true)
        c.machine.awaited?.pending.abandon()
        if let adminOutput { c.machine.settle(adminOutput, closing: true) }
        loop.remove(c.fd)
        connections[Int(c.fd)] = nil
        openConnections -= 1
        if let listener = c.machine.peer.counted { counters.closed(listener) }
        if !listening { resumeAccepting() }
        c.transport = .plain  // frees the SSL object before the descriptor number can be reused
        Socket.close(c.fd)
    }
}
