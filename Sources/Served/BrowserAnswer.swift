public import AASA
import HTTPCore

/// What a browser gets for a URL when no app opens it (site.yaml's `routes:`, `fallback:` or
/// `page:`), for one platform: the answer `serve` gives, as `aasad match --config` reports it
/// (its JSON field names are that command's stable interface: fields are only ever added).
public struct BrowserAnswer: Encodable, Equatable, Sendable {
    /// `web`, `ios` or `android` (`ClientPlatform.label`).
    public var platform: String
    public var status: Int
    /// The redirect's target.
    public var location: String?
    /// True when the answer is a page (the site's, or the route's own).
    public var page: Bool?
    /// The page's file name in the site's directory, when the answer is a page.
    public var pageFile: String?
    /// The route that answered: its index in site.yaml's `routes:` and its path; nil when the
    /// fallback did (or nothing).
    public var route: Int?
    public var routePath: String?
    /// True when the walk of the routes passed the work budget (`PreparedRoutes.maximumWork`)
    /// and stopped: routes that might match were not tried, and the fallback (or a 404)
    /// answered. Absent otherwise.
    public var routeWalkCut: Bool?

    public init(platform: String, status: Int) {
        self.platform = platform
        self.status = status
    }
}

extension ServedSite {
    /// A browser of each platform, as `ClientPlatform.of(userAgent:)` reads it.
    static let browserAgents: [ClientPlatform: [UInt8]] = [
        .web: [], .ios: Array("(iPhone)".utf8), .android: Array("(Linux; Android 14)".utf8),
    ]

    /// What a browser gets for `url` when no app opens it, per platform (the decision serve
    /// makes, `linkAnswer`, for a phone or desktop browser of each), for a site with routes, a
    /// fallback or a page; nil for other sites.
    public func browserAnswers(_ url: LinkURL) -> [BrowserAnswer]? {
        guard fallback != nil || routes != nil else { return nil }
        // The request target a client sends for the URL: its path and query as written (what a
        // URL may not hold percent-encoded, as clients do, LinkURL), an empty path as "/" (RFC
        // 9110 §4.2.3), no fragment. It goes through the same entry as serve's requests.
        let target = Array((url.path.isEmpty ? "/" : url.path).utf8) + (url.query.map { Array("?\($0)".utf8) } ?? [])
        return ClientPlatform.allCases.map { platform in
            var answer = BrowserAnswer(platform: platform.label, status: 404)
            let host = hosts.first?.description ?? directory
            let link = target.withUnsafeBytes { target in
                (Self.browserAgents[platform] ?? []).withUnsafeBytes { linkAnswer(host: host, target: target, userAgent: $0) }
            }
            // Whether the work budget cut the walk (serve counts it, `routeWalksCut`): asked of
            // the same walk when no route answered, so that a fallback answer says why.
            if link?.route == nil, let routes {
                let end = target.firstIndex(of: UInt8(ascii: "?")) ?? target.count
                let cut = target[..<end].withUnsafeBytes {
                    PreparedFallback.covers(path: $0) && routes.walk(path: $0, platform: platform).cut
                }
                if cut { answer.routeWalkCut = true }
            }
            guard let link else { return answer }
            answer.route = link.route
            answer.routePath = link.route.map { links.routes[$0].pattern.text }
            switch link.kind {
            case .tooLong:
                answer.status = 414
            case .page(let file):
                answer.status = 200
                answer.page = true
                answer.pageFile = pages.first { $0.value === file }?.key
            case .preview, .interstitial:
                answer.status = 200
            case .redirect(let redirect, let location):
                answer.status = redirect.status.rawValue
                answer.location = location.map { String(decoding: $0, as: UTF8.self) } ?? redirect.headers.value(of: "Location")
            }
            return answer
        }
    }
}
