import CAASAOpenSSL

/// One server-side TLS connection on a non-blocking socket. OpenSSL reads and writes the socket
/// itself (SSL_set_fd); every call returns at once with what it could do.
public final class TLSConnection {
    public enum Progress: Equatable {
        case done
        case wantRead
        case wantWrite
        /// The peer closed (close_notify or EOF).
        case closed
        /// The handshake or record layer failed: a bounded reason (a metrics label) and OpenSSL's
        /// own words (for debug logs).
        case failed(TLSFailure, String)
    }

    let ssl: OpaquePointer
    /// The server that accepted the connection; its SNI callback finds it here (never through an
    /// unretained pointer whose owner may be gone).
    let server: TLSServer
    /// The context the connection started on (the default when it was accepted). Held strongly:
    /// the SSL keeps only the SSL_CTX alive, and the cache may drop this context (or the default
    /// may be replaced) while the handshake is pending.
    let startedContext: TLSContext
    /// The context the ClientHello callback chose, held for as long as the connection uses it.
    var chosenContext: TLSContext?
    /// The server name the client sent (lower case), if any.
    public private(set) var serverName: String?
    /// Why the ClientHello callback refused the handshake, when it did: OpenSSL then reports only
    /// that a callback failed.
    var refusal: TLSFailure?

    /// The index under which each SSL points back at its TLSConnection.
    static let connectionIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    init(ssl: OpaquePointer, fd: Int32, server: TLSServer, context: TLSContext) {
        self.ssl = ssl
        self.server = server
        startedContext = context
        SSL_set_fd(ssl, fd)
        // Read up to a buffer's worth (about 16 KB) of what the socket holds in one system call,
        // rather than a record's 5-byte header and then its body in two. Records OpenSSL holds are
        // invisible to epoll, so the worker reads on while `hasPendingInput` says so (see
        // `Worker.readRequests`). A buffer read ahead is kept until handed out: a connection
        // that is writing may hold one; an idle one (RELEASE_BUFFERS) holds none.
        SSL_set_read_ahead(ssl, 1)
        SSL_set_accept_state(ssl)
        SSL_set_ex_data(ssl, Self.connectionIndex, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        SSL_free(ssl)
    }

    static func of(_ ssl: OpaquePointer) -> TLSConnection? {
        guard let p = SSL_get_ex_data(ssl, connectionIndex) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(p).takeUnretainedValue()
    }

    func recordServerName(_ name: String?) {
        serverName = name
    }

    /// The context whose certificate the connection presented: the one SNI chose, else the one
    /// it started on.
    var presentedContext: TLSContext { chosenContext ?? startedContext }

    /// Whether the handshake presented a TLS-ALPN-01 challenge certificate (RFC 8737): the
    /// connection then speaks `acme-tls/1`, which carries no application data (§4), and must end
    /// right after the handshake. Decided by the context, not by the ALPN result alone: a serving
    /// context never selects `acme-tls/1`, and a challenge context selects nothing else (though a
    /// second ClientHello after a HelloRetryRequest that drops ALPN completes with none selected:
    /// the connection still ends here, unread).
    public var isACMEChallenge: Bool { presentedContext.purpose == .acmeChallenge }

    /// The identity of the certificate the handshake used.
    public var certificateIdentity: String { presentedContext.identity }

    /// The DNS names of the certificate the connection presented (for the 421 rule).
    public var certificateNames: CertificateNames { presentedContext.names }

    /// The ALPN protocol agreed, e.g. `http/1.1` or `h2`; nil without ALPN.
    public var alpn: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The protocol version, e.g. `TLSv1.3`.
    public var version: String {
        guard let v = SSL_get_version(ssl) else { return "" }
        return String(validatingCString: v) ?? ""
    }

    /// Whether TLS 1.3 was negotiated (the server refuses anything below 1.2).
    public var isTLS13: Bool { SSL_version(ssl) == TLS1_3_VERSION }

    /// Whether the handshake resumed an earlier session (a ticket) rather than a full one.
    public var resumed: Bool { SSL_session_reused(ssl) == 1 }

    /// Whether OpenSSL holds input it has not handed out: after a read that wanted more, part of
    /// a record (with RELEASE_BUFFERS, the only time it keeps a read buffer, about 16 KB); after
    /// a read that returned bytes, possibly whole records read ahead, which epoll will not report.
    public var hasPendingInput: Bool { SSL_has_pending(ssl) == 1 }

    public func handshake() -> Progress {
        let r = SSL_do_handshake(ssl)
        return r == 1 ? .done : progress(r)
    }

    /// Reads decrypted bytes; `.done` with the count (never 0: a clean close is `.closed`).
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> (Progress, Int) {
        var n = 0
        let r = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &n)
        return r == 1 ? (.done, n) : (progress(r), 0)
    }

