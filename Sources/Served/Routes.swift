import AASA
public import HTTPCore
import Synchronization

/// A route's path pattern (site.yaml `routes:`, docs/link-domain.md): the AASA matcher's `*`
/// (any run, `/` included) and `?` (one byte), and named captures `{name}`, matched against the
/// request's path as the client sent it (before `?`, not decoded: `%2F` is three bytes).
///
/// A capture takes one path segment, or the rest of one: one or more bytes up to the next `/` or
/// the end of the path. It must be followed by `/`, `*` or the end of the pattern, and it may not
/// come after a `*` (where the `*` stopped would decide what it holds). So everything before the
/// first `*` has a fixed place in the path and is read in one pass, and what follows is a plain
/// glob, run with the AASA matcher's linear algorithm (`ByteGlob`): no pattern backtracks.
/// A capture never holds a dot segment (`.`, `..`, or `%2e` forms of them): a browser would
/// resolve it against the target's path, and a link could then leave the path the target names.
public struct RoutePattern: Sendable, Equatable, CustomStringConvertible {
    /// As written.
    public let text: String
    /// The captures' names, in order.
    public let captureNames: [String]

    enum Head: Sendable, Equatable {
        case byte(UInt8)
        case anyByte
        case capture
    }

    /// The tokens before the first `*`.
    let head: [Head]
    /// From the first `*` on; nil when the pattern has none.
    let tail: ByteGlob?
    /// The bytes the pattern starts with, up to its first wildcard or capture (the table's index).
    let literalPrefix: [UInt8]

    /// Longest pattern: a link's path is short; this bounds one route's matching work
    /// (tokens × path / 64 word operations) and site.yaml's index.
    public static let maximumLength = 512
    /// Most captures in one pattern: more segments than any link path names.
    public static let maximumCaptures = 8
    /// Longest capture name.
    public static let maximumNameLength = 32
    /// Names a target already uses for the request's path and query.
    public static let reservedNames: Set<String> = ["path", "query"]

