import CAASAOpenSSL
import Hashing
import Synchronization

/// Why a certificate or key could not be used; the message names the file and OpenSSL's reason.
public struct TLSError: Error, CustomStringConvertible, Sendable {
    /// The file at fault, when there is one.
    public var file: String?
    /// What is wrong and what to do.
    public var reason: String
    /// The failure is not about the files' bytes (OpenSSL could not make or set up a context,
    /// as under memory pressure): the same bytes may load on the next try, so `TLSServer` never
    /// remembers it.
    public var transient = false

    public init(_ reason: String, file: String? = nil, transient: Bool = false) {
        self.reason = reason
        self.file = file
        self.transient = transient
    }

    public var description: String { file.map { "\($0): \(reason)" } ?? reason }

    /// The OpenSSL error queue as one line (and cleared).
    package static func openSSLReasons() -> String {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            reasons.append(String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return reasons.isEmpty ? "unknown OpenSSL error" : reasons.joined(separator: "; ")
    }
}

/// The oldest protocol version a server accepts: TLS 1.2 (Mozilla's "intermediate", which every
/// Apple device since iOS 5 speaks) or TLS 1.3 only ("modern").
public enum TLSVersion: String, Sendable, CaseIterable {
    case tls12 = "1.2"
    case tls13 = "1.3"
}

/// One `SSL_CTX`: a certificate chain and key with the server's protocol settings. Sites whose
/// certificate files have the same bytes share one (an SSL_CTX costs tens of kilobytes).
public final class TLSContext: @unchecked Sendable {
    // @unchecked: the SSL_CTX is configured in init and only read afterwards; OpenSSL makes
    // SSL_new and SSL_set_SSL_CTX on a shared context thread-safe.

    /// What a context's certificate is for, which decides the protocols its ALPN selects.
    public enum Purpose: Sendable {
        /// A site's (or the default) certificate: ALPN selects `h2` or `http/1.1`, never `acme-tls/1`.
        case serving
        /// A TLS-ALPN-01 challenge certificate (RFC 8737 §3): ALPN selects `acme-tls/1` and nothing
        /// else, and the connection carries no application data (§4).
        case acmeChallenge
        /// A control listener's certificate (the tenant API, Sources/TenantAPI/Transport): ALPN
        /// selects `http/1.1` when offered and otherwise continues without ALPN, as `serving`
        /// does; that listener speaks nothing else.
        case http11Only
    }

    let ctx: OpaquePointer
    /// Content identity of the certificate files (`CertificateFiles.identity`).
    public let identity: String
    /// Whether this context serves sites or answers an ACME TLS-ALPN-01 challenge.
    public let purpose: Purpose
    /// The DNS names the leaf certificate covers, read once at load (the 421 rule asks per request).
    public private(set) var names = CertificateNames([])
    /// SHA-256 of `identity`: the session id context, and what session tickets are bound to
    /// (`bindSessions`, `ticketKeyCallback`).
    public private(set) var sessionContext: [UInt8] = []

    /// TLS 1.2 cipher suites: Mozilla's "intermediate" list (forward secrecy, AEAD only).
    /// TLS 1.3 suites are OpenSSL's defaults, which are all modern.
    static let tls12Ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"
    /// TLS 1.3 suites in the same order (Mozilla's intermediate configuration): AES-128-GCM
    /// first, as for TLS 1.2. OpenSSL's default puts AES-256-GCM-SHA384 first; AES-128 is no
    /// weaker in any way that matters here (RFC 8446 §9.1 makes it the mandatory suite), and a
    /// resumed handshake and every record cost less with it (SHA-256 key schedule).
    static let tls13Ciphers = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"
    /// Key-exchange groups, in preference order.
    static let groups = "X25519:P-256:P-384"

