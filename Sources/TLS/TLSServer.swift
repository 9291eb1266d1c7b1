import CAASAOpenSSL
import Synchronization

/// The certificates a server presents: a default context for connections without SNI or with an
/// unknown name, and per-site contexts chosen by SNI (nginx's `ngx_http_ssl_servername`, h2o's
/// `on_sni_callback`). Contexts are made on first use and kept in a bounded cache, so memory
/// follows the hosts being fetched, not the hosts configured.
public final class TLSServer: Sendable {
    /// Contexts kept at once. Each costs tens of kilobytes; at hundreds of thousands of sites
    /// with their own certificates, one each would cost gigabytes.
    public static let maximumCachedContexts = 10_000

    /// Identities of pairs whose context could not be made, remembered so that a client naming
    /// a site with a broken pair in every handshake does not have the pair parsed again each
    /// time (about a millisecond of CPU with OpenSSL 3.0). An identity names the pair's bytes
    /// (their SHA-256, `CertificateFiles.identity`), and the same bytes fail the same way; a
    /// fixed pair has new bytes, so a new identity. Failures not about the bytes
    /// (`TLSError.transient`) are never remembered. Each entry is a 64-byte key and the error,
    /// whose message carries OpenSSL's error queue (at most 16 reasons of up to 256 bytes,
    /// `ERR_NUM_ERRORS` and `openSSLReasons`): about 4 KB at worst, so about 4 MB at 1,024.
    /// More broken pairs than that being fetched at once only costs parsing the least recent
    /// again.
    public static let maximumRememberedFailures = 1_024

    /// How long a remembered failure is trusted before its pair is parsed again. The bytes fail
    /// the same way, but the reason may not be theirs (a verdict that depends on the time, a
    /// failure `TLSError.transient` does not cover): a minute bounds how long such a pair stays
    /// refused, at one parse a minute for each broken pair being fetched.
    public static let failureRetrySeconds = 60

    /// What the SNI callback asks: the certificate files of the site that serves a name (nil: the
    /// name is unknown or the site uses the default certificate).
    public typealias Resolver = @Sendable (String) -> CertificateSource?

    /// What the ClientHello callback asks when a client offers only `acme-tls/1`: the TLS-ALPN-01
    /// challenge certificate pending for an SNI name (RFC 8737 §3: self-signed, its subjectAltName
    /// exactly that one dNSName, the critical acmeIdentifier extension), or nil when no challenge
    /// for the name is pending. Called on a serving thread inside the handshake, for any name any
    /// client sends: it must look up in memory, never read files or wait. The name is lower case,
    /// at most 255 bytes, without NUL; nothing else about it is checked. Contexts are cached by
    /// `identity`, so a new challenge certificate for a name needs a new identity (a hash of
    /// its bytes, say).
    public typealias ChallengeResolver = @Sendable (String) -> CertificateSource?

    /// Challenge contexts kept at once, apart from the site contexts so that challenge traffic
    /// (which anyone can send for any name with a pending challenge) cannot evict a site's context.
    /// A context lives only while its challenge is pending, a few minutes; a CA validates from a
    /// handful of vantage points, and a global order budget (docs/acme.md) keeps the pending ones to
    /// tens at once. An eviction only costs building the context again.
    public static let maximumCachedChallengeContexts = 64

    /// The ALPN protocol of TLS-ALPN-01 (RFC 8737 §6.2).
    public static let acmeTLSProtocol = "acme-tls/1"
    /// The same as bytes, compared with every ALPN extension.
    static let acmeTLSProtocolBytes = Array(acmeTLSProtocol.utf8)

    /// Certificate files and their identity, as the snapshot holds them.
    public struct CertificateSource: Sendable {
        public var identity: String
        public var chainPEM: [UInt8]
        public var keyPEM: [UInt8]
        public var label: String

        public init(identity: String, chainPEM: [UInt8], keyPEM: [UInt8], label: String) {
            self.identity = identity
            self.chainPEM = chainPEM
            self.keyPEM = keyPEM
            self.label = label
        }
    }

