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
        /// The handshake or record layer failed; `reason` is for debug logs.
        case failed(String)
    }

    let ssl: OpaquePointer
    /// The context the SNI callback chose, kept alive for as long as the connection uses it.
    var chosenContext: TLSContext?
    /// The server name the client sent (lower case), if any.
    public private(set) var serverName: String?
    /// Whether the client sent SNI: without it, Host alone decides (no 421).
    public var sentServerName: Bool { serverName != nil }

    /// The index under which each SSL points back at its TLSConnection.
    static let connectionIndex: Int32 = CRYPTO_get_ex_new_index(CRYPTO_EX_INDEX_SSL, 0, nil, nil, nil, nil)

    init(ssl: OpaquePointer, fd: Int32) {
        self.ssl = ssl
        SSL_set_fd(ssl, fd)
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

    /// The identity of the certificate the handshake used.
    public var certificateIdentity: String? {
        (chosenContext ?? TLSContext.of(ssl))?.identity
    }

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
            let reason = TLSError.openSSLReasons()
            return .failed(reason)
        }
    }
}