    public var description: String { text }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public init(parsing text: String) throws(Problem) {
        let bytes = Array(text.utf8)
        guard bytes.first == UInt8(ascii: "/") else { throw Problem("must start with '/', e.g. /p/{id}") }
        guard bytes.count <= Self.maximumLength else { throw Problem("\(bytes.count) bytes; at most \(Self.maximumLength)") }
        var head: [Head] = []
        var tail: [ByteGlob.Token]? = nil
        var names: [String] = []
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            switch c {
            case UInt8(ascii: "*"):
                if tail == nil { tail = [] }
                tail!.append(.anyRun)
                i += 1
            case UInt8(ascii: "?"):
                if tail != nil { tail!.append(.anyByte) } else { head.append(.anyByte) }
                i += 1
            case UInt8(ascii: "{"):
                var j = i + 1
                while j < bytes.count && bytes[j] != UInt8(ascii: "}") { j += 1 }
                guard j < bytes.count else { throw Problem("byte \(i + 1): '{' opens a capture that is not closed with '}'") }
                let name = String(decoding: bytes[(i + 1)..<j], as: UTF8.self)
                guard !name.isEmpty, name.utf8.count <= Self.maximumNameLength, name.utf8.allSatisfy(Self.isNameByte) else {
                    throw Problem(
                        "byte \(i + 1): a capture's name is 1 to \(Self.maximumNameLength) letters, digits or '_', e.g. {id}")
                }
                guard !Self.reservedNames.contains(name) else {
                    throw Problem("{\(name)} names the request's \(name) in targets; pick another name")
                }
                guard !names.contains(name) else { throw Problem("{\(name)} is captured twice") }
                guard tail == nil else {
                    throw Problem("{\(name)} comes after a '*': where the '*' stops would decide what it captures; put captures first")
                }
                guard names.count < Self.maximumCaptures else { throw Problem("more than \(Self.maximumCaptures) captures") }
                let next = j + 1 < bytes.count ? bytes[j + 1] : nil
                guard next == nil || next == UInt8(ascii: "/") || next == UInt8(ascii: "*") else {
                    throw Problem("{\(name)} must be followed by '/', '*' or the end: it takes the rest of its segment")
                }
                names.append(name)
                head.append(.capture)
                i = j + 1
            default:
                // The bytes a path holds as sent (RFC 3986 §3.3), `%` for an escape written out.
                guard RedirectTarget.isKept(c) else {
                    let shown = c >= 0x21 && c <= 0x7E ? "'\(Character(Unicode.Scalar(c)))'" : HTTPField.name(of: c)
                    throw Problem("byte \(i + 1) is \(shown); write the path as it is sent (percent-encoded)")
                }
                if tail != nil { tail!.append(.byte(c)) } else { head.append(.byte(c)) }
                i += 1
            }
        }
        self.text = text
        self.head = head
        self.tail = tail.map(ByteGlob.init)
        captureNames = names
        var prefix: [UInt8] = []
        for case .byte(let b) in head.prefix(while: { if case .byte = $0 { true } else { false } }) { prefix.append(b) }
        literalPrefix = prefix
    }

    private static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_")
    }

    /// What a try charges before its tail: the head's pass and the captures' scans.
    static let tryWork = 256

    /// Whether `path` (without its query) matches; the captures' byte ranges go to `captures`.
    /// Linear in the path: the head is one pass, the tail one `ByteGlob` run.
    func match(_ path: UnsafeRawBufferPointer, captures: inout [Range<Int>]) -> Bool {
        var unbounded = Int.max
        return match(path, captures: &captures, work: &unbounded)
    }

    /// `match`, charging `work` as it goes (`ByteGlob.matches(_:work:)`): false, with `work`
    /// below zero, once it is spent.
    func match(_ path: UnsafeRawBufferPointer, captures: inout [Range<Int>], work: inout Int) -> Bool {
        captures.removeAll(keepingCapacity: true)
        work -= Self.tryWork + path.count
        if work < 0 { return false }
        var p = 0
        let n = path.count
        for token in head {
            switch token {
            case .byte(let b):
                guard p < n, path[p] == b else { return false }
                p += 1
            case .anyByte:
                guard p < n else { return false }
                p += 1
            case .capture:
                let start = p
                while p < n && path[p] != UInt8(ascii: "/") { p += 1 }
                guard p > start, !Self.isDotSegment(UnsafeRawBufferPointer(rebasing: path[start..<p])) else { return false }
                captures.append(start..<p)
            }
        }
        guard let tail else { return p == n }
        return tail.matches(UnsafeRawBufferPointer(rebasing: path[p..<n]), work: &work)
    }

    /// `.` or `..`, also with either dot written `%2e` (browsers resolve those too: the WHATWG
    /// URL standard's "single-dot" and "double-dot" segments).
    static func isDotSegment(_ segment: UnsafeRawBufferPointer) -> Bool {
        guard segment.count <= 6 else { return false }
        var dots = 0
        var i = 0
        while i < segment.count {
            if segment[i] == UInt8(ascii: ".") {
                i += 1
            } else if i + 2 < segment.count, segment[i] == UInt8(ascii: "%"), segment[i + 1] == UInt8(ascii: "2"),
                segment[i + 2] | 0x20 == UInt8(ascii: "e")
            {
                i += 3
            } else {
                return false
            }
            dots += 1
        }
        return dots == 1 || dots == 2
    }
}

/// A preview's text (`title`, `description`, `site-name`): UTF-8 with the route's captures as
/// `{name}`, filled with each capture percent-decoded and made safe (`LinkPages.appendText`).
public struct PreviewText: Sendable, Equatable, CustomStringConvertible {
    public let text: String
    enum Part: Sendable, Equatable {
        case text(String)
        case capture(Int)
    }

    let parts: [Part]

    /// Longest text as written: a preview shows a line or two.
    public static let maximumLength = 1024

    public var description: String { text }