    private let current: Mutex<TLSContext>
    private let resolver: Resolver
    /// Contexts by certificate identity, least recently used dropped first. Dropping one only
    /// forgets it: connections hold the contexts they use (`TLSConnection`).
    private let cache: Mutex<LRUCache<TLSContext>>
    /// Answers `acme-tls/1` ClientHellos; nil: every such ClientHello is refused.
    private let challengeResolver: ChallengeResolver?
    /// Challenge contexts by identity (`maximumCachedChallengeContexts`), least recently used
    /// dropped first; never shares entries with `cache`.
    private let challengeCache: Mutex<LRUCache<TLSContext>>
    /// Why contexts could not be made and when, by identity (`maximumRememberedFailures`).
    private let failures = Mutex(LRUCache<Failure>(capacity: maximumRememberedFailures))
    private struct Failure {
        let error: TLSError
        let at: ContinuousClock.Instant
    }
    /// The time failures are remembered at (tests move it).
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Builds a site's context from its pair (`TLSContext.init` but in tests).
    private let makeContext: @Sendable (CertificateSource, TLSVersion) -> Result<TLSContext, TLSError>
    /// How a site's context is built unless the owner says otherwise: its pair's bytes, parsed.
    package static let loadContext: @Sendable (CertificateSource, TLSVersion) -> Result<TLSContext, TLSError> = { source, version in
        Result { () throws(TLSError) in
            try TLSContext(
                chainPEM: source.chainPEM, keyPEM: source.keyPEM, identity: source.identity, source: source.label,
                minimumVersion: version)
        }
    }

    /// The oldest protocol version accepted, on every certificate's context.
    public let minimumVersion: TLSVersion

    /// `contextCacheCapacity`: contexts kept at once (at least 2: the default and one site's);
    /// tests use a small one to make evictions happen. `challengeResolver`: the TLS-ALPN-01
    /// challenge certificates (nil: `acme-tls/1` is always refused); `challengeCacheCapacity`:
    /// challenge contexts kept at once (at least 1).
    public convenience init(
        defaultCertificate: CertificateSource, minimumVersion: TLSVersion = .tls12, contextCacheCapacity: Int = maximumCachedContexts,
        challengeCacheCapacity: Int = maximumCachedChallengeContexts, challengeResolver: ChallengeResolver? = nil,
        resolver: @escaping Resolver
    ) throws(TLSError) {
        try self.init(
            defaultCertificate: defaultCertificate, minimumVersion: minimumVersion, contextCacheCapacity: contextCacheCapacity,
            challengeCacheCapacity: challengeCacheCapacity, challengeResolver: challengeResolver, now: { ContinuousClock.now },
            makeContext: nil, resolver: resolver)
    }

    /// `now`: the clock failures are aged by; `makeContext`: what builds a site's context (nil:
    /// `TLSContext.init`). Tests replace both.
    init(
        defaultCertificate: CertificateSource, minimumVersion: TLSVersion = .tls12, contextCacheCapacity: Int = maximumCachedContexts,
        challengeCacheCapacity: Int = maximumCachedChallengeContexts, challengeResolver: ChallengeResolver? = nil,
        now: @escaping @Sendable () -> ContinuousClock.Instant,
        makeContext: (@Sendable (CertificateSource, TLSVersion) -> Result<TLSContext, TLSError>)?,
        resolver: @escaping Resolver
    ) throws(TLSError) {
        self.minimumVersion = minimumVersion
        self.now = now
        self.makeContext = makeContext ?? Self.loadContext
        let context = try TLSContext(
            chainPEM: defaultCertificate.chainPEM, keyPEM: defaultCertificate.keyPEM, identity: defaultCertificate.identity,
            source: defaultCertificate.label, minimumVersion: minimumVersion)
        current = Mutex(context)
        self.resolver = resolver
        self.challengeResolver = challengeResolver
        challengeCache = Mutex(LRUCache(capacity: max(challengeCacheCapacity, 1)))
        var cache = LRUCache<TLSContext>(capacity: max(contextCacheCapacity, 2))
        cache.insert(context, for: defaultCertificate.identity)
        self.cache = Mutex(cache)
        Self.installCallbacks(context)
    }

