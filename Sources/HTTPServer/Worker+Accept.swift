import Logging
import Reactor
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
            // a holder is closed to let the new connection in, whose request, arriving whole,
            // holds nothing. When no worker has a holder left to close, the new one is closed
            // before any TLS or HTTP/2 state is made. Only the HTTPS listeners: HTTP/2 is
            // negotiated by ALPN alone, so a plain HTTP connection never holds what the budget
            // counts, and refusing it would only let whoever holds the budget also stop ACME's
            // HTTP-01 checks and the redirects to HTTPS. Admin connections never count.
            if listener.kind == .https, context.budget?.isExhausted == true, !evictForNewcomer() {
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

    /// With the process budget spent and a new HTTPS connection waiting: has a holder closed for
    /// it, here or in another worker's table (`HolderBoard.reserve`), much as nginx closes
    /// kept-alive connections when it runs out of worker connections (`ngx_drain_connections`).
    /// True when one was claimed: the newcomer is let in. Refusing costs no look at any table:
    /// the workers' counts say there is nothing to close. The budget stays a bound whatever
    /// happens next: the newcomer's streams are checked against it as any other's
    /// (`HTTP2Session.room`).
    func evictForNewcomer() -> Bool {
        guard let holderSlot, let holders, let slot = holders.reserve(for: holderSlot) else { return false }
        if slot === holderSlot {
            evictForAsks()
        } else {
            slot.wake()
        }
        return true
    }

    /// Closes a holder for each newcomer let in against this worker's holders (by it or another
    /// worker, `HolderBoard.Slot.asked`), the heaviest first, in one pass over the table; run
    /// once per loop iteration (`tick`). An ask whose holder let go of its bytes by itself since
    /// has nothing left to close: the budget got them back all the same. With the budget no
    /// longer spent, the newcomers fit and nothing is closed.
    func evictForAsks() {
        guard let holderSlot else { return }
        let asked = holderSlot.asked.load(ordering: .acquiring)
        guard asked > 0 else { return }
        if context.budget?.isExhausted == true {
            for c in heaviestHolders(min(asked, holdingConnections)) {
                close(c)
                counters.evictedForMemory()
            }
        }
        // Only now: while the closed holders were still counted, no claim could be made
        // against them.
        holderSlot.asked.subtract(asked, ordering: .releasing)
    }

    /// This worker's `count` holders holding the most.
    func heaviestHolders(_ count: Int) -> [Connection] {
        guard count > 0 else { return [] }
        var found: [(held: Int, connection: Connection)] = []
        found.reserveCapacity(holdingConnections)
        for case let c? in connections where c.holding {
            guard case .http2(let session) = c.machine.framing else { continue }
            found.append((session.heldBytes, c))
        }
        found.sort { $0.held > $1.held }
        return found.prefix(count).map(\.connection)
    }

    /// Keeps `holdingConnections` and the board's count exact: called after every step of a
    /// connection (`sync`, which each step the machine takes ends in, unless it closes). A
    /// session's held bytes change only within such a step (`HTTP2Session.receive` and `send`
    /// settle them), and go with the connection when it closes (`close`).
    func noteHolding(_ c: Connection, closing: Bool = false) {
        var holds = false
        if !closing, case .http2(let session) = c.machine.framing { holds = session.heldBytes >= Self.evictableHolding }
        guard holds != c.holding else { return }
        c.holding = holds
        holdingConnections += holds ? 1 : -1
        holderSlot?.holders.store(holdingConnections, ordering: .releasing)
    }
}