    /// Builds a context from PEM bytes: the chain (leaf first) and the private key, which must match.
    /// The files are read and checked first (`PEMCredentials`), so damaged files cost no SSL_CTX.
    public init(
        chainPEM: [UInt8], keyPEM: [UInt8], identity: String, source: String, minimumVersion: TLSVersion = .tls12,
        purpose: Purpose = .serving
    ) throws(TLSError) {
        let credentials = try PEMCredentials(chainPEM: chainPEM, keyPEM: keyPEM, source: source)
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError("cannot create a TLS context: \(TLSError.openSSLReasons())", transient: true)
        }
        self.ctx = ctx
        self.identity = identity
        self.purpose = purpose
        // A throw from here on still runs deinit (every stored property is set), which frees ctx:
        // freeing it here as well would free it twice.
        try Self.configure(ctx, minimumVersion: minimumVersion, purpose: purpose)
        sessionContext = try Self.bindSessions(ctx, to: identity)
        try credentials.install(into: ctx, source: source)
        names = credentials.names
    }

    deinit {
        SSL_CTX_free(ctx)
    }

    /// Throws what `init` would throw for these files, without making a context: the files are
    /// read and matched (`PEMCredentials`), and the leaf and key are put into a connection object
    /// of one shared context, which applies OpenSSL's same checks (security level, key match).
    /// A context costs milliseconds (OpenSSL 3 fetches its algorithms for each); this check, a
    /// tenth of that: what a load of 50,000 sites with certificates of their own runs once each
    /// at start. The intermediates are read and checked as PEM, as `init` does; `init` adds them
    /// without further checks.
    public static func check(chainPEM: [UInt8], keyPEM: [UInt8], source: String) throws(TLSError) {
        let credentials = try PEMCredentials(chainPEM: chainPEM, keyPEM: keyPEM, source: source)
        guard let shared = checkingContext.get(), let ssl = SSL_new(shared) else {
            throw TLSError("cannot create a TLS context: \(TLSError.openSSLReasons())", transient: true)
        }
        defer { SSL_free(ssl) }
        try credentials.install(intoConnection: ssl, source: source)
    }

    /// The context `check` makes its connection objects from, configured as every context is.
    /// Made on first use and again on the next use if making it failed (under memory pressure):
    /// a failure made once and kept would fail every check for the process's life. Never changed
    /// once made; OpenSSL allows SSL_new on one context from any thread.
    static let checkingContext = RetriedUntilMade {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { return nil }
        guard (try? configure(ctx, minimumVersion: .tls12)) != nil else {
            SSL_CTX_free(ctx)
            return nil
        }
        return ctx
    }

