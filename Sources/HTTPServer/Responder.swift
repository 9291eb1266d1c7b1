import HTTP1
import HTTPCore
import SiteStore

/// The serving rules of DESIGN.md "What it serves", shared by HTTP/1.1 and HTTP/2: one routing
/// path, two framings. Pure: it reads the snapshot and the request and returns a `Response`.
enum Responder {
    /// Which certificate the connection negotiated, for the 421 rule.
    enum TLSIdentity: Sendable, Equatable {
        /// Plain HTTP, or TLS without SNI: the Host header alone decides.
        case none
        /// TLS with SNI: the identity of the certificate the handshake chose.
        case certificate(String)
    }

    static let aasaPath = Array("/.well-known/apple-app-site-association".utf8)
    static let rootAASAPath = Array("/apple-app-site-association".utf8)
    static let assetLinksPath = Array("/.well-known/assetlinks.json".utf8)

    /// A response with where the request falls in the request counters.
    struct Routed {
        var response: Response
        var site: Traffic.SiteClass
        var path: Traffic.PathClass
    }

    static func pathClass(_ path: UnsafeRawBufferPointer) -> Traffic.PathClass {
        if path.elementsEqual(aasaPath) { return .wellKnownAASA }
        if path.elementsEqual(rootAASAPath) { return .rootAASA }
        if path.elementsEqual(assetLinksPath) { return .assetLinks }
        return .other
    }

    /// Answers one request. `host` is already normalised (see `HTTPFields.normalizeHost`); nil when absent.
    static func respond(
        method: Method, host: String?, path: UnsafeRawBufferPointer, ifNoneMatch: UnsafeRawBufferPointer?,
        ifModifiedSince: UnsafeRawBufferPointer?, acceptsGzip: Bool, snapshot: Snapshot, tls: TLSIdentity,
        defaultCertificateIdentity: String?
    ) -> Routed {
        let pathClass = pathClass(path)
        guard let host, let site = snapshot.site(forHost: host) else {
            return Routed(response: .error(.notFound, close: false), site: .unknown, path: pathClass)
        }
        func routed(_ response: Response) -> Routed { Routed(response: response, site: .configured, path: pathClass) }
        let file: PreparedFile?
        switch pathClass {
        case .wellKnownAASA, .rootAASA: file = site.aasa
        case .assetLinks: file = site.assetLinks
        case .other: return routed(.error(.notFound, close: false))
        }
        // DESIGN.md: a host whose site uses another certificate than the one this connection
        // negotiated gets 421 (RFC 9110 §15.5.20), so a client retries on a new connection.
        if case .certificate(let negotiated) = tls, (site.certificateIdentity ?? defaultCertificateIdentity) != negotiated {
            return routed(.error(.misdirected, close: false))
        }
        guard let file else { return routed(.error(.notFound, close: false)) }
        guard method != .other else { return routed(.error(.methodNotAllowed, close: false)) }

        let gzip = acceptsGzip && file.gzipBody != nil
        let etag = gzip ? file.gzipETag! : file.etag
        if HTTPFields.notModified(etag: etag, lastModified: file.lastModified, ifNoneMatch: ifNoneMatch, ifModifiedSince: ifModifiedSince) {
            return routed(
                Response(
                    status: .notModified, headers: gzip ? file.gzipNotModifiedHeaders! : file.notModifiedHeaders, body: [],
                    sendsBody: false, close: false))
        }
        return routed(
            Response(
                status: .ok, headers: gzip ? file.gzipHeaders! : file.headers, body: gzip ? file.gzipBody! : file.body,
                sendsBody: method == .get, close: false))
    }
}
