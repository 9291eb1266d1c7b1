import AASA
import Foundation
import Testing

@testable import Served
@testable import SiteStore

/// `ServedSite.browserAnswers`: what `aasad match --config` reports a browser of each platform
/// gets, from a site as the registry loads it.
@Suite("What a browser gets for a URL, per platform")
struct BrowserAnswerTests {
    static let yaml = """
        fallback:
          web: https://www.example.com/open{path}
        routes:
          - path: /p/{id}
            ios: https://apps.apple.com/app/id{id}
          - path: /help
            page: help.html
        """

    /// The site `a.test` loaded from `yaml` (with an AASA file and the page), as served.
    func site(_ yaml: String?) throws -> ServedSite {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", TempConfig.aasa)
        try c.write("sites/a.test/help.html", "<p>help</p>")
        if let yaml { try c.write("sites/a.test/site.yaml", yaml) }
        let registry = c.registry()
        registry.reloadAll()
        #expect(registry.statuses.first?.errors == [], "\(registry.statuses)")
        return try #require(registry.snapshot.sites["a.test"])
    }

    func answers(_ site: ServedSite, _ url: String) throws -> [BrowserAnswer] {
        try #require(site.browserAnswers(try LinkURL(parsing: url)))
    }

    @Test("a route, the route's page, the fallback per platform, and 404 where nothing answers")
    func perPlatform() throws {
        let s = try site(Self.yaml)
        let product = try answers(s, "https://a.test/p/42?ref=x#frag")
        #expect(product.map(\.platform) == ["web", "ios", "android"])
        #expect(product[1].location == "https://apps.apple.com/app/id42" && product[1].route == 0 && product[1].routePath == "/p/{id}")
        // No route target for the web or Android: the fallback answers, and no route is named.
        var fallback = BrowserAnswer(platform: "web", status: 302)
        fallback.location = "https://www.example.com/open/p/42?ref=x"
        #expect(product[0] == fallback)
        fallback.platform = "android"
        #expect(product[2] == fallback)
        let help = try answers(s, "https://a.test/help")
        #expect(help.map(\.pageFile) == ["help.html", "help.html", "help.html"])
        #expect(help.allSatisfy { $0.status == 200 && $0.page == true && $0.route == 1 })
        // An empty path is asked as "/", the query carried over, the fragment never sent.
        let root = try answers(s, "https://a.test?x=%0d%0a#f")
        #expect(root[0].status == 302 && root[0].location == "https://www.example.com/open/?x=%0d%0a", "\(root[0])")
    }

    @Test("the association files are never routed; a site without routes, fallback or page has no browser answers")
    func notRouted() throws {
        let s = try site(Self.yaml)
        #expect(
            try answers(s, "https://a.test/.well-known/apple-app-site-association").allSatisfy { $0.status == 404 && $0.location == nil })
        #expect(try site(nil).browserAnswers(try LinkURL(parsing: "https://a.test/p/1")) == nil)
    }

    @Test("a walk the work budget cut says so, and the fallback answers")
    func walkCut() throws {
        let slow = "/" + String(repeating: "*a", count: 253) + "c"
        var yaml = "fallback:\n  web: https://www.example.com/\nroutes:\n"
        for i in 0..<PreparedRoutes.maximumCandidates {
            yaml += "  - {path: \"\(slow)\(i / 10)\(i % 10)\", web: \"https://a.example/\(i)\"}\n"
        }
        let s = try site(yaml)
        let cut = try answers(s, "https://a.test/" + String(repeating: "a", count: 300))
        #expect(cut.map(\.routeWalkCut) == [true, true, true])
        #expect(cut[0].status == 302 && cut[0].route == nil)
        #expect(try answers(s, "https://a.test/aaaa").allSatisfy { $0.routeWalkCut == nil })
    }
}