    /// `captures` are the names `{name}` may use (none at the site's level).
    public init(parsing text: String, captures: [String]) throws(RoutePattern.Problem) {
        guard text.utf8.count <= Self.maximumLength else { throw .init("\(text.utf8.count) bytes; at most \(Self.maximumLength)") }
        for scalar in text.unicodeScalars where LinkPages.isUnsafe(scalar) {
            throw .init("holds \(LinkPages.codePoint(scalar)), a control or direction character; write plain text")
        }
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            guard let close = rest[open...].firstIndex(of: "}") else { break }
            let name = String(rest[rest.index(after: open)..<close])
            guard let index = captures.firstIndex(of: name) else {
                let known = captures.isEmpty ? "none here" : captures.map { "{\($0)}" }.joined(separator: ", ")
                throw .init("{\(name)} is not a capture of this route (captures: \(known))")
            }
            if open > rest.startIndex { parts.append(.text(String(rest[..<open]))) }
            parts.append(.capture(index))
            rest = rest[rest.index(after: close)...]
        }
        if !rest.isEmpty { parts.append(.text(String(rest))) }
        self.text = text
        self.parts = parts
    }
}

/// `preview:` of a route or a site: what link-preview crawlers are shown (docs/link-domain.md).
public struct PreviewSettings: Sendable, Equatable {
    public var title: PreviewText?
    public var description: PreviewText?
    /// An https URL (checked as a redirect target is), captures URL-encoded into it.
    public var image: RedirectTemplate?
    public var siteName: PreviewText?

    public init() {}

    public static let keys = ["title", "description", "image", "site-name"]
}

/// What site.yaml says about a link domain beyond `fallback`: the route table, the site's
/// preview and interstitial, and the answers' Cache-Control (`fallback-cache-control`).
public struct SiteLinkSettings: Sendable, Equatable {
    public var routes: [RouteSettings] = []
    public var preview: PreviewSettings?
    public var interstitial = false
    public var cacheControl: String?

    public init() {}

    /// Whether a path's answer may depend on the User-Agent beyond the fallback's targets: a
    /// route may answer one platform and not another, and crawlers and in-app browsers may get
    /// pages of their own. Every answer of other paths then says `Vary: User-Agent`.
    public var variesByUserAgent: Bool { !routes.isEmpty || preview != nil || interstitial }
}

/// One row of `routes:`.
public struct RouteSettings: Sendable, Equatable {
    public var pattern: RoutePattern
    public var web: RedirectTemplate?
    public var ios: RedirectTemplate?
    public var android: RedirectTemplate?
    /// A page of the site's directory (the site's own `page:` or another file), read, checked
    /// and served as the site's page is (`ServedSite.routePages`).
    public var page: String?
    public var status: Status = .found
    public var preview: PreviewSettings?
    /// nil: the site's `interstitial`.
    public var interstitial: Bool?

    public init(pattern: RoutePattern) { self.pattern = pattern }

    public static let keys = ["path", "web", "ios", "android", "page", "status", "preview", "interstitial"]
    /// A route's redirect statuses: the fallback's and 303.
    public static let statuses: [Status] = [.movedPermanently, .found, .seeOther, .temporaryRedirect, .permanentRedirect]
    /// Most routes in one site.yaml. A table people write and read: past any hand-made one
    /// (moving link services have tens), and it bounds what a site holds per route (its prepared
    /// answers, its index, its count on `/sites` and its `route` label values on /metrics).
    public static let maximumCount = 1000

    /// The names a target's `{…}` may use: slot 0 the path and query, 1 the query, 2… captures.
    public var placeholders: [String] { ["path", "query"] + pattern.captureNames }

    public func target(for platform: ClientPlatform) -> RedirectTemplate? {
        switch platform {
        case .web: web
        case .ios: ios ?? web
        case .android: android ?? web
        }
    }
}

/// Answers per route, kept by the registry across a site's versions while its route paths stay
/// the same (relaxed atomic adds: a count, not an ordering).
public final class RouteCounts: Sendable {
    /// The route paths they count, in order.
    public let paths: [String]
    private let counts: [Counter]

    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    public init(paths: [String]) {
        self.paths = paths
        counts = paths.map { _ in Counter() }
    }

