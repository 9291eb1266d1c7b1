import AASA
import Foundation
import HTTPCore
import Testing

@testable import Served
@testable import SiteStore

private func parse(_ yaml: String) -> (SiteSettings, [ConfigProblem]) {
    SiteSettings.parse(yaml, file: "sites/a.test/site.yaml")
}

private func errors(_ yaml: String) -> [String] {
    parse(yaml).1.filter { $0.severity == .error }.map(\.message)
}

/// A served site from site.yaml text (no files): what a request gets is `linkAnswer`.
private func site(_ yaml: String) throws -> ServedSite {
    let (settings, problems) = parse(yaml)
    #expect(problems.filter { $0.severity == .error }.isEmpty, "\(problems)")
    return ServedSite(
        directory: "a.test", hosts: [], aasa: nil, assetLinks: nil, certificate: nil, loadedAt: 0,
        fallback: PreparedFallback.prepare(settings.fallback, hasPage: false, alwaysVaries: settings.links.variesByUserAgent),
        fallbackSettings: settings.fallback,
        routes: PreparedRoutes.prepare(settings.links.routes, site: settings.links), links: settings.links,
        routeCounts: RouteCounts(paths: settings.links.routes.map(\.pattern.text)))
}

private struct Answer {
    var status: Int
    var location: String?
    var route: Int?
    var body: String = ""
    var type: String?
}

private func ask(_ site: ServedSite, _ pathAndQuery: String, agent: String? = nil) -> Answer? {
    let bytes = Array(pathAndQuery.utf8)
    let pathEnd = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.count
    let agentBytes = agent.map { Array($0.utf8) }
    return bytes.withUnsafeBytes { all in
        let path = UnsafeRawBufferPointer(rebasing: all[0..<pathEnd])
        let answer: LinkAnswer? =
            if let agentBytes {
                agentBytes.withUnsafeBytes { site.linkAnswer(host: "a.test", path: path, pathAndQuery: all, userAgent: $0) }
            } else {
                site.linkAnswer(host: "a.test", path: path, pathAndQuery: all, userAgent: nil)
            }
        guard let answer else { return nil }
        switch answer.kind {
        case .redirect(let r, let location):
            let loc = location.map { String(decoding: $0, as: UTF8.self) } ?? r.headers.value(of: "Location")
            return Answer(status: r.status.rawValue, location: loc, route: answer.route)
        case .page: return Answer(status: 200, location: nil, route: answer.route, type: "page")
        case .preview(let headers, let body), .interstitial(let headers, let body):
            return Answer(
                status: 200, location: nil, route: answer.route, body: String(decoding: body, as: UTF8.self),
                type: headers.value(of: "Content-Type"))
        case .tooLong: return Answer(status: 414, location: nil, route: answer.route)
        }
    }
}

private let iPhone =
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1"
private let android = "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Mobile Safari/537.36"
private let slack = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"
private let instagram =
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 334.0.4.32.98 (iPhone14,5; iOS 17_5; en_US; en; scale=3.00; 1170x2532; 612252013)"

@Suite("site.yaml routes: patterns, checks and bounds")
struct RoutePatternTests {
    @Test(
        "hostile or ambiguous patterns are refused with the reason",
        arguments: [
            ("p/{id}", "must start with '/'"),
            ("/p/{}", "a capture's name"),
            ("/p/{id", "not closed"),
            ("/p/{path}", "names the request's path"),
            ("/p/{query}", "names the request's query"),
            ("/p/{id}/{id}", "captured twice"),
            ("/*/{id}", "comes after a '*'"),
            ("/p/{id}.png", "must be followed by '/', '*' or the end"),
            ("/p/{i d}", "a capture's name"),
            ("/p q", "byte 3 is 0x20"),
            ("/p\r\nx", "byte 3 is 0x0D (CR)"),
            ("/p#x", "byte 3 is '#'"),
            ("/p\"x", "byte 3 is '\"'"),
            ("/p<script>", "byte 3 is '<'"),
        ])
    func refused(_ pattern: String, _ reason: String) {
        #expect(throws: RoutePattern.Problem.self) { try RoutePattern(parsing: pattern) }
        do {
            _ = try RoutePattern(parsing: pattern)
        } catch {
            #expect(error.description.contains(reason), "\(pattern): \(error)")
        }
    }