    /// The server's protocol settings on a new context (internal: Fuzz/FuzzPEM.swift sets up its
    /// one long-lived context with it).
    static func configure(_ ctx: OpaquePointer, minimumVersion: TLSVersion, purpose: Purpose = .serving) throws(TLSError) {
        guard CAASAOpenSSL_SSL_CTX_set_min_proto_version(ctx, minimumVersion == .tls13 ? TLS1_3_VERSION : TLS1_2_VERSION) == 1,
            CAASAOpenSSL_SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1,
            SSL_CTX_set_cipher_list(ctx, tls12Ciphers) == 1,
            SSL_CTX_set_ciphersuites(ctx, tls13Ciphers) == 1,
            CAASAOpenSSL_SSL_CTX_set1_groups_list(ctx, groups) == 1
        else { throw TLSError("cannot apply the TLS settings: \(TLSError.openSSLReasons())", transient: true) }
        // The server's order decides the cipher (what testssl.sh and most audits expect: a client
        // that lists a weaker suite first still gets the strongest both have), except that a client
        // preferring ChaCha20 (phones without AES instructions) keeps it (PRIORITIZE_CHACHA).
        SSL_CTX_set_options(
            ctx,
            CAASAOpenSSL_SSL_OP_NO_RENEGOTIATION | CAASAOpenSSL_SSL_OP_NO_COMPRESSION | CAASAOpenSSL_SSL_OP_IGNORE_UNEXPECTED_EOF
                | CAASAOpenSSL_SSL_OP_CIPHER_SERVER_PREFERENCE | CAASAOpenSSL_SSL_OP_PRIORITIZE_CHACHA)
        // RELEASE_BUFFERS: an idle connection holds no OpenSSL buffers. MOVING_WRITE_BUFFER: a
        // retried write may come from another address (Swift arrays move).
        _ = CAASAOpenSSL_SSL_CTX_set_mode(
            ctx,
            CAASAOpenSSL_SSL_MODE_RELEASE_BUFFERS | CAASAOpenSSL_SSL_MODE_ENABLE_PARTIAL_WRITE
                | CAASAOpenSSL_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER)
        // The protocols the two purposes select never overlap: a site's certificate never
        // completes an acme-tls/1 handshake, and a challenge certificate never carries HTTP.
        let select =
            switch purpose {
            case .serving: alpnSelect
            case .acmeChallenge: acmeALPNSelect
            case .http11Only: http11ALPNSelect
            }
        SSL_CTX_set_alpn_select_cb(ctx, select, nil)
        // Tickets use the keys of the context a connection started on; every context gets the
        // rotating shared keys, each ticket's MAC bound to its certificate (`bindSessions`).
        _ = CAASAOpenSSL_SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, ticketKeyCallback)
        // OpenSSL sends two TLS 1.3 tickets after a full handshake (RFC 8446 §4.6.1 lets the
        // server choose); the clients that fetch these files do not open parallel connections to
        // one host, so one is enough, and it saves a ticket's encryption and about 250 bytes per
        // handshake. A resumed handshake gets none while its ticket's key is current
        // (`TicketKeys`). A connection copies the count from the context it starts on.
        _ = SSL_CTX_set_num_tickets(ctx, ticketsPerHandshake)
    }

    /// TLS 1.3 session tickets sent after a full handshake.
    static let ticketsPerHandshake = 1

    /// Binds sessions to this certificate, so a session issued under one certificate never resumes
    /// under another (a full handshake instead), while one still resumes after a reload that keeps
    /// the same files. Returns the binding: SHA-256 of the identity (32 bytes,
    /// SSL_MAX_SID_CTX_LENGTH exactly).
    ///
    /// Two mechanisms, because OpenSSL 3 checks the session id context only for TLS 1.2 (in
    /// `ssl_get_prev_session`; a TLS 1.3 ticket is accepted in `tls_parse_ctos_psk` without a
    /// look at it): the session id context covers TLS 1.2 tickets and session ids, and the ticket
    /// MAC key is derived from the binding (`ticketKeyCallback`), which covers TLS 1.3. Both work
    /// only because the context is chosen in the ClientHello callback, before OpenSSL looks at
    /// any session (`TLSServer`); SessionResumptionTests checks it with `s_client -sess_in`.
    private static func bindSessions(_ ctx: OpaquePointer, to identity: String) throws(TLSError) -> [UInt8] {
        let digest = Digest.sha256(identity.utf8)
        guard digest.count == SSL_MAX_SID_CTX_LENGTH, SSL_CTX_set_session_id_context(ctx, digest, UInt32(Digest.sha256Length)) == 1
        else { throw TLSError("cannot set the session id context: \(TLSError.openSSLReasons())", transient: true) }
        return digest
    }
}

/// ALPN (RFC 7301): `h2`, then `http/1.1`; a client that offers nothing we speak continues
/// without ALPN rather than failing (RFC 7301 §3.2 allows either; curl and browsers always offer it),
/// except a client that offers only `acme-tls/1`: a serving certificate must never complete a
/// TLS-ALPN-01 handshake (RFC 8737 §3), so it gets `no_application_protocol`. The ClientHello
/// callback already diverts or refuses such a ClientHello; this covers a second ClientHello after
/// a HelloRetryRequest, which runs on the context the first one chose without the callback.
private let alpnSelect:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32,
        UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outlen, input, inlen, _ in
        guard let input, let out, let outlen else { return CAASAOpenSSL_SSL_TLSEXT_ERR_NOACK }
        if selectALPN(TLSContext.alpnWire, out, outlen, input, inlen) { return CAASAOpenSSL_SSL_TLSEXT_ERR_OK }
        let offered = UnsafeBufferPointer(start: input, count: Int(inlen))
        return TLSServer.alpnOffer(inList: offered) == .acmeTLSOnly
            ? CAASAOpenSSL_SSL_TLSEXT_ERR_ALERT_FATAL : CAASAOpenSSL_SSL_TLSEXT_ERR_NOACK
    }

