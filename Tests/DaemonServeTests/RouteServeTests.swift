import DaemonTesting
import Foundation
import TestSupport
import Testing

/// site.yaml routes, previews and interstitials over real curl (HTTP/1.1 and HTTP/2) with real
/// User-Agent strings, on a daemon in this process; the preview page read by Python's
/// html.parser. The decisions themselves: Tests/SiteStoreTests/RouteTests.swift.
@Suite("aasad serve: routes, previews and interstitials")
final class RouteServeTests {
    let config: TestConfig
    static let aasaPath = "/.well-known/apple-app-site-association"
    static let crawlers = [
        "facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)", "Twitterbot/1.0",
        "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)", "WhatsApp/2.23.20.0 A",
        "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)",
        "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_11_1) AppleWebKit/601.2.4 (KHTML, like Gecko) Version/9.0.1 Safari/601.2.4 facebookexternalhit/1.1 Facebot Twitterbot/1.0",
    ]
    static let inApp = [
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 334.0.4.32.98 (iPhone14,5; iOS 17_5; en_US; en; scale=3.00; 1170x2532; 612252013)",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/470.0.0.44.108;FBBV/612259011;FBDV/iPhone14,5;FBMD/iPhone;FBSN/iOS;FBSV/17.5;FBSS/3;FBID/phone;FBLC/en_US;FBOP/5;FBRV/613779047]",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 musical_ly_35.1.0 JsSdk/2.0 NetType/WIFI Channel/App Store ByteLocale/en Region/US",
        "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [LinkedInApp]/9.29.8421",
    ]
    static let appStore = "https://apps.apple.com/app/id1234567890"

    init() throws {
        config = try TestConfig()
        try config.write("config/sites/link.test/apple-app-site-association", config.aasa)
        try config.write(
            "config/sites/link.test/site.yaml",
            Array(
                """
                fallback:
                  web: https://www.example.com{path}
                preview: {site-name: Example}
                routes:
                  - path: /p/{id}
                    web: https://shop.example/products/{id}?{query}
                    ios: \(Self.appStore)
                    android: https://play.google.com/store/apps/details?id=com.example
                    preview: {title: "Product {id}", description: "Open it in the app", image: "https://cdn.example/p/{id}.png"}
                  - path: /invite/*
                    ios: \(Self.appStore)?ct=invite
                    web: https://shop.example/invite
                    status: 307
                    interstitial: true

                """.utf8))
    }

    @Test("each platform gets its route's target; the fallback is last; over HTTP/1.1 and HTTP/2", arguments: ["--http1.1", "--http2"])
    func routes(_ version: String) throws {
        let server = try TestDaemon(config: config)
        for (agent, path, status, location) in [
            (BrowserAgents.desktopChrome, "/p/42?utm=x", 302, "https://shop.example/products/42?utm=x"),
            (BrowserAgents.iPhoneSafari, "/p/42", 302, Self.appStore),
            (BrowserAgents.androidChrome, "/p/42", 302, "https://play.google.com/store/apps/details?id=com.example"),
            (BrowserAgents.desktopChrome, "/invite/a/b", 307, "https://shop.example/invite"),
            (BrowserAgents.iPhoneSafari, "/invite/a", 307, Self.appStore + "?ct=invite"),
            (BrowserAgents.desktopChrome, "/other?q=1", 302, "https://www.example.com/other?q=1"),
            (BrowserAgents.desktopChrome, "/p/%0d%0aSet-Cookie:%20a=b", 302, "https://shop.example/products/%0d%0aSet-Cookie:%20a=b?"),
            (BrowserAgents.desktopChrome, "/p/..", 302, "https://www.example.com/p/.."),
        ] {
            let r = try server.https("link.test", path, [version, "--path-as-is", "-A", agent])
            #expect(r.status == status, "\(path) \(agent)")
            #expect(r.headers["location"] == location, "\(path) \(agent)")
            #expect(r.headers["set-cookie"] == nil)
            #expect(r.version == (version == "--http2" ? "2" : "1.1"))
        }
        // The association file is always the file, whatever the User-Agent.
        for agent in Self.crawlers + Self.inApp + [BrowserAgents.iPhoneSafari] {
            let r = try server.https("link.test", Self.aasaPath, [version, "-A", agent])
            #expect(r.status == 200 && r.body == config.aasa && r.headers["location"] == nil, "\(agent)")
        }
        let sites = String(decoding: try server.admin("/sites").body, as: UTF8.self)
        #expect(sites.contains(#""routes":[{"path":"/p/{id}","answers":4},{"path":"/invite/*","answers":2}]"#), "\(sites)")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"aasad_route_responses_total{route="0"} 4"#), "\(metrics)")
        #expect(metrics.contains(#"aasad_route_responses_total{route="1"} 2"#))
    }