    @Test("a pattern is at most 512 bytes, 8 captures, names of 32 bytes")
    func bounds() throws {
        let fits = "/" + String(repeating: "a", count: RoutePattern.maximumLength - 1)
        #expect((try? RoutePattern(parsing: fits)) != nil)
        #expect((try? RoutePattern(parsing: fits + "a")) == nil)
        let eight = (0..<RoutePattern.maximumCaptures).map { "/{c\($0)}" }.joined()
        #expect((try? RoutePattern(parsing: eight)) != nil)
        #expect((try? RoutePattern(parsing: eight + "/{c9}")) == nil)
        let name = String(repeating: "n", count: RoutePattern.maximumNameLength)
        #expect((try? RoutePattern(parsing: "/{\(name)}")) != nil)
        #expect((try? RoutePattern(parsing: "/{\(name)n}")) == nil)
    }

    @Test("`*a*a*a…` against a 16 KB path that almost matches takes linear time")
    func noBacktracking() throws {
        let pattern = try RoutePattern(parsing: "/" + String(repeating: "*a", count: 255) + "b")
        let path = Array(("/" + String(repeating: "a", count: 16 * 1024)).utf8)
        var captures: [Range<Int>] = []
        let clock = ContinuousClock()
        let start = clock.now
        let matched = path.withUnsafeBytes { pattern.match($0, captures: &captures) }
        let took = clock.now - start
        #expect(!matched)
        print("route match, 511-token *a*a… pattern against a 16 KB path: \(took)")
        // tokens × path / 64 = 511 × 257 word operations: milliseconds even in a debug build; a
        // backtracking matcher would not end.
        #expect(took < .seconds(2), "\(took)")
        #expect(Array("/aab".utf8).withUnsafeBytes { try! RoutePattern(parsing: "/*a*b").match($0, captures: &captures) })
    }

    @Test("captures take one segment, never a dot segment; `?` is one byte; `*` crosses '/'")
    func captures() throws {
        let pattern = try RoutePattern(parsing: "/p/{id}/{sub}*")
        func run(_ path: String) -> [String]? {
            var captures: [Range<Int>] = []
            let bytes = Array(path.utf8)
            guard bytes.withUnsafeBytes({ pattern.match($0, captures: &captures) }) else { return nil }
            return captures.map { String(decoding: bytes[$0], as: UTF8.self) }
        }
        #expect(run("/p/42/x") == ["42", "x"])
        #expect(run("/p/42/x/y/z") == ["42", "x"], "the * takes /y/z")
        #expect(run("/p//x") == nil, "a capture is never empty")
        for dots in ["..", ".", "%2e%2e", "%2E.", ".%2e", "%2e"] { #expect(run("/p/\(dots)/x") == nil, "\(dots)") }
        #expect(run("/p/...%2e/x") == ["...%2e", "x"], "not a dot segment")
        let one = try RoutePattern(parsing: "/a?c")
        var c: [Range<Int>] = []
        #expect(Array("/abc".utf8).withUnsafeBytes { one.match($0, captures: &c) })
        #expect(!Array("/ac".utf8).withUnsafeBytes { one.match($0, captures: &c) })
        #expect(!Array("/a/bc".utf8).withUnsafeBytes { one.match($0, captures: &c) })
    }
}

@Suite("site.yaml routes: the table and its answers")
struct RouteTableTests {
    static let table = """
        fallback:
          web: https://www.example.com{path}
        routes:
          - path: /p/{id}
            web: https://shop.example/products/{id}?{query}
            ios: https://apps.apple.com/app/id1234567890
            android: https://play.google.com/store/apps/details?id=com.example
            preview: {title: "Product {id}", description: "Open it in the app", image: "https://cdn.example/p/{id}.png"}
          - path: /invite/*
            ios: https://apps.apple.com/app/id1234567890?ct=invite
            web: https://shop.example/invite
            status: 307
            interstitial: true
          - path: /only-ios
            ios: https://apps.apple.com/app/id1
          - path: /p/*
            web: https://shop.example/never
        """

