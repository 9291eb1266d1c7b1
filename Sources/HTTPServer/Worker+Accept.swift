import Logging
import Reactor
import Synchronization
import TLS

/// Accepting: batches per readiness event, pausing at the connection limit or when descriptors
/// run out, taking everything queued when the server stops.
extension Worker {
    // MARK: - Accepting

    /// Takes the listeners out of the epoll set: connections wait in the kernel's backlog.
    func pauseAccepting() {
        guard listening else { return }
        listening = false
        for listener in listeners { loop.remove(listener.fd) }
    }

    func resumeAccepting() {
        guard !listening, !context.draining, acceptPausedUntil == nil, !atConnectionLimit else { return }
        listening = true
        for (i, listener) in listeners.enumerated() {
            try? loop.add(listener.fd, data: Self.listenerTag | UInt64(i), read: true, write: false, exclusive: listener.shared)
        }
    }

    /// `limits.maxConnections` reached: accepting waits until a connection closes (nginx's
    /// worker_connections), so a flood of connections cannot take all memory or descriptors.
    var atConnectionLimit: Bool { limits.maxConnections > 0 && openConnections >= limits.maxConnections }

    func accept(_ listener: Listener, draining: Bool = false) {
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
            // The incomplete requests of every worker hold all the process allows. Clients that
            // hold it (a few KB on the wire each, a request completed now and then to restart
            // the request timeout) must not keep every newcomer out, Apple's fetcher included:
            // this worker's heaviest holder is closed to let the new connection in, whose
            // request, arriving whole, holds nothing. Only when no connection here holds enough
            // to be worth closing is the new one closed before any TLS or HTTP/2 state is made.
            // Only the HTTPS listeners: HTTP/2 is negotiated by ALPN alone, so a plain HTTP
            // connection never holds what the budget counts, and refusing it would only let
            // whoever holds the budget also stop ACME's HTTP-01 checks and the redirects to
            // HTTPS. Admin connections never count. The holders may all be in another worker's
            // table (each worker has its own SO_REUSEPORT listener and the kernel spreads new
            // connections over them by address): that worker is asked to close its heaviest.
            if listener.kind == .https, context.budget?.isExhausted == true, !evictHeaviestHolder(), !askAnotherWorker() {
                Socket.close(fd)
                counters.refusedForMemory()
                continue
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
            wheel.schedule(.init(slot: fd, generation: generation, ticket: c.registration.timerTicket), at: c.registration.timerDeadline)
        }
    }

    func data(_ c: Connection) -> UInt64 { UInt64(c.generation) << 32 | UInt64(UInt32(c.fd)) }

    /// Least a connection's HTTP/2 session must hold in incomplete requests to be closed for a
    /// newcomer: 1 KB. An ordinary request holds a few hundred bytes, and only while its header
    /// block is split across reads, so it is never the one closed; a floor any higher would let
    /// holders of just under it (three 4 KB streams, a few hundred bytes on the wire) fill the
    /// budget and stay unevictable. Below it, filling the default 32 MB takes over 32,000
    /// connections, whose TLS state alone is a `limits.max-connections` matter.
    static let evictableHolding = 1024

    /// With the process budget spent and a new HTTPS connection waiting: closes this worker's
    /// connection whose HTTP/2 session holds the most incomplete requests, at least
    /// `evictableHolding`, much as nginx closes kept-alive connections when it runs out of
    /// worker connections (`ngx_drain_connections`). True when one was closed (its held bytes go back to the budget as it
    /// is freed). Each pass over the table either closes a holder, which its client paid a TLS
    /// handshake for, or finds none, and then is not repeated for a second: a flood of new
    /// connections with nothing to close costs one pass a second, not one per connection.
    /// A session of this worker growing past `evictableHolding` (`noteHolding`) lifts the pause
    /// at once: a look would now find it.
    func evictHeaviestHolder(whenPaused: Bool = false) -> Bool {
        guard whenPaused || context.milliseconds >= evictionPausedUntil else { return false }
        var heaviest: Connection?
        var most = Self.evictableHolding - 1
        for case let c? in connections {
            guard case .http2(let session) = c.machine.framing, session.heldBytes > most else { continue }
            heaviest = c
            most = session.heldBytes
        }
        guard let heaviest else {
            evictionPausedUntil = context.milliseconds + 1000
            holderSlot?.holdsNone.store(true, ordering: .relaxed)
            return false
        }
        close(heaviest)
        counters.evictedForMemory()
        return true
    }

    /// After a read: a session that now holds `evictableHolding` or more is one a look would close,
    /// so this worker may be asked again, and may look again itself. Only reads add to what a
    /// session holds (`HTTP2Session.receive`).
    func noteHolding(_ c: Connection) {
        guard evictionPausedUntil != 0, case .http2(let session) = c.machine.framing, session.heldBytes >= Self.evictableHolding else {
            return
        }
        evictionPausedUntil = 0
        holderSlot?.holdsNone.store(false, ordering: .relaxed)
    }

    /// With nothing here worth closing: asks a worker not known to hold nothing worth closing to
    /// close its heaviest holder, and takes the new connection. True when one was asked. The
    /// budget stays a bound whatever the answer: the new connection's streams are checked
    /// against it as any other's (`HTTP2Session.room`). A worker asked that finds nothing says so
    /// (`HolderBoard.Slot.holdsNone`) and is not asked again until one of its sessions grows past
    /// `evictableHolding`; so at most one connection per such growth gets in with nothing closed.
    func askAnotherWorker() -> Bool {
        guard let holderSlot, let other = holders?.slot(besides: holderSlot) else { return false }
        other.asked.add(1, ordering: .relaxed)
        other.loop.wake()
        return true
    }

    /// Closes a holder for each new connection another worker took in asking for one, while the
    /// budget is still spent (once per loop iteration, `tick`).
    func evictForOtherWorkers() {
        guard let holderSlot, holderSlot.asked.load(ordering: .relaxed) > 0 else { return }
        var asked = holderSlot.asked.exchange(0, ordering: .relaxed)
        while asked > 0, context.budget?.isExhausted == true, evictHeaviestHolder(whenPaused: true) { asked -= 1 }
    }
}

/// What the serving workers tell each other about their holders: which one to ask to close a
/// holder when the new connection came to a worker with none (`Worker.askAnotherWorker`).
/// Slots are added while the server is made, before any worker thread starts, and never after.
final class HolderBoard: @unchecked Sendable {
    /// One worker's part. `loop` is only woken from other threads, which `EventLoop` allows.
    final class Slot: @unchecked Sendable {
        let loop: EventLoop
        /// New connections other workers took in, each waiting for this worker to close a holder.
        let asked = Atomic<Int>(0)
        /// This worker's last look found no session holding `Worker.evictableHolding`, and none
        /// has grown past it since.
        let holdsNone = Atomic<Bool>(false)

        init(loop: EventLoop) { self.loop = loop }
    }

    private(set) var slots: [Slot] = []

    /// A slot for a worker being made (before the workers start).
    func join(_ loop: EventLoop) -> Slot {
        let slot = Slot(loop: loop)
        slots.append(slot)
        return slot
    }

    /// The first other worker that may hold something worth closing.
    func slot(besides mine: Slot) -> Slot? {
        slots.first { $0 !== mine && !$0.holdsNone.load(ordering: .relaxed) }
    }
}