    @Test("match --config names the route each platform's browser takes, or the fallback")
    func match() throws {
        let out = try Tool.run(
            Binary.aasad.path,
            [
                "match", "--config", config.config, "--format", "json", "https://link.test/p/42?utm=x", "https://link.test/invite/a",
                "https://link.test/x",
            ])
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [[String: Any]])
        let product = try #require(reports[0]["browser"] as? [[String: Any]])
        #expect(product.map { $0["route"] as? Int } == [0, 0, 0])
        #expect(product.map { $0["routePath"] as? String } == ["/p/{id}", "/p/{id}", "/p/{id}"])
        #expect(
            product.map { $0["location"] as? String } == [
                "https://shop.example/products/42?utm=x", Self.appStore, "https://play.google.com/store/apps/details?id=com.example",
            ])
        let invite = try #require(reports[1]["browser"] as? [[String: Any]])
        #expect(invite.map { $0["status"] as? Int } == [307, 307, 307])
        #expect(invite.map { $0["route"] as? Int } == [1, 1, 1])
        let other = try #require(reports[2]["browser"] as? [[String: Any]])
        #expect(other.allSatisfy { $0["route"] == nil && $0["status"] as? Int == 302 })
        let text = try Tool.run(Binary.aasad.path, ["match", "--config", config.config, "https://link.test/p/42"]).text
        #expect(text.contains("in a browser on ios: 302 \(Self.appStore) (routes[0]: /p/{id})"), "\(text)")
    }

    @Test("match --config says what serve answers for percent-encoded paths and dot segments, read as sent")
    func matchAgreesWithServe() throws {
        let server = try TestDaemon(config: config)
        let paths = [
            "/p/%2e%2e", "/p/%2E", "/p/a%2Fb", "/p/..", "/p/./x", "/p/%41?x=%20", "/p/caf%C3%A9?a=1&b", "/invite/%2e%2e/x", "/p/a%0d%0ab",
            "/p/", "/p",
        ]
        let out = try Tool.run(
            Binary.aasad.path, ["match", "--config", config.config, "--format", "json"] + paths.map { "https://link.test" + $0 })
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [[String: Any]], "\(out.text)")
        #expect(reports.count == paths.count)
        for (path, report) in zip(paths, reports) {
            let web = try #require((report["browser"] as? [[String: Any]])?.first { $0["platform"] as? String == "web" }, "\(path)")
            let served = try server.https("link.test", path, ["--path-as-is", "-A", BrowserAgents.desktopChrome])
            #expect(web["status"] as? Int == served.status, "\(path)")
            #expect(web["location"] as? String == served.headers["location"], "\(path)")
        }
    }

    /// The tags Python's html.parser finds in a page, one `name=value` line per meta/link tag.
    func tags(_ html: [UInt8]) throws -> [String: String] {
        let script = """
            import sys, html.parser
            class P(html.parser.HTMLParser):
                def handle_starttag(self, tag, attrs):
                    a = dict(attrs)
                    if tag == 'meta' and 'content' in a:
                        print((a.get('property') or a.get('name')) + '\\t' + a['content'].replace('\\n', '\\\\n'))
                    if tag == 'link':
                        print('link:' + a.get('rel', '') + '\\t' + a.get('href', ''))
                    if tag == 'script':
                        print('SCRIPT\\t')
            P().feed(sys.stdin.read())
            """
        let out = try Tool.run("python3", ["-c", script], input: html).text
        var found: [String: String] = [:]
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            found[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return found
    }

    @Test("crawlers get the preview page, never a redirect; hostile captures stay text", arguments: ["--http1.1", "--http2"])
    func previews(_ version: String) throws {
        let server = try TestDaemon(config: config)
        let hostile = "/p/%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E%0d%0a%E2%80%AEjavascript:"
        for agent in Self.crawlers {
            let r = try server.https("link.test", hostile, [version, "-A", agent])
            #expect(r.status == 200 && r.headers["location"] == nil, "\(agent)")
            #expect(r.headers["content-type"] == "text/html; charset=utf-8")
            #expect(r.headers["vary"] == "User-Agent")
            #expect(r.headers["content-security-policy"] == "default-src 'none'; img-src https:")
            let found = try tags(r.body)
            #expect(found["SCRIPT"] == nil)
            #expect(found["og:title"] == "Product \"><script>alert(1)</script>\u{FFFD}\u{FFFD}\u{FFFD}javascript:", "\(found)")
            #expect(found["twitter:title"] == found["og:title"])
            #expect(found["og:description"] == "Open it in the app")
            #expect(found["og:site_name"] == nil, "the route's preview replaces the site's")
            #expect(found["og:image"]?.hasPrefix("https://cdn.example/p/%22%3E%3Cscript%3E") == true)
            #expect(found["twitter:card"] == "summary_large_image")
            #expect(found["link:canonical"] == "https://link.test" + hostile)
            #expect(found["og:url"] == found["link:canonical"])
        }
        // The site's preview on other paths: the fallback's crawler gets it.
        let r = try server.https("link.test", "/other", [version, "-A", Self.crawlers[1]])
        #expect(r.status == 200)
        let found = try tags(r.body)
        #expect(found["og:site_name"] == "Example" && found["twitter:card"] == "summary")
        // A phone and a desktop are unchanged.
        #expect(try server.https("link.test", hostile, [version, "-A", BrowserAgents.iPhoneSafari]).status == 302)
        #expect(try server.https("link.test", "/other", [version, "-A", BrowserAgents.desktopChrome]).status == 302)
    }

    @Test("in-app browsers get the interstitial on that route; others the redirect", arguments: ["--http1.1", "--http2"])
    func interstitial(_ version: String) throws {
        let server = try TestDaemon(config: config)
        for agent in Self.inApp {
            let r = try server.https("link.test", "/invite/abc?src=ig", [version, "-A", agent])
            #expect(r.status == 200, "\(agent)")
            let body = String(decoding: r.body, as: UTF8.self)
            #expect(body.contains("<a id=\"open\" href=\"https://link.test/invite/abc?src=ig\">Open in the app</a>"), "\(body)")
            #expect(body.contains("<a id=\"store\" href=\"\(Self.appStore)?ct=invite\">"), "\(body)")
            // No interstitial where the route does not ask for one.
            #expect(try server.https("link.test", "/p/1", [version, "-A", agent]).status == 302)
        }
        #expect(try server.https("link.test", "/invite/abc", [version, "-A", BrowserAgents.iPhoneSafari]).status == 307)
        #expect(try server.https("link.test", "/invite/abc", [version, "-A", BrowserAgents.desktopChrome]).status == 307)
    }

    @Test("a route walk cut by the work budget is counted (/sites, /metrics) and match --config says so")
    func walkCut() throws {
        // 63 routes of 507 tokens that never match a path of `a`s: 300 of them spend the budget
        // (PreparedRoutes.maximumWork) after a few tries, and the fallback answers.
        let slow = "/" + String(repeating: "*a", count: 253) + "c"
        var yaml = "fallback:\n  web: https://www.example.com/\nroutes:\n"
        for i in 0..<63 { yaml += "  - {path: \"\(slow)\(i / 10)\(i % 10)\", web: \"https://a.example/\(i)\"}\n" }
        try config.write("config/sites/slow.test/apple-app-site-association", config.aasa)
        try config.write("config/sites/slow.test/site.yaml", Array(yaml.utf8))
        let server = try TestDaemon(config: config)
        let long = "/" + String(repeating: "a", count: 300)
        #expect(try server.https("slow.test", "/aaaa").status == 302)
        let sites = { String(decoding: try server.admin("/sites").body, as: UTF8.self) }
        #expect(try sites().contains(#""routeWalksCut":0"#))
        for _ in 0..<2 {
            let r = try server.https("slow.test", long)
            #expect(r.status == 302 && r.headers["location"] == "https://www.example.com/")
        }
        let page = try sites()
        #expect(page.contains(#""routeWalksCut":2"#), "\(page)")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains("aasad_route_walks_cut_total 2"), "\(metrics)")
        let out = try Tool.run(
            Binary.aasad.path,
            ["match", "--config", config.config, "--format", "json", "https://slow.test" + long, "https://slow.test/aaaa"])
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [[String: Any]], "\(out.text)")
        let browser = try #require(reports.first?["browser"] as? [[String: Any]])
        #expect(browser.map { $0["routeWalkCut"] as? Bool } == [true, true, true], "\(browser)")
        let short = try #require(reports.last?["browser"] as? [[String: Any]])
        #expect(short.allSatisfy { $0["routeWalkCut"] == nil && $0["route"] == nil && $0["status"] as? Int == 302 }, "\(short)")
        let text = try Tool.run(Binary.aasad.path, ["match", "--config", config.config, "https://slow.test" + long]).text
        #expect(text.contains("(fallback); the route walk was cut by the work budget"), "\(text)")
    }
}
