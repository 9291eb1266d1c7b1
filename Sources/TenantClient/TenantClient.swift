package import Outbound
import SafeText
package import StrictJSON
import TenantAPI

/// The tenant API's client (docs/api.md, "The client"): one request at a time through the
/// project's outbound client (libcurl: no redirect followed, timeouts, bounded answers), and the
/// answer read into what a caller reports. The bounds and the host name rule are the API's own
/// (TenantAPI), so the client refuses exactly what the server would. Printing is the caller's
/// (`aasad site`, Sources/aasad/SiteReport.swift).
package struct TenantClient {
    package var base: String
    package var token: String
    package var caFile: String?
    package var timeoutSeconds: Int
    package var userAgent: String

    /// Largest answer read: a page of 1,000 summaries is some 200 KB and a site's state with
    /// every problem of a 1 MB request well below this; a larger answer is no API's.
    package static let maximumAnswerBytes = 4 << 20
    /// Pages `list --all` follows: 1,000,000 sites at the largest page of 1,000, so that a
    /// server handing out cursors forever cannot keep the client going.
    package static let maximumPages = 1_000
    /// Longest token sent: the API's own bound on a bearer token, past which it answers 401.
    package static let maximumTokenBytes = TenantAPI.maximumTokenLength
    /// Longest cursor followed or sent: cursors are short sealed strings; this bounds the query.
    package static let maximumCursorBytes = 1_024
    /// Sites per page the API gives at most (its own bound).
    package static let maximumPageSize = TenantAPI.maximumPageSize

    package init(base: String, token: String, caFile: String?, timeoutSeconds: Int, userAgent: String) {
        self.base = base
        self.token = token
        self.caFile = caFile
        self.timeoutSeconds = timeoutSeconds
        self.userAgent = userAgent
    }

    /// Why a request was not answered: the arguments made no request the outbound client takes
    /// (`usage`), or the API could not be reached or its answer broke the client's bounds.
    package enum Failure: Error, Equatable {
        case usage(String)
        case unreachable(String)
    }

    // MARK: - Arguments

    /// Why a base URL is refused, or nil: `scheme://authority` with an optional path prefix, no
    /// query, fragment or user info, https or http to a loopback address (the outbound client's
    /// own check decides the latter).
    package static func baseURLProblem(_ url: String) -> String? {
        guard url.utf8.count <= 2_048, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be a URL of visible ASCII, e.g. https://api.example.com:8444"
        }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            return "must start with https:// (or http:// to a loopback address)"
        }
        guard !url.contains("?"), !url.contains("#"), !url.contains("@"), !url.contains("%") else {
            return "must hold no query, fragment, user info or percent-escape"
        }
        var request = OutboundRequest(url: url)
        request.allowsPlainHTTPToLoopback = true
        do {
            try OutboundClient.check(request)
        } catch {
            return "takes plain http only to a loopback address (127.0.0.1, [::1], localhost); use https for \(TerminalText.escaped(url))"
        }
        return nil
    }

    /// Why a host argument is refused before any request, or nil: the API's own rule
    /// (TenantAPI's APIHostName), so that nothing the client puts in the path can leave
    /// `/v1/sites/` and no name the API would refuse costs a request.
    package static func hostProblem(_ host: String) -> String? {
        guard let problem = APIHostName.problem(host[...]) else { return nil }
        return "'\(TerminalText.escaped(host))' is not a host the API takes: \(problem); give the host name alone, e.g. links.example.com."
    }

    /// Why an ETag argument is refused, or nil: `*` or a quoted string of visible ASCII.
    package static func etagProblem(_ etag: String) -> String? {
        if etag == "*" { return nil }
        guard etag.utf8.count >= 2, etag.utf8.count <= 256, etag.hasPrefix("\""), etag.hasSuffix("\""),
            etag.utf8.dropFirst().dropLast().allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 })
        else { return "takes * or an ETag as the API gave it, quotes included (e.g. '\"3f2a...\"')" }
        return nil
    }

    /// Why a token is refused, or nil: visible ASCII within the API's bound.
    package static func tokenProblem(_ token: String) -> String? {
        guard token.utf8.count <= maximumTokenBytes, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be at most \(maximumTokenBytes) bytes of visible ASCII"
        }
        return nil
    }

    package static func sitePath(_ host: String) -> String { "/v1/sites/" + host }

    /// The list's path for one page.
    package static func listPath(limit: Int, cursor: String?) -> String {
        var path = "/v1/sites?limit=\(limit)"
        if let cursor { path += "&cursor=" + queryValue(cursor) }
        return path
    }

    /// A query value percent-encoded: only RFC 3986 unreserved bytes stay as they are.
    package static func queryValue(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || Array("-._~".utf8).contains(byte)
            {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    // MARK: - Requests

    /// One request to the API; the answer whatever its status.
    package func perform(_ method: OutboundRequest.Method, path: String, body: [UInt8] = [], ifMatch: String? = nil) throws(Failure)
        -> OutboundResponse
    {
        var configuration = OutboundClient.Configuration(caFile: caFile)
        configuration.totalTimeoutMilliseconds = timeoutSeconds * 1_000
        configuration.connectTimeoutMilliseconds = min(10, timeoutSeconds) * 1_000
        configuration.maximumBodyBytes = Self.maximumAnswerBytes
        configuration.userAgent = userAgent
        var request = OutboundRequest(method, url: trimmedBase + path)
        request.allowsPlainHTTPToLoopback = true
        request.body = body
        request.fields = [(name: "Authorization", value: "Bearer " + token), (name: "Accept", value: "application/json")]
        if !body.isEmpty { request.fields.append((name: "Content-Type", value: "application/json")) }
        if let ifMatch { request.fields.append((name: "If-Match", value: ifMatch)) }
        do {
            return try OutboundClient(configuration: configuration).perform(request)
        } catch let error where error.kind == .request {
            throw .usage(TerminalText.escaped(error.message))
        } catch {
            throw .unreachable("the API at \(trimmedBase) could not be reached: \(TerminalText.escaped(error.message))")
        }
    }

    /// `GET /v1/sites` from `cursor`: one page, or with `all` each next page the API names, every
    /// answer handed to `page` as it comes (which may throw, ending the walk). Returns the pages
    /// read and whether the walk ended by itself: false when the API kept giving a next cursor
    /// past `mayFollow`'s bounds, where it stopped.
    package func list(limit: Int, all: Bool, cursor: String?, page: (OutboundResponse) throws -> Void) throws -> (pages: Int, ended: Bool) {
        var cursor = cursor
        var pages = 0
        while true {
            let answer = try perform(.get, path: Self.listPath(limit: limit, cursor: cursor))
            try page(answer)
            pages += 1
            guard all, let next = Self.nextCursor(answer.body) else { return (pages, true) }
            guard Self.mayFollow(next, after: pages) else { return (pages, false) }
            cursor = next
        }
    }

    /// The base without a trailing slash, so that `base + "/v1/..."` has one.
    package var trimmedBase: String { base.hasSuffix("/") ? String(base.dropLast()) : base }

    // MARK: - Answers

    /// An answer as a caller reports it.
    package enum Answer {
        /// A JSON body (nil when the body was empty), its status in or out of 2xx.
        case json(status: Int, value: JSONValue?)
        /// A body that is no JSON: its status and an escaped excerpt.
        case notJSON(status: Int, excerpt: String)
        /// A 3xx: never followed; where it pointed, escaped.
        case redirect(status: Int, location: String)
    }

    /// Longest excerpt of a body that is no JSON shown, in bytes before escaping.
    package static let excerptBytes = 200

    /// What an answer is: a redirect first (whatever its body), then JSON or not.
    package static func read(_ answer: OutboundResponse) -> Answer {
        read(status: answer.status, headers: answer.headers, body: answer.body)
    }

    package static func read(status: Int, headers: ResponseHeaders, body: [UInt8]) -> Answer {
        if (300..<400).contains(status) {
            let location = headers.first("location").map { TerminalText.escaped(utf8: $0) } ?? "nowhere"
            return .redirect(status: status, location: location)
        }
        if body.isEmpty { return .json(status: status, value: nil) }
        guard let value = try? JSONParser.parse(body) else {
            let shown = TerminalText.escaped(utf8: Array(body.prefix(excerptBytes)))
            return .notJSON(status: status, excerpt: body.count > excerptBytes ? shown + "..." : shown)
        }
        return .json(status: status, value: value)
    }

    /// The `next` cursor of a list page, or nil at the end (or when the body holds none).
    package static func nextCursor(_ body: [UInt8]) -> String? {
        guard let value = try? JSONParser.parse(body) else { return nil }
        return value.objectMembers?.first(where: { $0.key == "next" })?.value.stringValue
    }

    /// Whether a list walk may follow `next` after `pages` pages: within the page bound, and a
    /// cursor within its own.
    package static func mayFollow(_ next: String, after pages: Int) -> Bool {
        pages < maximumPages && next.utf8.count <= maximumCursorBytes
    }
}
