import CAASAOpenSSL
import Synchronization

/// The certificates a server presents: a default context for connections without SNI or with an
/// unknown name, and per-site contexts chosen by SNI (nginx's `ngx_http_ssl_servername`, h2o's
/// `on_sni_callback`). Contexts are made on first use and kept in a bounded cache, so memory
/// follows the hosts being fetched, not the hosts configured (DESIGN.md).
public final class TLSServer: Sendable {
    /// Contexts kept at once. Each costs tens of kilobytes; at hundreds of thousands of sites
    /// with their own certificates, one each would cost gigabytes.
    public static let maximumCachedContexts = 10_000

    /// What the SNI callback asks: the certificate files of the site that serves a name (nil: the
    /// name is unknown or the site uses the default certificate).
    public typealias Resolver = @Sendable (String) -> CertificateSource?

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

    /// The oldest protocol version accepted, on every certificate's context.
    public let minimumVersion: TLSVersion

    /// `contextCacheCapacity`: contexts kept at once (at least 2: the default and one site's);
    /// tests use a small one to make evictions happen.
    public init(
        defaultCertificate: CertificateSource, minimumVersion: TLSVersion = .tls12, contextCacheCapacity: Int = maximumCachedContexts,
        resolver: @escaping Resolver
    ) throws(TLSError) {
        self.minimumVersion = minimumVersion
        let context = try TLSContext(
            chainPEM: defaultCertificate.chainPEM, keyPEM: defaultCertificate.keyPEM, identity: defaultCertificate.identity,
            source: defaultCertificate.label, minimumVersion: minimumVersion)
        current = Mutex(context)
        self.resolver = resolver
        var cache = LRUCache<TLSContext>(capacity: max(contextCacheCapacity, 2))
        cache.insert(context, for: defaultCertificate.identity)
        self.cache = Mutex(cache)
        CAASAOpenSSL_SSL_CTX_set_tlsext_servername_callback(context.ctx, serverNameCallback)
    }

    /// The context new connections start on, and that connections without SNI or with an
    /// unknown name keep.
    public var defaultContext: TLSContext { current.withLock { $0 } }

    /// Makes another certificate the default, for connections accepted from now on; open
    /// connections keep theirs. The pair must load and match first, or nothing changes.
    public func replaceDefault(_ source: CertificateSource) throws(TLSError) {
        let context = try context(for: source)
        CAASAOpenSSL_SSL_CTX_set_tlsext_servername_callback(context.ctx, serverNameCallback)
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
        let made = try TLSContext(
            chainPEM: source.chainPEM, keyPEM: source.keyPEM, identity: source.identity, source: source.label,
            minimumVersion: minimumVersion)
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

    fileprivate func selectContext(_ ssl: OpaquePointer, _ connection: TLSConnection) {
        guard let raw = SSL_get_servername(ssl, CAASAOpenSSL_TLSEXT_NAMETYPE_host_name),
            let name = String(validatingCString: raw)?.lowercased()
        else {
            connection.recordServerName(nil)
            return
        }
        connection.recordServerName(name)
        // The context the connection started on is its default (another may be current by now).
        let started = connection.startedContext
        guard let source = resolver(name), let context = try? context(for: source) else {
            connection.chosenContext = started
            return
        }
        connection.chosenContext = context
        if context !== started { SSL_set_SSL_CTX(ssl, context.ctx) }
    }
}

/// OpenSSL's SNI callback: picks the site's context from the current snapshot. Never fails the
/// handshake: an unknown name gets the default certificate (the client then decides).
/// The connection is found through the SSL's ex_data, which the connection itself owns (it frees
/// the SSL in deinit), so the pointer cannot outlive it.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = {
    ssl, _, _ in
    guard let ssl, let connection = TLSConnection.of(ssl) else { return CAASAOpenSSL_SSL_TLSEXT_ERR_OK }
    connection.server.selectContext(ssl, connection)
    return CAASAOpenSSL_SSL_TLSEXT_ERR_OK
}