/// ALPN on a challenge certificate's context: `acme-tls/1` when offered, otherwise a fatal
/// `no_application_protocol` (RFC 7301 §3.2): a challenge certificate is never presented to a
/// connection that would carry HTTP.
private let acmeALPNSelect:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32,
        UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outlen, input, inlen, _ in
        guard let input, let out, let outlen, selectALPN(TLSContext.acmeALPNWire, out, outlen, input, inlen) else {
            return CAASAOpenSSL_SSL_TLSEXT_ERR_ALERT_FATAL
        }
        return CAASAOpenSSL_SSL_TLSEXT_ERR_OK
    }

/// ALPN on a control listener's context (`Purpose.http11Only`): `http/1.1` when offered; a client
/// that offers only other protocols (`h2`) continues without ALPN and speaks HTTP/1.1 (RFC 7301
/// §3.2 allows either), as curl does.
private let http11ALPNSelect:
    @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?, UnsafePointer<UInt8>?, UInt32,
        UnsafeMutableRawPointer?
    ) -> Int32 = { _, out, outlen, input, inlen, _ in
        guard let input, let out, let outlen, selectALPN(TLSContext.http11ALPNWire, out, outlen, input, inlen) else {
            return CAASAOpenSSL_SSL_TLSEXT_ERR_NOACK
        }
        return CAASAOpenSSL_SSL_TLSEXT_ERR_OK
    }

/// The one ALPN choice of the three callbacks: the first of the server's protocols (`wire`, in
/// ALPN wire format) the client offers, written to `out`; false when it offers none of them.
private func selectALPN(
    _ wire: [UInt8], _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>, _ outlen: UnsafeMutablePointer<UInt8>,
    _ input: UnsafePointer<UInt8>, _ inlen: UInt32
) -> Bool {
    var selected: UnsafeMutablePointer<UInt8>?
    let result = wire.withUnsafeBufferPointer { server in
        SSL_select_next_proto(&selected, outlen, server.baseAddress, UInt32(server.count), input, inlen)
    }
    guard result == OPENSSL_NPN_NEGOTIATED, let selected else { return false }
    out.pointee = UnsafePointer(selected)
    return true
}

extension TLSContext {
    /// Protocols offered in ALPN wire format (length-prefixed), in preference order.
    static let alpnWire: [UInt8] = wire(["h2", "http/1.1"])

    /// The one protocol a challenge context speaks, in ALPN wire format.
    static let acmeALPNWire: [UInt8] = wire([TLSServer.acmeTLSProtocol])
    static let http11ALPNWire: [UInt8] = wire(["http/1.1"])

    private static func wire(_ protocols: [String]) -> [UInt8] {
        var out: [UInt8] = []
        for proto in protocols {
            out.append(UInt8(proto.utf8.count))
            out.append(contentsOf: proto.utf8)
        }
        return out
    }
}

/// An OpenSSL object made on first use, under a lock, and made again on the next use while
/// making it fails; kept (never freed) once made.
final class RetriedUntilMade: Sendable {
    private let made = Mutex<OpaquePointer?>(nil)
    private let make: @Sendable () -> OpaquePointer?

    init(_ make: @escaping @Sendable () -> OpaquePointer?) { self.make = make }

    /// The object, or nil when it is not made yet and cannot be made now.
    func get() -> OpaquePointer? {
        made.withLock { made in
            if made == nil { made = make() }
            return made
        }
    }
}
