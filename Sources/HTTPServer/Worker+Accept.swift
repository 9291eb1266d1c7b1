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
            // this worker's heaviest holder is closed to let the new connection in, whose
            // request, arriving whole, holds nothing. Only when no connection here holds enough
            // to be worth closing is the new one closed before any TLS or HTTP/2 state is made.
            // Only the HTTPS listeners: HTTP/2 is negotiated by ALPN alone, so a plain HTTP
            // connection never holds what the budget counts, and refusing it would only let
            // whoever holds the budget also stop ACME's HTTP-01 checks and the redirects to
            // HTTPS. Admin connections never count.
            if listener.kind == .https, context.budget?.isExhausted == true, !evictHeaviestHolder() {
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
    func evictHeaviestHolder() -> Bool {
        guard context.milliseconds >= evictionPausedUntil else { return false }
        var heaviest: Connection?
        var most = Self.evictableHolding - 1
        for case let c? in connections {
            guard case .http2(let session) = c.machine.framing, session.heldBytes > most else { continue }
            heaviest = c
            most = session.heldBytes
        }
        guard let heaviest else {
            evictionPausedUntil = context.milliseconds + 1000
            return false
        }
        close(heaviest)
        counters.evictedForMemory()
        return true
    }
}
