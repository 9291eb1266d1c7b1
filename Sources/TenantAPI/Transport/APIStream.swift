import CAASALinux
import CAASAOpenSSL
import Glibc
import TLS

/// Why a connection's reading or writing ended.
enum APIStreamEnd: Error, Equatable {
    /// The peer closed (EOF, close_notify, a reset).
    case closed
    /// The deadline passed.
    case timedOut
    /// The listener is stopping (its wake descriptor became readable).
    case stopped
    /// TLS failed; OpenSSL's words, for debug logs.
    case failed(String)
}

/// One accepted connection, plain or TLS, on a non-blocking socket: each read and write waits in
/// poll() on the socket and on the listener's wake descriptor, so every wait has a deadline and
/// `APIListener.stop()` ends all of them at once. Used by its connection's thread only.
final class APIStream {
    let fd: Int32
    /// The listener's eventfd, readable once it stops; never read here (it stays readable).
    private let wake: Int32
    private let ssl: OpaquePointer?
    /// Held while `ssl` exists: the SSL_CTX belongs to it.
    private let tls: APITLS?

    /// Takes ownership of `fd` (closed in deinit). Nil when OpenSSL cannot make a connection object.
    init?(fd: Int32, wake: Int32, tls: APITLS?) {
        self.fd = fd
        self.wake = wake
        self.tls = tls
        if let tls {
            guard let ssl = SSL_new(tls.context.openSSLContext) else {
                ERR_clear_error()
                close(fd)
                return nil
            }
            SSL_set_fd(ssl, fd)
            SSL_set_accept_state(ssl)
            self.ssl = ssl
        } else {
            ssl = nil
        }
    }

    deinit {
        if let ssl { SSL_free(ssl) }
        close(fd)
    }

    var isSecure: Bool { ssl != nil }

    /// Completes the TLS handshake (nothing to do on a plain connection).
    func handshake(until deadline: ContinuousClock.Instant) throws(APIStreamEnd) {
        guard let ssl else { return }
        while true {
            let r = SSL_do_handshake(ssl)
            if r == 1 { return }
            try retry(ssl, r, until: deadline)
        }
    }

    /// Reads at least one byte into `buffer`; how many.
    func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: ContinuousClock.Instant) throws(APIStreamEnd) -> Int {
        while true {
            if let ssl {
                var n = 0
                let r = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &n)
                if r == 1 { return n }
                try retry(ssl, r, until: deadline)
            } else {
                let n = recv(fd, buffer.baseAddress, buffer.count, 0)
                if n > 0 { return n }
                if n == 0 { throw .closed }
                switch errno {
                case EAGAIN, EWOULDBLOCK: try wait(for: Int16(POLLIN), until: deadline)
                case EINTR: continue
                default: throw .closed
                }
            }
        }
    }

    /// Writes all of `bytes` before the deadline.
    func write(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) throws(APIStreamEnd) {
        var offset = 0
        while offset < bytes.count {
            if let ssl {
                var n = 0
                let r = bytes.withUnsafeBytes { all in
                    let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
                    return SSL_write_ex(ssl, rest.baseAddress, rest.count, &n)
                }
                if r == 1 {
                    offset += n
                } else {
                    try retry(ssl, r, until: deadline)
                }
                continue
            }
            let n = bytes.withUnsafeBytes { all in
                let rest = UnsafeRawBufferPointer(rebasing: all[offset...])
                return send(fd, rest.baseAddress, rest.count, Int32(MSG_NOSIGNAL))
            }
            if n >= 0 {
                offset += n
                continue
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK: try wait(for: Int16(POLLOUT), until: deadline)
            case EINTR: continue
            default: throw .closed
            }
        }
    }

    /// Ends the connection: close_notify on TLS (best effort, never waited for), then half-closes
    /// the socket so the peer reads everything written before the end.
    func finish() {
        if let ssl {
            _ = SSL_shutdown(ssl)
            ERR_clear_error()
        }
        shutdown(fd, Int32(SHUT_WR))
    }

    /// After an SSL call that did not complete: waits for what OpenSSL wants, or throws.
    private func retry(_ ssl: OpaquePointer, _ r: Int32, until deadline: ContinuousClock.Instant) throws(APIStreamEnd) {
        switch SSL_get_error(ssl, r) {
        case CAASAOpenSSL_SSL_ERROR_WANT_READ: try wait(for: Int16(POLLIN), until: deadline)
        case CAASAOpenSSL_SSL_ERROR_WANT_WRITE: try wait(for: Int16(POLLOUT), until: deadline)
        case CAASAOpenSSL_SSL_ERROR_ZERO_RETURN:
            throw .closed
        case CAASAOpenSSL_SSL_ERROR_SYSCALL:
            ERR_clear_error()
            throw .closed
        default:
            throw .failed(TLSError.openSSLReasons())
        }
    }

    /// Waits until the socket is ready for `events`, the listener stops, or the deadline passes.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(APIStreamEnd) {
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .zero else { throw .timedOut }
            var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let r = poll(&fds, 2, Self.milliseconds(remaining))
            if r < 0 {
                if errno == EINTR { continue }
                throw .closed
            }
            if fds[1].revents != 0 { throw .stopped }
            // Readiness, an error or a hang-up: the next call on the socket says which.
            if fds[0].revents != 0 { return }
        }
    }

    /// A poll() timeout for `duration`, rounded up (a rounded-down 0 would spin), at most a day.
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        let capped = min(max(seconds, 0), 86_400)
        return Int32(capped * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
    }
}