    /// Writes bytes; `.done` with how many were taken (at least one).
    public func write(_ bytes: UnsafeRawBufferPointer) -> (Progress, Int) {
        guard bytes.count > 0 else { return (.done, 0) }
        var n = 0
        let r = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &n)
        return r == 1 ? (.done, n) : (progress(r), 0)
    }

    /// Sends close_notify (best effort: the socket is closed right after).
    public func shutdown() {
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    private func progress(_ r: Int32) -> Progress {
        let e = SSL_get_error(ssl, r)
        switch e {
        case CAASAOpenSSL_SSL_ERROR_WANT_READ: return .wantRead
        case CAASAOpenSSL_SSL_ERROR_WANT_WRITE: return .wantWrite
        case CAASAOpenSSL_SSL_ERROR_ZERO_RETURN:
            return .closed
        case CAASAOpenSSL_SSL_ERROR_SYSCALL:
            ERR_clear_error()
            return .closed
        default:
            let failure = refusal ?? TLSFailure(openSSLReason: ERR_GET_REASON(ERR_peek_error()))
            return .failed(failure, TLSError.openSSLReasons())
        }
    }
}

/// Why a TLS connection failed, from a small fixed set (metrics labels must be bounded).
public enum TLSFailure: String, CaseIterable, Sendable {
    /// The client offers only versions we refuse (TLS 1.0/1.1, SSL 3) or refused ours.
    case protocolVersion = "protocol_version"
    /// No cipher suite, group or signature algorithm in common.
    case noSharedCipher = "no_shared_cipher"
    /// Not TLS at all: plain HTTP, a proxy request or garbage sent to the HTTPS port.
    case notTLS = "not_tls"
    /// The client rejected our certificate (unknown CA, expired, wrong name).
    case certificateRejected = "certificate_rejected"
    /// The client closed the connection before the handshake finished.
    case peerClosed = "peer_closed"
    /// The handshake did not finish within the handshake timeout.
    case timeout
    /// The client offered only `acme-tls/1` (RFC 8737) without SNI, or for a name without a
    /// pending TLS-ALPN-01 challenge, and was refused with `no_application_protocol`.
    case acmeChallengeUnavailable = "acme_challenge_unavailable"
    /// Anything else.
    case other

    init(openSSLReason reason: Int32) {
        switch reason {
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_VERSION_TOO_LOW, SSL_R_NO_PROTOCOLS_AVAILABLE, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
            self = .protocolVersion
        case SSL_R_NO_SHARED_CIPHER, SSL_R_NO_SHARED_GROUPS, SSL_R_NO_SUITABLE_SIGNATURE_ALGORITHM:
            self = .noSharedCipher
        case SSL_R_HTTP_REQUEST, SSL_R_HTTPS_PROXY_REQUEST, SSL_R_WRONG_VERSION_NUMBER, SSL_R_UNKNOWN_PROTOCOL,
            SSL_R_PACKET_LENGTH_TOO_LONG, SSL_R_RECORD_LENGTH_MISMATCH:
            self = .notTLS
        case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE, SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED, SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN,
            SSL_R_TLSV1_ALERT_UNKNOWN_CA, SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE, SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED,
            SSL_R_TLSV1_ALERT_ACCESS_DENIED, SSL_R_TLSV1_UNRECOGNIZED_NAME:
            self = .certificateRejected
        default:
            self = .other
        }
    }
}
