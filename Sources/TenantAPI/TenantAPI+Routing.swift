import AASA
import Foundation
import HTTPCore
import Hashing
import Logging
import Reactor
import SafeText
import Served
import SiteStore
import StrictJSON

/// The routes of docs/api.md: token, rate and scope first, then the path and method.
extension TenantAPI {
    public func handle(_ request: APIRequest) -> APIResponse {
        let target = request.target
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let query = target.contains("?") ? String(target.split(separator: "?", maxSplits: 1)[safe: 1] ?? "") : ""
        guard path == "/v1" || path.hasPrefix("/v1/") else { return Self.error(404, "not-found", "no such endpoint; the API is under /v1") }
        // Who asks comes first: nothing about the sites (not even which names are well formed)
        // is told to a client without a token.
        guard let token = authenticate(request) else {
            return Self.error(
                401, "unauthorized", "a valid token is required: Authorization: Bearer <token>",
                [("www-authenticate", "Bearer realm=\"aasad\"")])
        }
        if let wait = limiter.take(token.name) {
            return Self.error(
                429, "too-many-requests", "this token's requests per minute are spent; retry after \(wait) s", [("retry-after", "\(wait)")])
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        if path == "/v1/sites" {
            guard method == "GET" else { return Self.methodNotAllowed("GET, HEAD") }
            return list(token: token, query: query)
        }
        guard path.hasPrefix("/v1/sites/") else { return Self.error(404, "not-found", "no such endpoint") }
        let rest = path.dropFirst("/v1/sites/".count)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let host = parts[0]
        if let problem = APIHostName.problem(host) { return Self.error(400, "bad-request", "{host}: \(problem)") }
        if parts.count > 1 {
            let tail = parts[1]
            if tail.contains("%")
                || tail.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." })
            {
                return Self.error(400, "bad-request", "the path holds a dot segment or a percent-escape")
            }
            let name = String(host)
            guard tail == "verification" else { return Self.error(404, "not-found", "no such endpoint") }
            guard token.covers(name) else { return Self.error(403, "forbidden", "this token's host patterns do not cover \(name)") }
            guard method == "GET" else { return Self.methodNotAllowed("GET, HEAD") }
            return verification(name)
        }
        let name = String(host)
        guard token.covers(name) else {
            return Self.error(403, "forbidden", "this token's host patterns do not cover \(name)")
        }
        switch method {
        case "GET":
            return get(name)
        case "PUT", "DELETE":
            if let reason = configuration.readOnlyReason {
                return Self.error(405, "read-only", "the API is read-only: \(reason)", [("allow", "GET, HEAD")])
            }
            guard token.scope == .write else { return Self.error(403, "forbidden", "this token's scope is read") }
            return method == "PUT" ? put(name, request, token: token) : delete(name, request, token: token)
        default:
            return Self.methodNotAllowed("GET, HEAD, PUT, DELETE")
        }
    }

    /// The token of `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 9110
    /// §11.1), when one in force has its digest.
    func authenticate(_ request: APIRequest) -> APIToken? {
        guard let field = request.header("authorization"), field.utf8.count <= Self.maximumTokenLength + 7 else { return nil }
        let parts = field.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let presented = parts[1].trimmingCharacters(in: .whitespaces)
        guard !presented.isEmpty else { return nil }
        return tokens.token(presented: presented)
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
