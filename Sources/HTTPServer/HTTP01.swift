import HTTPCore
import SafeText
import Served

/// What the plain listener asks for ACME's HTTP-01 challenge (RFC 8555 §8.3): the key
/// authorization pending for a host and token, or nil when there is none. Called on a serving
/// thread for each such request, with whatever token any client sends: it must look up in
/// memory, never read files or wait. Its arguments are already checked: `host` is a lower-case
/// A-label host name (as `HostName` accepts it: no port, no wildcard, at most 253 bytes),
/// `token` is 1 to `HTTP01.maximumTokenLength` base64url characters.
public typealias HTTP01Resolver = @Sendable (_ host: String, _ token: String) -> [UInt8]?

/// ACME's HTTP-01 path on the plain listener, the only path besides the AASA ones that plain HTTP
/// serves (docs/acme.md): `GET` or `HEAD /.well-known/acme-challenge/<token>` gets the key
/// authorization as `200`, or `404`; any other method `405`. Never a redirect (a CA follows them,
/// but the answer must come from this host). Decisions:
/// - The token is checked as bytes before anything is looked up: base64url only (RFC 8555 §8.3:
///   "MUST NOT contain any characters outside the base64url alphabet"), at most
///   `maximumTokenLength`. Nothing is decoded: `%`, `.`, `/` and `=` are outside the alphabet, so
///   `..%2f`, `a/b` and percent-encoded tokens are `404` (a CA sends the token as it issued it).
/// - The query string is ignored, as on the AASA paths (RFC 3986 §3.4: it is not part of the
///   path that names the resource); `?x` after the prefix leaves an empty token: `404`.
/// - `Content-Type: application/octet-stream`, as RFC 8555 §8.3's example response. CAs do not
///   look at it (Boulder and pebble read the body only); Caddy (certmagic) sends `text/plain`,
///   certbot's standalone server none.
/// - The answer must be a key authorization for this token (`<token>.<thumbprint>`, RFC 8555
///   §8.1) within `maximumAnswerLength`; anything else from the resolver is `404`, so a mix-up
///   in shared storage can never serve arbitrary bytes.
enum HTTP01 {
    static let pathPrefix = Array("/.well-known/acme-challenge/".utf8)

    /// Longest token looked up. RFC 8555 §8.3 sets a minimum (128 bits of entropy) and no maximum;
    /// Let's Encrypt (Boulder) and pebble send 43 characters (256 bits). Three times that is room
    /// for any CA while keeping what reaches the resolver small.
    static let maximumTokenLength = 128

    /// Longest answer served: the longest token, a dot, and the base64url SHA-256 thumbprint of
    /// the account key (RFC 8555 §8.1, RFC 7638: 43 characters).
    static let maximumAnswerLength = maximumTokenLength + 1 + 43

    /// Whether the request is for the HTTP-01 path (the prefix, case-sensitive as paths are).
    static func isChallengePath(_ path: UnsafeRawBufferPointer) -> Bool {
        path.starts(with: pathPrefix)
    }

    /// The token after the prefix, when it is 1 to `maximumTokenLength` base64url characters.
    static func token(inPath path: UnsafeRawBufferPointer) -> String? {
        token(after: pathPrefix, in: path, maximumLength: maximumTokenLength)
    }

    /// The token after `prefix` in a well-known path, when it is 1 to `maximumLength` base64url
    /// characters (RFC 4648 §5, no padding), checked as bytes and never decoded: the rule of
    /// both token paths, this one and `OwnershipCheckPath`.
    static func token(after prefix: [UInt8], in path: UnsafeRawBufferPointer, maximumLength: Int) -> String? {
        guard path.starts(with: prefix) else { return nil }
        let token = path[prefix.count...]
        guard !token.isEmpty, token.count <= maximumLength, Base64URL.isAlphabet(token) else { return nil }
        return String(decoding: token, as: UTF8.self)
    }

    /// Whether `answer` is a key authorization for `token`: `<token>.<base64url>`, bounded.
    static func isKeyAuthorization(_ answer: [UInt8], token: String) -> Bool {
        let token = Array(token.utf8)
        guard answer.count <= maximumAnswerLength, answer.count > token.count + 1, answer.starts(with: token),
            answer[token.count] == 46
        else { return false }
        return Base64URL.isAlphabet(answer[(token.count + 1)...])
    }

    /// Answers a request for the HTTP-01 path. `host` is normalised (`HTTPFields.normalizeHost`).
    static func respond(
        method: Method, host: String?, path: UnsafeRawBufferPointer, snapshot: Snapshot, resolver: HTTP01Resolver
    ) -> Responder.Routed {
        let site: Traffic.SiteClass = host.flatMap { snapshot.site(forHost: $0) } == nil ? .unknown : .configured
        func routed(_ response: Response) -> Responder.Routed { Responder.Routed(response: response, site: site, path: .acmeChallenge) }
        guard let token = token(inPath: path) else { return routed(.error(.notFound, close: false)) }
        guard method != .other else { return routed(.error(.methodNotAllowed, close: false)) }
        // The resolver gets a checked host name only: it may use it (and the token) to find a file.
        guard let host, let name = try? HostName(parsing: host), !name.isWildcard, let answer = resolver(name.name, token),
            isKeyAuthorization(answer, token: token)
        else { return routed(.error(.notFound, close: false)) }
        let fields = PreparedFields([
            (name: "Content-Type", value: "application/octet-stream"), (name: "Content-Length", value: "\(answer.count)"),
            (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
        ])
        return routed(Response(status: .ok, headers: fields, body: answer, sendsBody: true, close: false))
    }
}