    /// Requests whose route walk `PreparedRoutes.maximumWork` cut short (the fallback, or a 404,
    /// answered them without trying every route that might match).
    private let cuts = Counter()

    public func add(_ route: Int) {
        guard route >= 0 && route < counts.count else { return }
        counts[route].value.wrappingAdd(1, ordering: .relaxed)
    }

    public func addCut() { cuts.value.wrappingAdd(1, ordering: .relaxed) }

    /// Walks cut short since the site was first loaded (kept with the answers' counts).
    public var cutWalks: Int { cuts.value.load(ordering: .relaxed) }

    public func value(_ route: Int) -> Int {
        route >= 0 && route < counts.count ? counts[route].value.load(ordering: .relaxed) : 0
    }

    public var count: Int { counts.count }
}

/// A site's routes, prepared when it loads: each route's answers (redirect fields built once per
/// target), and an index of the routes by their literal prefix so that a request looks only at
/// routes that can match it (flat in the table's size: docs/link-domain.md, "Cost").
public final class PreparedRoutes: Sendable {
    public let settings: [RouteSettings]
    /// Per route, per platform (`ClientPlatform.rawValue`): the answer.
    let answers: [[PreparedFallback.Answer?]]
    /// Per route: whether its answers say `Vary: User-Agent`.
    let varies: [Bool]
    private let index: PrefixIndex

    /// Work one request may spend trying routes, charged as the matcher works
    /// (`RoutePattern.match(_:captures:work:)`, `ByteGlob.matches(_:work:)`: about a nanosecond a
    /// unit in a release build). 64 routes of short patterns spend about 200,000; the bound is
    /// for a tenant's pathological table (64 patterns of 500 `*a` tokens against a 300-byte path
    /// were 5 ms a request): once it is spent no further route is tried and the site's fallback
    /// answers, so a request's matching costs at most about half a millisecond.
    public static let maximumWork = 1 << 19
    /// Most routes one path can be tried against: the routes whose literal prefixes all lie on
    /// one path of the index (e.g. every route starting `/*` or `/{id}`). site.yaml is refused
    /// past it, so a request never walks a long list route by route; a table of `/p/{id}`-like
    /// routes with their own prefixes has one or two per path at any size.
    public static let maximumCandidates = 64

    /// The most routes one path can be tried against in `routes`, and the literal prefix the
    /// last of them starts with (to name it in site.yaml's error).
    public static func widestCandidates(_ routes: [RouteSettings]) -> (count: Int, prefix: String) {
        let index = PrefixIndex(routes.map(\.pattern.literalPrefix))
        return (index.maximumCandidates.count, String(decoding: index.maximumCandidates.prefix, as: UTF8.self))
    }

    /// nil without routes.
    public static func prepare(_ routes: [RouteSettings], site: SiteLinkSettings) -> PreparedRoutes? {
        routes.isEmpty ? nil : PreparedRoutes(routes, site: site)
    }

    private init(_ routes: [RouteSettings], site: SiteLinkSettings) {
        settings = routes
        let cacheControl = site.cacheControl ?? FallbackSettings.defaultCacheControl
        var answers: [[PreparedFallback.Answer?]] = []
        var varies: [Bool] = []
        for route in routes {
            let kinds = ClientPlatform.allCases.map { route.target(for: $0)?.text ?? (route.page != nil ? "page" : nil) }
            let vary =
                Set(kinds).count > 1 || route.preview != nil || site.preview != nil || (route.interstitial ?? site.interstitial)
            var built: [String: PreparedFallback.Redirect] = [:]
            answers.append(
                ClientPlatform.allCases.map { platform in
                    guard let target = route.target(for: platform) else { return route.page != nil ? .page : nil }
                    if let redirect = built[target.text] { return .redirect(redirect) }
                    let redirect = PreparedFallback.Redirect(
                        status: route.status, target: target, cacheControl: cacheControl, varyUserAgent: vary)
                    built[target.text] = redirect
                    return .redirect(redirect)
                })
            varies.append(vary)
        }
        self.answers = answers
        self.varies = varies
        index = PrefixIndex(routes.map(\.pattern.literalPrefix))
    }