    @Test("first match wins, per platform; the fallback is last; captures and the query fill targets")
    func firstMatchWins() throws {
        let s = try site(Self.table)
        #expect(ask(s, "/p/42?utm=a&b=c")?.location == "https://shop.example/products/42?utm=a&b=c")
        #expect(ask(s, "/p/42?utm=a")?.route == 0)
        #expect(ask(s, "/p/42", agent: iPhone)?.location == "https://apps.apple.com/app/id1234567890")
        #expect(ask(s, "/p/42", agent: android)?.location == "https://play.google.com/store/apps/details?id=com.example")
        let invite = ask(s, "/invite/abc/def")
        #expect(invite?.status == 307 && invite?.location == "https://shop.example/invite" && invite?.route == 1)
        // A route with no target for the platform is passed over: desktop goes to the fallback.
        #expect(ask(s, "/only-ios", agent: iPhone)?.route == 2)
        let desktop = ask(s, "/only-ios")
        #expect(desktop?.route == nil && desktop?.location == "https://www.example.com/only-ios")
        #expect(ask(s, "/p/42/more")?.route == 3)
        #expect(ask(s, "/elsewhere?x=1")?.location == "https://www.example.com/elsewhere?x=1")
        // The association files and /.well-known/ are never routed.
        #expect(ask(s, "/apple-app-site-association") == nil)
        #expect(ask(s, "/.well-known/apple-app-site-association") == nil)
    }

    @Test(
        "hostile captures stay in their segment of the target's path, encoded as {path} is",
        arguments: [
            ("/p/%0d%0aSet-Cookie:a", "https://shop.example/products/%0d%0aSet-Cookie:a?"),
            ("/p/\"><script>", "https://shop.example/products/%22%3E%3Cscript%3E?"),
            ("/p/@evil.example", "https://shop.example/products/@evil.example?"),
            ("/p/\\evil", "https://shop.example/products/%5Cevil?"),
            ("/p/%E2%80%AEgpj.exe", "https://shop.example/products/%E2%80%AEgpj.exe?"),
        ])
    func hostileCaptures(_ path: String, _ expected: String) throws {
        let s = try site(Self.table)
        let location = try #require(ask(s, path)?.location)
        #expect(location == expected)
        #expect(URL(string: location)?.host == "shop.example")
        #expect(HTTPField.valueProblem(location.utf8) == nil)
        // A dot segment never reaches the target: that route does not match it.
        #expect(ask(s, "/p/..")?.route == 3)
    }