    /// Connections start on a default context: its callbacks choose the certificate.
    private static func installCallbacks(_ context: TLSContext) {
        SSL_CTX_set_client_hello_cb(context.ctx, clientHelloCallback, nil)
        CAASAOpenSSL_SSL_CTX_set_tlsext_servername_callback(context.ctx, serverNameCallback)
    }

    /// The context new connections start on, and that connections without SNI or with an
    /// unknown name keep.
    public var defaultContext: TLSContext { current.withLock { $0 } }

    /// Makes another certificate the default, for connections accepted from now on; open
    /// connections keep theirs. The pair must load and match first, or nothing changes.
    public func replaceDefault(_ source: CertificateSource) throws(TLSError) {
        let context = try context(for: source)
        Self.installCallbacks(context)
        current.withLock { $0 = context }
    }

    /// A new TLS connection on an accepted socket.
    public func makeConnection(fd: Int32) -> TLSConnection? {
        let context = defaultContext
        guard let ssl = SSL_new(context.ctx) else { return nil }
        return TLSConnection(ssl: ssl, fd: fd, server: self, context: context)
    }

    /// The context for certificate files: cached by identity, built on first use.
    public func context(for source: CertificateSource) throws(TLSError) -> TLSContext {
        if let cached = cache.withLock({ $0.value(for: source.identity) }) { return cached }
        let time = now()
        let remembered = failures.withLock { $0.value(for: source.identity) }
        if let remembered, remembered.at.duration(to: time) <= .seconds(Self.failureRetrySeconds) { throw remembered.error }
        let made: TLSContext
        do {
            made = try makeContext(source, minimumVersion).get()
        } catch {
            if !error.transient { failures.withLock { _ = $0.insert(Failure(error: error, at: time), for: source.identity) } }
            throw error
        }
        let keep = current.withLock { $0.identity }
        // The evicted context is released outside the lock (its SSL_CTX_free may take a while).
        let (context, _) = cache.withLock { contexts -> (TLSContext, TLSContext?) in
            if let raced = contexts.value(for: source.identity) { return (raced, nil) }
            // Evicting is safe: live connections hold the contexts they use.
            return (made, contexts.insert(made, for: source.identity, keep: keep))
        }
        return context
    }

    /// Identities in the cache, most recently used first (for tests).
    var cachedIdentities: [String] { cache.withLock { $0.keys } }

    /// Identities of pairs that failed, most recently used first (for tests).
    var failedIdentities: [String] { failures.withLock { $0.keys } }

    /// Identities in the challenge cache, most recently used first (for tests).
    var cachedChallengeIdentities: [String] { challengeCache.withLock { $0.keys } }

    /// The context for a challenge certificate: cached by identity in its own cache, built on
    /// first use with ALPN limited to `acme-tls/1`.
    func challengeContext(for source: CertificateSource) throws(TLSError) -> TLSContext {
        if let cached = challengeCache.withLock({ $0.value(for: source.identity) }) { return cached }
        let made = try TLSContext(
            chainPEM: source.chainPEM, keyPEM: source.keyPEM, identity: source.identity, source: source.label,
            minimumVersion: minimumVersion, purpose: .acmeChallenge)
        let (context, _) = challengeCache.withLock { contexts -> (TLSContext, TLSContext?) in
            if let raced = contexts.value(for: source.identity) { return (raced, nil) }
            return (made, contexts.insert(made, for: source.identity))
        }
        return context
    }

