import Logging
import Reactor
import TLS

/// The worker's side of a connection's bytes: the TLS handshake, reads into the loop's buffer,
/// writes of the machine's output, and the drain of a lingering close.
extension Worker {
    // MARK: - TLS handshake

    func handshake(_ c: Connection) {
        guard case .tls(let t) = c.transport else { return }
        switch t.handshake() {
        case .done:
            if t.isACMEChallenge {
                // A TLS-ALPN-01 validation is complete with the handshake (RFC 8737 §4): counted
                // apart from the handshakes that carry HTTP, and never read from again.
                counters.acmeChallengeHandshake()
                perform(c, c.machine.handshakeCompleted(.acmeTLS, identity: .none, &context))
                return
            }
            let http2 = t.alpn == "h2"
            counters.handshake(tls13: t.isTLS13, resumed: t.resumed, http2: http2)
            let identity: Responder.TLSIdentity = t.serverName.map { .serverName($0, certificate: t.certificateNames) } ?? .none
            // The first request may already be inside OpenSSL's buffers.
            if perform(c, c.machine.handshakeCompleted(http2 ? .http2 : .http1, identity: identity, &context)) { readRequests(c) }
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

    enum ReadOutcome {
        case bytes(Int)
        case wouldBlock
        case closed
    }

    func read(_ c: Connection) -> ReadOutcome {
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
                c.registration.tlsWantsWrite = true
                return .wouldBlock
            case .closed, .failed: return .closed
            }
        }
    }

    func readRequests(_ c: Connection) {
        // Write interest was only for a TLS read that needed to write: drop it, or a level-
        // triggered epoll reports the (always) writable socket in a loop.
        c.registration.tlsWantsWrite = false
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
                notePartialRecord(c)
                sync(c)
                return
            case .closed:
                close(c)
                return
            case .bytes(let n):
                let fresh = UnsafeRawBufferPointer(rebasing: readBuffer[0..<n])
                guard perform(c, c.machine.received(fresh, &context)) else { return }
                // What is still in the socket, epoll reports again (level-triggered). What TLS read
                // ahead (it hands out one record per read) only another read hands out, or, for
                // part of a record, finds the socket empty and waits for the rest. A plain read
                // that filled the buffer may have left more: read on.
                if n < Self.readBufferSize && !holdsInput(c) { return }
            }
        }
        // Out of reads for this event: input TLS already holds is read after this batch of events
        // (epoll would not report it); input in the socket is reported again.
        if holdsInput(c) { postRead(c) }
    }

    /// Whether TLS holds input read from the socket and not yet handed out.
    func holdsInput(_ c: Connection) -> Bool {
        guard case .tls(let t) = c.transport else { return false }
        return t.hasPendingInput
    }

    /// Reads `c` again once the current batch of events is dispatched (input TLS holds).
    func postRead(_ c: Connection) {
        guard !c.registration.readPosted else { return }
        c.registration.readPosted = true
        postedReads.append(c)
    }

    /// Reads the connections `postRead` named, if still open and reading. Their input was read
    /// from the socket already, so a pass reads at most `readsPerEvent` records each; one still
    /// holding more is posted for the next pass.
    func readPosted() {
        let posted = postedReads
        postedReads.removeAll(keepingCapacity: true)
        for c in posted {
            c.registration.readPosted = false
            guard connections[Int(c.fd)] === c, case .readingRequest = c.machine.phase else { continue }
            readRequests(c)
        }
    }

    /// Tells the machine when TLS holds part of a record: the client has begun to send, so the
    /// request timeout applies rather than the idle one. Otherwise one byte of a record would hold
    /// OpenSSL's read buffer (about 16 KB) for the whole idle timeout.
    func notePartialRecord(_ c: Connection) {
        guard holdsInput(c) else { return }
        c.machine.partialInput(&context)
    }

    /// Writes the pending output (or lets queued requests be answered when none is pending).
    func flush(_ c: Connection) {
        let written = c.machine.output.withUnsafeBytes { write(c, UnsafeRawBufferPointer(rebasing: $0[c.machine.outputOffset...])) }
        guard let written else {
            close(c)
            return
        }
        // Reading again: records TLS read ahead while the machine was writing are not in the
        // socket for epoll to report.
        if perform(c, c.machine.flushed(written, &context)) && holdsInput(c) { postRead(c) }
    }

    /// Writes as much as the socket takes; nil when the connection failed.
    func write(_ c: Connection, _ bytes: UnsafeRawBufferPointer) -> Int? {
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

    /// Reads and drops input until the peer closes (or the linger timeout). A client still
    /// sending after this event's reads is read again at the next event: closing over unread
    /// input would send a reset that discards the response's unsent tail.
    func drain(_ c: Connection) {
        for _ in 0..<limits.readsPerEvent {
            switch try? Socket.read(c.fd, into: readBuffer) {
            case .done(let n) where n > 0: continue
            case .wouldBlock: return
            default: close(c)
            }
            return
        }
    }
}

/// How bytes move on a connection: straight on the socket, or through TLS.
enum Transport {
    case plain
    case tls(TLSConnection)
}