    @Test("targets: captures only after the host and a '/', known placeholders only, https only")
    func targetChecks() {
        func route(_ web: String) -> String { "routes:\n  - path: /p/{id}\n    web: \(web)\n" }
        #expect(errors(route("https://shop.example{id}")).first?.contains("must come after the host") == true)
        #expect(errors(route("https://{id}.example/")).first?.contains("must come after the host") == true)
        #expect(errors(route("https://shop.example/{nope}")).first?.contains("{path}, {query}, {id}") == true)
        #expect(errors(route("http://shop.example/{id}")).first?.contains("https") == true)
        #expect(errors(route("https://shop.example/{id}")).isEmpty)
        #expect(errors(route("https://shop.example{path}")).isEmpty)
        #expect(
            errors("routes:\n  - path: /p/{id}\n    status: 304\n    web: https://a.example/\n").first?.contains("301, 302, 303, 307, 308")
                == true)
        #expect(errors("routes:\n  - path: /p/{id}\n").first?.contains("names no target") == true)
        #expect(errors("routes:\n  - web: https://a.example/\n").first?.contains("has no path") == true)
        #expect(errors("routes: /p\n").first?.contains("must be a list of routes") == true)
        #expect(errors("routes:\n  - path: /a\n    web: https://a.example/\n    colour: red\n").first?.contains("unknown key") == true)
        #expect(errors("routes:\n  - path: /a\n    page: help.html\n").isEmpty, "a route's page of its own")
        #expect(errors("page: help.html\nroutes:\n  - path: /a\n    page: help.html\n").isEmpty)
        #expect(
            errors("routes:\n  - path: /a\n    web: https://a.example/\n  - path: /a\n    web: https://b.example/\n").first?.contains(
                "routes[0]") == true)
    }

    @Test("at most 1,000 routes")
    func countBound() {
        func table(_ n: Int) -> String {
            "routes:\n" + (0..<n).map { "  - {path: \"/r\($0)/{id}\", web: \"https://a.example/\($0)/{id}\"}\n" }.joined()
        }
        #expect(table(RouteSettings.maximumCount).utf8.count <= SiteSettings.maximumFileSize)
        #expect(errors(table(RouteSettings.maximumCount)).isEmpty)
        #expect(parse(table(RouteSettings.maximumCount)).0.links.routes.count == RouteSettings.maximumCount)
        #expect(errors(table(RouteSettings.maximumCount + 1)).first?.contains("at most 1000") == true)
    }

    @Test("at most 64 routes one path can be tried against: 64 starting `/*` load, 65 are refused; distinct prefixes do not add up")
    func candidatesBound() {
        func table(_ n: Int, _ path: (Int) -> String) -> String {
            "routes:\n" + (0..<n).map { "  - {path: \"\(path($0))\", web: \"https://a.example/\($0)\"}\n" }.joined()
        }
        let wild = { (i: Int) in "/*x\(i)" }
        #expect(errors(table(PreparedRoutes.maximumCandidates, wild)).isEmpty)
        let refused = errors(table(PreparedRoutes.maximumCandidates + 1, wild))
        #expect(refused.first?.contains("65 routes start with \"/\"") == true, "\(refused)")
        // Nested prefixes add up along one path: /a/*, /a/b/*, … all lie on /a/b/c/….
        let nested = { (i: Int) in "/" + String(repeating: "a/", count: i + 1) + "*" }
        #expect(errors(table(PreparedRoutes.maximumCandidates + 1, nested)).first?.contains("65 routes") == true)
        // 1,000 routes of their own prefixes: one candidate a path.
        #expect(errors(table(RouteSettings.maximumCount, { "/r\($0)/{id}" })).isEmpty)
    }

    @Test("a request's matching work is bounded: once maximumWork is spent no route is tried, the fallback answers")
    func workBound() throws {
        // 63 routes of 510 bytes (near the longest pattern) that never match a path of `a`s, then
        // one that does: against a short path every route is tried and the last matches.
        let slow = "/" + String(repeating: "*a", count: 253) + "c"
        var yaml = "routes:\n"
        for i in 0..<(PreparedRoutes.maximumCandidates - 1) {
            yaml += "  - {path: \"\(slow)\(i / 10)\(i % 10)\", web: \"https://a.example/\(i)\"}\n"
        }
        yaml += "  - {path: \"/*\", web: \"https://a.example/last\"}\n"
        let s = try site(yaml)
        #expect(ask(s, "/aaaa")?.route == PreparedRoutes.maximumCandidates - 1)
        #expect(s.routeCounts?.cutWalks == 0, "a walk that reached its route is not cut")
        // Against 300 bytes of `a` each try runs all its 507 tokens (a path a client chooses;
        // 5 ms of CPU for the 63 before the budget): the budget stops the walk after a few, and
        // the fallback answers; the same against 16 KB.
        let clock = ContinuousClock()
        for length in [300, 16 * 1024] {
            let path = "/" + String(repeating: "a", count: length)
            let start = clock.now
            let answer = ask(s, path)
            let took = clock.now - start
            #expect(answer?.route == nil, "\(length): \(String(describing: answer?.route))")
            print("route match, 63 routes of 507 tokens against a \(length)-byte path, within maximumWork: \(took)")
        }
        // Each cut walk is counted (/sites' routeWalksCut, aasad_route_walks_cut_total), and a
        // walk says it was cut (`aasad match --config`).
        #expect(s.routeCounts?.cutWalks == 2)
        let walk = Array(("/" + String(repeating: "a", count: 300)).utf8).withUnsafeBytes { s.routes?.walk(path: $0, platform: .web) }
        #expect(walk?.cut == true && walk?.found == nil)
        let short = Array("/aaaa".utf8).withUnsafeBytes { s.routes?.walk(path: $0, platform: .web) }
        #expect(short?.cut == false && short?.found?.route == PreparedRoutes.maximumCandidates - 1)
    }

    @Test("a try charges its work as it goes: with exactly what it needs it matches, with one unit less it stops below zero")
    func workCharged() throws {
        let pattern = try RoutePattern(parsing: "/p/{id}/" + String(repeating: "*a", count: 40) + "*z")
        let path = Array(("/p/42/" + String(repeating: "a", count: 200) + "z").utf8)
        var captures: [Range<Int>] = []
        var unbounded = Int.max
        #expect(path.withUnsafeBytes { pattern.match($0, captures: &captures, work: &unbounded) })
        let needed = Int.max - unbounded
        #expect(needed > ByteGlob.setUpWork)
        var exact = needed
        #expect(path.withUnsafeBytes { pattern.match($0, captures: &captures, work: &exact) } && exact == 0)
        var short = needed - 1
        #expect(!path.withUnsafeBytes { pattern.match($0, captures: &captures, work: &short) } && short < 0)
    }

    /// Flat in the table's size, counted rather than timed (a timing on this shared machine swung
    /// past any fair bound): the routes a path is tried against are those whose literal prefix
    /// it starts with, one at 1,000 routes as at 10.
    @Test("matching tries only the routes whose prefix the path has: one of 1,000 routes with distinct prefixes, as of 10")
    func flat() throws {
        func tried(_ n: Int) throws -> (candidates: [Int], widest: Int) {
            let yaml = "routes:\n" + (0..<n).map { "  - {path: \"/r\($0)/{id}\", web: \"https://a.example/\($0)/{id}\"}\n" }.joined()
            let s = try site(yaml)
            let last = "/r\(n - 1)/abc"
            #expect(ask(s, last)?.route == n - 1)
            let settings = try #require(s.routes?.settings)
            let index = PrefixIndex(settings.map(\.pattern.literalPrefix))
            let candidates = Array(last.utf8).withUnsafeBytes { index.candidates($0) }
            return (candidates, PreparedRoutes.widestCandidates(settings).count)
        }
        let small = try tried(10)
        let large = try tried(1000)
        #expect(small.candidates == [9] && large.candidates == [999], "10: \(small), 1000: \(large)")
        #expect(small.widest == 1 && large.widest == 1)
    }
}

