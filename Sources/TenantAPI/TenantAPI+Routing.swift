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
        switch Self.route(path) {
        case .refused(let response):
            return response
        case .list:
            guard method == "GET" else { return Self.methodNotAllowed("GET, HEAD") }
            return list(token: token, query: query)
        case .verification(let name):
            guard token.covers(name) else { return Self.error(403, "forbidden", "this token's host patterns do not cover \(name)") }
            guard method == "GET" else { return Self.methodNotAllowed("GET, HEAD") }
            return verification(name)
        case .site(let name):
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
    }

    /// What a path under `/v1` names, before any method or token is looked at.
    enum Route: Equatable {
        case list
        case site(String)
        case verification(String)
        case refused(APIResponse)

        static func == (a: Route, b: Route) -> Bool {
            switch (a, b) {
            case (.list, .list): true
            case (.site(let x), .site(let y)), (.verification(let x), .verification(let y)): x == y
            case (.refused(let x), .refused(let y)): x.status == y.status && x.body == y.body
            default: false
            }
        }
    }

    /// The route of `path` (the target without its query): a `{host}` is checked as bytes by
    /// `APIHostName` before it names anything.
    static func route(_ path: Substring) -> Route {
        if path == "/v1/sites" { return .list }
        guard path.hasPrefix("/v1/sites/") else { return .refused(error(404, "not-found", "no such endpoint")) }
        let rest = path.dropFirst("/v1/sites/".count)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let host = parts[0]
        if let problem = APIHostName.problem(host) { return .refused(error(400, "bad-request", "{host}: \(problem)")) }
        guard parts.count > 1 else { return .site(String(host)) }
        let tail = parts[1]
        if tail.contains("%") || tail.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) {
            return .refused(error(400, "bad-request", "the path holds a dot segment or a percent-escape"))
        }
        guard tail == "verification" else { return .refused(error(404, "not-found", "no such endpoint")) }
        return .verification(String(host))
    }

    /// The token of `Authorization: Bearer <token>` (the scheme is case-insensitive, RFC 9110
    /// §11.1), when one in force has its digest.
    func authenticate(_ request: APIRequest) -> APIToken? {
        guard let presented = request.header("authorization").flatMap(Self.bearer) else { return nil }
        return tokens.token(presented: presented)
    }

    /// The token an `Authorization` value presents, or nil when it is not `Bearer <token>`
    /// within `maximumTokenLength`.
    static func bearer(_ field: String) -> String? {
        guard field.utf8.count <= maximumTokenLength + 7 else { return nil }
        let parts = field.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let presented = parts[1].trimmingCharacters(in: .whitespaces)
        return presented.isEmpty ? nil : presented
    }
}

extension Array {
    fileprivate subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
