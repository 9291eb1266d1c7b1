import HTTPCore
import Served

/// Plain HTTP in production (docs/link-domain.md): the plain
/// listener answers every request for a served host with a redirect to the same URL over HTTPS,
/// so that aasad can own port 80 of a link domain beside 443. Off by default (the plain listener
/// then serves the sites, for local testing). Decisions:
/// - ACME's HTTP-01 path is still answered (`Exchange` asks `HTTP01` first, when the server has
///   a resolver); everything else is redirected, the AASA and assetlinks paths too: Apple's CDN
///   and Android's verifier fetch them over HTTPS only, and a browser that asked over plain HTTP
///   is better sent to the copy a certificate vouches for.
/// - Only to a host a configured site serves, written as the A-label name `HostName` accepts
///   (lower case, no port, no trailing dot). A missing Host, an IP literal, a name no site
///   serves, and a Host that is no valid name even though a wildcard site's suffix matches it
///   (`evil.example/x.w.test` reaches `*.w.test` by suffix) are `404` as before: aasad never
///   writes a host outside its config into a `Location`, so no Host makes it an open redirect.
/// - The target is `https://` + that host + `:port` (left out for 443, https's default port,
///   RFC 9110 §4.2.2) + the request's path and query as sent, through `RedirectTarget.appendPath`:
///   never decoded, every byte that could end the path or start another authority encoded, and a
///   path that does not begin with `/` given one. An absolute-form target's own authority is the
///   host (RFC 9112 §3.2.2, as the parser sets it).
/// - `301 Moved Permanently` for GET and HEAD, as the issue asks and nginx's usual
///   `return 301 https://$host$request_uri` answers. Any other method gets
///   `308 Permanent Redirect` (RFC 9110 §15.4.9), which is what Caddy sends for every method: a
///   client may turn a POST that gets 301 into a GET (§15.4.2), so a 301 would silently replace
///   the request with another; 308 makes the client repeat the same request over HTTPS, where it
///   gets the answer HTTPS gives it (405 or 404). Nothing is exposed that the client did not
///   already send in clear.
/// - `Content-Length: 0`, no body, no Content-Type. `Cache-Control: max-age=3600`: a 301 or 308
///   without one is heuristically cacheable (RFC 9111 §4.2.2), and browsers keep a permanent
///   redirect with no lifetime indefinitely; an hour bounds how long a browser keeps going to
///   HTTPS (or to an `https-port`) after the operator turns the redirect off or moves the port,
///   for the cost of one redirect an hour per browser and URL. HSTS is the long-term tool.
/// - The connection closes after the redirect (Caddy does the same): the client's next request
///   goes to HTTPS on another connection, so keeping this one would only hold a descriptor until
///   the idle timeout, on a port that may take every `http://` click on a busy link domain.
public struct HTTPSRedirect: Sendable, Equatable {
    /// The port written in the target: the HTTPS port as clients reach it, which behind a load
    /// balancer or a Kubernetes Service is not the one bound. nil (the default): the port of the
    /// first HTTPS listener as bound (port 0 resolved), or 443 when there is none.
    public var port: UInt16?

    public init(port: UInt16? = nil) {
        self.port = port
    }

    /// Cache-Control of every redirect (see the type's comment).
    static let cacheControl = "max-age=3600"

    /// The fields every redirect carries besides its `Location`, prepared once.
    static let fields = PreparedFields([(name: "Content-Length", value: "0"), (name: "Cache-Control", value: cacheControl)])

    static let scheme = Array("https://".utf8)

    /// The redirect as the workers answer it: what does not depend on the request, prepared when
    /// the server starts.
    struct Prepared: Sendable {
        /// `:port`, or nothing for 443.
        let portSuffix: [UInt8]

        init(port: UInt16) {
            portSuffix = port == 443 ? [] : Array(":\(port)".utf8)
        }

        /// Answers a request on the plain listener. `host` is normalised
        /// (`HTTPFields.normalizeHost`); `path` is the path alone (for the counters),
        /// `pathAndQuery` what the target carries over.
        func respond(
            method: Method, host: String?, path: UnsafeRawBufferPointer, pathAndQuery: UnsafeRawBufferPointer, snapshot: Snapshot
        ) -> Responder.Routed {
            let pathClass = Responder.pathClass(path)
            // `OPTIONS *` (asterisk-form) names no resource to redirect to.
            guard let host, path.first != UInt8(ascii: "*"), let name = try? HostName(parsing: host), !name.isWildcard,
                snapshot.site(forHost: name.name) != nil
            else {
                return Responder.Routed(response: .error(.notFound, close: false), site: .unknown, path: pathClass)
            }
            var location: [UInt8] = []
            // The common case without escapes in one allocation; an escape grows it.
            location.reserveCapacity(HTTPSRedirect.scheme.count + name.name.utf8.count + portSuffix.count + pathAndQuery.count + 1)
            location.append(contentsOf: HTTPSRedirect.scheme)
            location.append(contentsOf: name.name.utf8)
            location.append(contentsOf: portSuffix)
            RedirectTarget.appendPath(pathAndQuery, to: &location)
            guard location.count <= RedirectTarget.maximumLocationLength else {
                return Responder.Routed(response: .error(.uriTooLong, close: false), site: .configured, path: pathClass)
            }
            let status: Status = method == .get || method == .head ? .movedPermanently : .permanentRedirect
            return Responder.Routed(
                response: Response(
                    status: status, headers: HTTPSRedirect.fields, body: [], sendsBody: true, close: true, location: location),
                site: .configured, path: pathClass)
        }
    }
}