@Suite("previews for crawlers and the interstitial for in-app browsers")
struct LinkPageTests {
    @Test("a crawler gets the preview, never a redirect; capture values are attribute-escaped")
    func preview() throws {
        let s = try site(RouteTableTests.table)
        let hostile = "/p/%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E%0d%0ajavascript:%E2%80%AE"
        let page = try #require(ask(s, hostile, agent: slack))
        #expect(page.status == 200 && page.location == nil && page.type == "text/html; charset=utf-8")
        #expect(!page.body.contains("<script"))
        #expect(!page.body.contains("\u{202E}") && !page.body.contains("\r"))
        #expect(
            page.body.contains(
                "<meta property=\"og:title\" content=\"Product &quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;\u{FFFD}\u{FFFD}javascript:\u{FFFD}\">"
            ))
        #expect(page.body.contains("<link rel=\"canonical\" href=\"https://a.test/p/%22%3E%3Cscript%3E"))
        #expect(page.body.contains("content=\"https://cdn.example/p/%22%3E%3Cscript%3Ealert(1)"))
        // Other clients: unchanged.
        #expect(ask(s, "/p/1", agent: iPhone)?.location == "https://apps.apple.com/app/id1234567890")
        // A route without a preview redirects a crawler as before (no site preview).
        #expect(ask(s, "/invite/x", agent: slack)?.status == 307)
    }

    @Test("preview checks: image https, no control or direction characters, known captures, bounded")
    func previewChecks() {
        #expect(errors("preview:\n  image: http://cdn.example/a.png\n").first?.contains("https") == true)
        #expect(errors("preview:\n  title: \"a\\u202Eb\"\n").first?.contains("U+202E") == true)
        #expect(errors("preview:\n  title: \"a\\nb\"\n").first?.contains("U+000A") == true)
        #expect(errors("preview:\n  title: \"{id}\"\n").first?.contains("not a capture") == true)
        #expect(errors("preview:\n  colour: red\n").first?.contains("unknown key") == true)
        let fits = String(repeating: "t", count: PreviewText.maximumLength)
        #expect(errors("preview:\n  title: \(fits)\n").isEmpty)
        #expect(errors("preview:\n  title: \(fits)t\n").first?.contains("at most 1024") == true)
        #expect(errors("interstitial: maybe\n").first?.contains("true or false") == true)
    }

    @Test("with a site preview, even a web-only fallback's redirect says Vary: User-Agent (a crawler gets the page)")
    func varies() throws {
        let s = try site("fallback:\n  web: https://www.example.com{path}\npreview:\n  title: T\n")
        guard
            case .redirect(let r, _)? = Array("/x".utf8).withUnsafeBytes({
                s.linkAnswer(host: "a.test", path: $0, pathAndQuery: $0, userAgent: nil)?.kind
            })
        else {
            Issue.record("no redirect")
            return
        }
        #expect(r.headers.value(of: "Vary") == "User-Agent")
        #expect(ask(s, "/x", agent: slack)?.body.contains("<meta property=\"og:title\" content=\"T\">") == true)
    }

    @Test("a long capture is cut in the preview's text")
    func longCapture() throws {
        let s = try site(RouteTableTests.table)
        let page = try #require(ask(s, "/p/" + String(repeating: "x", count: 8000), agent: slack))
        #expect(page.body.contains(String(repeating: "x", count: LinkPages.maximumCaptureCharacters) + "…"))
        #expect(!page.body.contains(String(repeating: "x", count: LinkPages.maximumCaptureCharacters + 1) + "…"))
    }

    @Test("an in-app browser gets the interstitial with the same URL and the store; others the redirect")
    func interstitial() throws {
        let s = try site(RouteTableTests.table)
        let page = try #require(ask(s, "/invite/a?x=\"1", agent: instagram))
        #expect(page.status == 200)
        #expect(page.body.contains("<a id=\"open\" href=\"https://a.test/invite/a?x=%221\">Open in the app</a>"))
        #expect(page.body.contains("<a id=\"store\" href=\"https://apps.apple.com/app/id1234567890?ct=invite\">"))
        #expect(ask(s, "/invite/a", agent: iPhone)?.status == 307)
        #expect(ask(s, "/p/1", agent: instagram)?.status == 302, "no interstitial on that route")
    }
}