    /// What one walk of the table found: the first route that matches and answers the platform,
    /// with its captures; or none, and whether `maximumWork` cut the walk short (routes that
    /// might have matched were not tried).
    public struct Walk {
        public var found: (route: Int, captures: [Range<Int>])?
        public var cut: Bool
    }

    /// The first route that matches `path` and answers `platform`, with its captures.
    /// Past `maximumWork`, none (the fallback answers), and `cut`.
    public func walk(path: UnsafeRawBufferPointer, platform: ClientPlatform) -> Walk {
        var captures: [Range<Int>] = []
        var work = Self.maximumWork
        for route in index.candidates(path) where answers[route][platform.rawValue] != nil {
            if settings[route].pattern.match(path, captures: &captures, work: &work) { return Walk(found: (route, captures), cut: false) }
            if work < 0 { return Walk(found: nil, cut: true) }
        }
        return Walk(found: nil, cut: false)
    }

    /// `walk`'s route, a cut walk counted in `counts` (`/sites`' `routeWalksCut`,
    /// `aasad_route_walks_cut_total`): a cut is a tenant's table too costly for a path, which
    /// would otherwise answer with the fallback and say nothing.
    func first(path: UnsafeRawBufferPointer, platform: ClientPlatform, counts: RouteCounts?) -> (route: Int, captures: [Range<Int>])? {
        let walk = walk(path: path, platform: platform)
        if walk.cut { counts?.addCut() }
        return walk.found
    }
}

/// Routes by the literal bytes their patterns start with, as a byte trie: walking a path down it
/// visits at most min(path, longest prefix) nodes and yields only the routes whose prefix the
/// path starts with, in table order. A table of `/p/{id}`-like routes with distinct prefixes
/// then costs the same at 1,000 routes as at 10; only routes that share a prefix the path has
/// are tried one by one (at worst every route, e.g. 1,000 routes all starting `/*`).
struct PrefixIndex: Sendable {
    /// Node i's children: (byte, node) sorted by byte.
    private let children: [[(UInt8, Int32)]]
    /// Node i's routes: those whose whole prefix ends at i.
    private let routes: [[Int32]]
    /// The most routes one path collects walking down (a node's routes and its ancestors'), and
    /// the prefix of the node where that many are reached.
    let maximumCandidates: (count: Int, prefix: [UInt8])

    init(_ prefixes: [[UInt8]]) {
        var children: [[UInt8: Int32]] = [[:]]
        var routes: [[Int32]] = [[]]
        for (route, prefix) in prefixes.enumerated() {
            var node = 0
            for byte in prefix {
                if let next = children[node][byte] {
                    node = Int(next)
                } else {
                    children.append([:])
                    routes.append([])
                    let next = Int32(children.count - 1)
                    children[node][byte] = next
                    node = Int(next)
                }
            }
            routes[node].append(Int32(route))
        }
        self.children = children.map { $0.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
        self.routes = routes
        // Depth first from the root, with the routes collected above each node.
        var widest: (count: Int, prefix: [UInt8]) = (routes[0].count, [])
        var stack: [(node: Int, above: Int, prefix: [UInt8])] = [(0, 0, [])]
        while let (node, above, prefix) = stack.popLast() {
            let here = above + routes[node].count
            if here > widest.count { widest = (here, prefix) }
            for (byte, next) in self.children[node] { stack.append((Int(next), here, prefix + [byte])) }
        }
        maximumCandidates = widest
    }

    /// The routes whose prefix `path` starts with, in table order.
    func candidates(_ path: UnsafeRawBufferPointer) -> [Int] {
        var found: [Int] = []
        var node = 0
        var i = 0
        while true {
            for r in routes[node] { found.append(Int(r)) }
            guard i < path.count else { break }
            let byte = path[i]
            guard let next = children[node].first(where: { $0.0 == byte }) else { break }
            node = Int(next.1)
            i += 1
        }
        // Found along the walk (shorter prefixes first); the table's order decides.
        if found.count > 1 { found.sort() }
        return found
    }
}