    /// Answers a ClientHello that offers only `acme-tls/1` (RFC 8737 §3): switches the connection
    /// to the challenge certificate for its SNI name, or returns the alert that refuses the
    /// handshake. RFC 8737 §3 requires SNI, and a name without a pending challenge must not get a
    /// normal certificate under `acme-tls/1` (§5: the server must not claim a protocol it does
    /// not speak for that name): both are `no_application_protocol`, RFC 7301 §3.2's alert for
    /// "none of the protocols you offer". A challenge certificate that cannot be used (damaged
    /// PEM, or names other than exactly the SNI name, RFC 8737 §3) is `internal_error`.
    fileprivate func selectChallenge(_ ssl: OpaquePointer, _ connection: TLSConnection, serverName: String?) -> Int32? {
        connection.recordServerName(serverName)
        guard let name = serverName, let source = challengeResolver?(name) else { return Self.noApplicationProtocol }
        guard let context = try? challengeContext(for: source), context.names.dnsNames == [name] else { return Self.internalError }
        connection.chosenContext = context
        if SSL_get_SSL_CTX(ssl) != context.ctx { SSL_set_SSL_CTX(ssl, context.ctx) }
        // No tickets: a resumed handshake presents no certificate, and the connection ends at
        // once anyway (SSL_set_SSL_CTX does not carry the context's settings to the SSL).
        _ = SSL_set_num_tickets(ssl, 0)
        return nil
    }

    /// TLS alerts (RFC 8446 §6), as the ClientHello callback returns them.
    static let noApplicationProtocol = Int32(SSL_AD_NO_APPLICATION_PROTOCOL)
    static let internalError = Int32(SSL_AD_INTERNAL_ERROR)
    static let decodeError = Int32(SSL_AD_DECODE_ERROR)

    /// Chooses the connection's context from the SNI name, in the ClientHello callback: before
    /// OpenSSL creates or resumes a session, so the session id context and the ticket binding are
    /// the chosen certificate's (`TLSContext.bindSessions`). OpenSSL asks the callback of the SSL's
    /// current context (`s->ctx` in `tls_early_post_process_client_hello`), and only contexts that
    /// are or were the default install it: after a HelloRetryRequest the second ClientHello runs it
    /// again only when the SSL is still on such a context; a site's context chosen by the first stays.
    fileprivate func selectContext(_ ssl: OpaquePointer, _ connection: TLSConnection, serverName: String?) {
        connection.recordServerName(serverName)
        // Without SNI, or for a name without a certificate of its own: the context the connection
        // started on (its default; another may be current by now).
        var chosen = connection.startedContext
        if let name = serverName, let source = resolver(name), let context = try? context(for: source) {
            chosen = context
        }
        connection.chosenContext = chosen
        // Switched only when it differs: a second ClientHello may find the SSL on it already.
        if SSL_get_SSL_CTX(ssl) != chosen.ctx { SSL_set_SSL_CTX(ssl, chosen.ctx) }
    }
}

extension TLSServer {
    /// The host name of a ClientHello's server_name extension (RFC 6066 §3), lower case; nil when
    /// there is none or the extension is malformed (OpenSSL then refuses the handshake itself).
    /// Read from the raw extension because the ClientHello callback runs before OpenSSL parses it.
    static func serverName(inExtension bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count >= 2, Int(bytes[0]) << 8 | Int(bytes[1]) == bytes.count - 2 else { return nil }
        var i = 2
        while bytes.count - i >= 3 {
            let type = bytes[i]
            let length = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            i += 3
            guard bytes.count - i >= length else { return nil }
            // host_name (0): at most 255 bytes, never a NUL (as OpenSSL's own check).
            if type == 0 {
                guard length > 0, length <= maximumServerNameLength else { return nil }
                var name = Array(bytes[i..<(i + length)])
                guard !name.contains(0) else { return nil }
                for k in name.indices where name[k] >= 65 && name[k] <= 90 { name[k] += 32 }
                return String(decoding: name, as: UTF8.self)
            }
            i += length
        }
        return nil
    }

    /// RFC 6066 §3 allows 2^16 - 1, but a DNS name is at most 255 bytes (RFC 1035 §2.3.4), and
    /// OpenSSL refuses longer ones (TLSEXT_MAXLEN_host_name).
    static let maximumServerNameLength = 255

