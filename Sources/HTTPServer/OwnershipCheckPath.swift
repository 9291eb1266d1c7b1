import HTTPCore
import SafeText
import Served

/// What the listeners ask for the tenant API's ownership check: this deployment's answer for a
/// host and token, or nil when the host has no check with that token. Called on a serving thread
/// with whatever a client sends: it must look up in memory only. Its arguments are checked as
/// `HTTP01Resolver`'s are: a lower-case A-label host (no port, no wildcard), a token of 1 to
/// `OwnershipCheckPath.maximumTokenLength` base64url characters.
public typealias OwnershipAnswerResolver = @Sendable (_ host: String, _ token: String) -> [UInt8]?

/// `GET` or `HEAD /.well-known/aasad-verify/<token>` (docs/api.md, "Ownership check"): the
/// answer the resolver gives for the request's Host and token as `200 text/plain`, else `404`;
/// any other method `405`. The token is checked as bytes as HTTP-01's is (`HTTP01.token`): base64url
/// only, bounded, nothing decoded. Never a redirect: the checker follows none.
enum OwnershipCheckPath {
    static let pathPrefix = Array("/.well-known/aasad-verify/".utf8)

    /// Longest token looked up: the API's tokens are 43 characters
    /// (Sources/TenantAPI/VerificationStore.swift, `maximumTokenLength` there is the same 64).
    static let maximumTokenLength = 64

    /// Longest answer served: base64url of an HMAC-SHA256 (43 characters).
    static let answerLength = 43

    static func isCheckPath(_ path: UnsafeRawBufferPointer) -> Bool { path.starts(with: pathPrefix) }

    static func token(inPath path: UnsafeRawBufferPointer) -> String? {
        HTTP01.token(after: pathPrefix, in: path, maximumLength: maximumTokenLength)
    }

    static func respond(
        method: Method, host: String?, path: UnsafeRawBufferPointer, snapshot: Snapshot, resolver: OwnershipAnswerResolver
    ) -> Responder.Routed {
        let site: Traffic.SiteClass = host.flatMap { snapshot.site(forHost: $0) } == nil ? .unknown : .configured
        func routed(_ response: Response) -> Responder.Routed { Responder.Routed(response: response, site: site, path: .other) }
        guard let token = token(inPath: path) else { return routed(.error(.notFound, close: false)) }
        guard method != .other else { return routed(.error(.methodNotAllowed, close: false)) }
        guard let host, let name = try? HostName(parsing: host), !name.isWildcard, let answer = resolver(name.name, token),
            answer.count == answerLength, Base64URL.isAlphabet(answer)
        else { return routed(.error(.notFound, close: false)) }
        let fields = PreparedFields([
            (name: "Content-Type", value: "text/plain"), (name: "Content-Length", value: "\(answer.count)"),
            (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
        ])
        return routed(Response(status: .ok, headers: fields, body: answer, sendsBody: true, close: false))
    }
}