@Suite("crawlers and in-app browsers: docs/link-agents.tsv")
struct LinkAgentTests {
    /// The data file's rows: (kind, token, source, example).
    static let rows: [[String]] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/link-agents.tsv")
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").dropFirst(2).filter { !$0.hasPrefix("#") }.map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
    }()

    @Test("the code's lists are the file's tokens, each with a source and an example")
    func listsAreTheFile() {
        #expect(Self.rows.count >= 20)
        #expect(Self.rows.allSatisfy { $0.count == 4 && $0[2].hasPrefix("https://") && !$0[3].isEmpty })
        func tokens(_ kind: String) -> [String] {
            var seen: [String] = []
            for row in Self.rows where row[0] == kind && !seen.contains(row[1]) { seen.append(row[1]) }
            return seen
        }
        #expect(tokens("crawler") == LinkAgent.crawlerTokens)
        #expect(tokens("in-app") == LinkAgent.inAppBrowserTokens)
    }

    @Test("each example is read as its kind")
    func examples() {
        for row in Self.rows where row.count == 4 {
            let expected: LinkAgent = row[0] == "crawler" ? .crawler : .inAppBrowser
            let got = Array(row[3].utf8).withUnsafeBytes { LinkAgent.of(userAgent: $0) }
            #expect(got == expected, "\(row[3])")
            #expect(row[3].contains(row[1]))
        }
    }

    @Test(
        "browsers, phones and tools are neither",
        arguments: [
            iPhone, android,
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/130.0.0.0 Safari/537.36 Edg/130.0.0.0",
            "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/130.0.6723.90 Mobile/15E148 Safari/604.1",
            "curl/8.11.0", "AASA-Bot/1.0.0", "",
        ])
    func neither(_ agent: String) {
        #expect(Array(agent.utf8).withUnsafeBytes { LinkAgent.of(userAgent: $0) } == nil)
    }
}