    /// What a ClientHello's ALPN extension offers, as far as choosing a certificate cares.
    enum ALPNOffer: Equatable {
        /// Not a valid ProtocolNameList: refused (`decode_error`), as OpenSSL would refuse it later.
        case malformed
        /// `acme-tls/1` and nothing else: a TLS-ALPN-01 validation (RFC 8737 §3 step 3: the CA
        /// offers "the single protocol name acme-tls/1").
        case acmeTLSOnly
        /// Anything else, `acme-tls/1` among other protocols included: a normal client, which gets
        /// the site's certificate and `h2` or `http/1.1` (or no ALPN); `acme-tls/1` is never selected
        /// for it, since only a challenge context speaks it.
        case other
    }

    /// Reads a ClientHello's ALPN extension (RFC 7301 §3.1): a 2-byte length, then protocol names
    /// of 1 to 255 bytes, each behind its 1-byte length, at least one. The same rules OpenSSL
    /// applies when it parses the extension itself (`tls_parse_ctos_alpn`), so nothing it would
    /// accept is refused here. Read from the raw extension because the ClientHello callback runs
    /// before OpenSSL parses it.
    static func alpnOffer(inExtension bytes: UnsafeBufferPointer<UInt8>) -> ALPNOffer {
        guard bytes.count >= 2, Int(bytes[0]) << 8 | Int(bytes[1]) == bytes.count - 2 else { return .malformed }
        return alpnOffer(inList: UnsafeBufferPointer(rebasing: bytes[2...]))
    }

    /// The same for the list alone (what OpenSSL hands the ALPN select callback).
    static func alpnOffer(inList list: UnsafeBufferPointer<UInt8>) -> ALPNOffer {
        guard !list.isEmpty else { return .malformed }
        var onlyACME = true
        var i = 0
        while i < list.count {
            let length = Int(list[i])
            i += 1
            guard length > 0, list.count - i >= length else { return .malformed }
            if !list[i..<(i + length)].elementsEqual(acmeTLSProtocolBytes) { onlyACME = false }
            i += length
        }
        return onlyACME ? .acmeTLSOnly : .other
    }
}

/// OpenSSL's ClientHello callback: picks the site's context from the current snapshot by the SNI
/// name. An unknown name gets the default certificate (the client then decides). A ClientHello
/// that offers only `acme-tls/1` gets the name's challenge certificate or is refused
/// (`selectChallenge`); one whose ALPN extension is malformed is refused with `decode_error`
/// (OpenSSL would refuse it a step later). The connection is found through the SSL's ex_data,
/// which the connection itself owns (it frees the SSL in deinit), so the pointer cannot outlive it.
private let clientHelloCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
    ssl, alert, _ in
    guard let ssl, let connection = TLSConnection.of(ssl) else { return SSL_CLIENT_HELLO_SUCCESS }
    var data: UnsafePointer<UInt8>?
    var length = 0
    var name: String?
    if SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_server_name), &data, &length) == 1, let data {
        name = TLSServer.serverName(inExtension: UnsafeBufferPointer(start: data, count: length))
    }
    func refuse(_ code: Int32, _ failure: TLSFailure) -> Int32 {
        alert?.pointee = code
        connection.refusal = failure
        return SSL_CLIENT_HELLO_ERROR
    }
    data = nil
    length = 0
    if SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_application_layer_protocol_negotiation), &data, &length) == 1, let data {
        switch TLSServer.alpnOffer(inExtension: UnsafeBufferPointer(start: data, count: length)) {
        case .malformed:
            return refuse(TLSServer.decodeError, .other)
        case .acmeTLSOnly:
            if let code = connection.server.selectChallenge(ssl, connection, serverName: name) {
                return refuse(code, .acmeChallengeUnavailable)
            }
            return SSL_CLIENT_HELLO_SUCCESS
        case .other:
            break
        }
    }
    connection.server.selectContext(ssl, connection, serverName: name)
    return SSL_CLIENT_HELLO_SUCCESS
}

/// OpenSSL's SNI callback, after the ClientHello callback chose the context: acknowledges the
/// name (the certificate is already chosen).
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
    _, _, _ in CAASAOpenSSL_SSL_TLSEXT_ERR_OK
}
