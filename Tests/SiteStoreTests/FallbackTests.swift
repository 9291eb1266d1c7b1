import AASA
import Foundation
import HTTPCore
import Logging
import Testing

@testable import SiteStore

private let aasa = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#

private func parse(_ yaml: String) -> (SiteSettings, [ConfigProblem]) {
    SiteSettings.parse(yaml, file: "sites/a.test/site.yaml")
}

private func errors(_ yaml: String) -> [String] {
    parse(yaml).1.filter { $0.severity == .error }.map(\.message)
}

private func render(_ template: String, _ path: String) throws -> String {
    let target = try RedirectTemplate(parsing: template)
    return String(decoding: Array(path.utf8).withUnsafeBytes { target.render(pathAndQuery: $0) }, as: UTF8.self)
}

@Suite("site.yaml fallback and page")
struct FallbackSettingsTests {
    @Test("a full fallback parses, with the status and the redirects' Cache-Control")
    func parsesFallback() throws {
        let (settings, problems) = parse(
            """
            fallback:
              web: https://www.example.com{path}
              ios: https://apps.apple.com/app/id1234567890
              android: https://play.google.com/store/apps/details?id=com.example
              status: 307
            fallback-cache-control: max-age=60
            """)
        #expect(problems.isEmpty, "\(problems)")
        let fallback = try #require(settings.fallback)
        #expect(fallback.web?.text == "https://www.example.com{path}")
        #expect(fallback.web?.isFixed == false)
        #expect(fallback.ios?.isFixed == true)
        #expect(fallback.status == .temporaryRedirect)
        #expect(fallback.cacheControl == "max-age=60")
        #expect(fallback.target(for: .android)?.text == "https://play.google.com/store/apps/details?id=com.example")
    }

    @Test("the default status is 302 and the default Cache-Control no-store")
    func defaults() throws {
        let fallback = try #require(parse("fallback:\n  web: https://www.example.com{path}\n").0.fallback)
        #expect(fallback.status == .found)
        #expect(fallback.cacheControl == nil)
        let prepared = try #require(PreparedFallback.prepare(fallback, hasPage: false))
        guard case .redirect(let redirect) = prepared.answer(for: .ios) else {
            Issue.record("no redirect for ios")
            return
        }
        #expect(redirect.headers.value(of: "Cache-Control") == "no-store")
        #expect(redirect.headers.value(of: "Location") == nil, "a {path} target is built per request")
        #expect(redirect.headers.value(of: "Vary") == nil, "one target for every platform does not vary")
        #expect(!prepared.variesByUserAgent)
    }

    @Test(
        "a target that is not a fixed-host absolute https URL is refused",
        arguments: [
            "http://www.example.com{path}", "www.example.com{path}", "//www.example.com{path}", "https://{path}",
            "https:///x", "https://user@www.example.com/", "https://www.example.com:0/", "https://www.example.com:70000/",
            "https://www.example.com:x/", "https://*.example.com/", "https://www.exa mple.com/", "https://www.example.com/a b",
            "https://www.example.com\\@evil.example/", "https://www.example.com/{path}{path}", "https://www.example.com/{pat}",
            "https://www.example.com/\"x\"", "https://www.example.com/<script>", "https://bücher.example/",
            "https://www.example.com/é", "javascript:alert(1)", "",
        ])
    func refusesTargets(_ target: String) {
        let found = errors("fallback:\n  web: \(JSONValue.quote(target))\n")
        #expect(found.count == 1 && found[0].hasPrefix("fallback.web"), "\(target): \(found)")
    }

    @Test("CR, LF and NUL in a target (YAML escapes) are refused and shown escaped", arguments: ["\\r\\n", "\\n", "\\r", "\\0", "\\t"])
    func refusesControls(_ escape: String) {
        let found = errors("fallback:\n  web: \"https://www.example.com/x\(escape)Set-Cookie: a=b\"\n")
        #expect(found.count == 1, "\(found)")
        #expect(found.allSatisfy { !$0.contains("\r") && !$0.contains("\n") && !$0.contains("\0") }, "\(found)")
    }

    @Test("a status other than 301, 302, 307 and 308 is refused", arguments: ["200", "303", "304", "300", "399", "x", "302.0", ""])
    func refusesStatus(_ status: String) {
        let found = errors("fallback:\n  web: https://www.example.com/\n  status: \(status.isEmpty ? "\"\"" : status)\n")
        #expect(found.count == 1 && found[0].contains("301, 302, 307, 308"), "\(found)")
    }

    @Test("fallback must be a mapping with at least one target and known keys")
    func shape() {
        #expect(errors("fallback: {}\n").first?.contains("names no target") == true)
        #expect(errors("fallback:\n  web: https://www.example.com:+443/\n").count == 1)
        #expect(errors("fallback:\n  web: https://www.example.com:8443/\n").isEmpty)
        #expect(errors("fallback:\n  web: https://www.example.com/\n  status: +301\n").count == 1)
        #expect(errors("fallback: https://www.example.com/\n").first?.contains("must be a mapping") == true)
        #expect(errors("fallback:\n  status: 301\n").first?.contains("names no target") == true)
        #expect(
            errors("fallback:\n  web: https://www.example.com/\n  desktop: https://x.example/\n").first?.contains("fallback knows") == true)
        #expect(errors("fallback:\n  web: [https://www.example.com/]\n").count == 1)
    }

    @Test("page and fallback.web both answering every path is refused; page with ios and android is not")
    func pageAndWeb() {
        #expect(errors("page: landing.html\nfallback:\n  web: https://www.example.com/\n").first?.contains("keep one") == true)
        let (settings, problems) = parse("page: landing.html\nfallback:\n  ios: https://apps.apple.com/app/id1\n")
        #expect(problems.isEmpty, "\(problems)")
        #expect(settings.page == "landing.html")
    }

    @Test(
        "a page name that is not a plain file of the site directory is refused",
        arguments: [
            "../landing.html", "/etc/passwd", "a/b.html", ".hidden.html", "..", ".", "", "site.yaml", "tls",
            "apple-app-site-association", "assetlinks.json", "land ing.html", "landing.html\r\n",
        ])
    func refusesPageNames(_ name: String) {
        let found = errors("page: \(JSONValue.quote(name))\n")
        #expect(found.count == 1 && found[0].hasPrefix("page"), "\(name): \(found)")
    }

    @Test("fallback with neither web nor a page warns that other browsers get 404; unused fallback-cache-control warns")
    func warnings() {
        let (_, problems) = parse("fallback:\n  ios: https://apps.apple.com/app/id1\n")
        #expect(problems.map(\.severity) == [.warning])
        #expect(problems.first?.message.contains("desktop, Android") == true)
        let (_, unused) = parse("fallback-cache-control: max-age=60\n")
        #expect(unused.map(\.severity) == [.warning])
        #expect(errors("fallback-cache-control: \"max-age=60\\r\\nX: y\"\nfallback:\n  web: https://www.example.com/\n").count == 1)
    }
}

@Suite("Redirect targets: {path} as sent, the host fixed")
struct RedirectTemplateTests {
    @Test("a target is at most 2048 bytes; a page name at most 255")
    func bounds() {
        let base = "https://www.example.com/"
        let fits = base + String(repeating: "a", count: RedirectTemplate.maximumLength - base.utf8.count)
        #expect((try? RedirectTemplate(parsing: fits)) != nil)
        #expect((try? RedirectTemplate(parsing: fits + "a")) == nil)
        #expect(SiteSettings.pageNameProblem(String(repeating: "p", count: 255)) == nil)
        #expect(SiteSettings.pageNameProblem(String(repeating: "p", count: 256)) != nil)
    }

    @Test("the path and query are inserted as sent, escapes never decoded")
    func insertsAsSent() throws {
        #expect(try render("https://www.example.com{path}", "/buy/42?src=mail&x=1") == "https://www.example.com/buy/42?src=mail&x=1")
        #expect(try render("https://www.example.com/app{path}#top", "/a%2Fb") == "https://www.example.com/app/a%2Fb#top")
        #expect(try render("https://www.example.com{path}", "/x%0d%0aSet-Cookie:a") == "https://www.example.com/x%0d%0aSet-Cookie:a")
        #expect(try render("https://apps.apple.com/app/id1", "/anything") == "https://apps.apple.com/app/id1")
    }

    @Test(
        "hostile paths never move the host or split the head",
        arguments: [
            ("//evil.example/x", "https://www.example.com//evil.example/x"),
            ("/\\evil.example", "https://www.example.com/%5Cevil.example"),
            ("/x\r\nSet-Cookie: a=b", "https://www.example.com/x%0D%0ASet-Cookie:%20a=b"),
            ("@evil.example", "https://www.example.com/@evil.example"),
            ("/x#frag", "https://www.example.com/x%23frag"),
            ("/é", "https://www.example.com/%C3%A9"),
            ("*", "https://www.example.com/*"),
            ("", "https://www.example.com/"),
        ])
    func hostile(_ path: String, _ expected: String) throws {
        let location = try render("https://www.example.com{path}", path)
        #expect(location == expected)
        #expect(URL(string: location)?.host == "www.example.com", "\(location)")
        #expect(HTTPField.valueProblem(location.utf8) == nil)
    }
}

@Suite("Site registry: fallback and page reloads")
struct FallbackRegistryTests {
    @Test("the page is served as HTML with the site's Cache-Control; an empty or oversized page keeps the last good one")
    func pageLastGood() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\ncache-control: max-age=30\n")
        try c.write("sites/a.test/landing.html", "<p>v1</p>")
        let r = c.registry()
        let site = try #require(r.reloadAll().site(forHost: "a.test"))
        let page = try #require(site.page)
        #expect(page.headers.value(of: "Content-Type") == "text/html; charset=utf-8")
        #expect(page.headers.value(of: "Cache-Control") == "max-age=30")
        #expect(r.statuses.first?.state == .serving)
        for bad in ["", String(repeating: "x", count: LandingPage.maximumFileSize + 1)] {
            try c.write("sites/a.test/landing.html", bad)
            let kept = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.page)
            #expect(kept.body == Array("<p>v1</p>".utf8))
            #expect(r.statuses.first?.state == .servingLastGood)
        }
        try c.write("sites/a.test/landing.html", Data([0x3C, 0xFF, 0x3E]))
        #expect(r.reload(["a.test"]).site(forHost: "a.test")?.page?.body == Array("<p>v1</p>".utf8), "not UTF-8")
        try c.write("sites/a.test/landing.html", "<p>v2</p>")
        let v2 = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.page)
        #expect(v2.body == Array("<p>v2</p>".utf8))
        #expect(v2.lastModified > page.lastModified)
        // Deleted: gone, and reported.
        try c.remove("sites/a.test/landing.html")
        #expect(r.reload(["a.test"]).site(forHost: "a.test")?.page == nil)
        #expect(r.statuses.first?.errors.contains { $0.contains("landing.html") && $0.contains("missing") } == true)
    }

    @Test("an invalid fallback keeps the last good settings; a valid change applies; counts survive reloads")
    func fallbackLastGood() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "fallback:\n  web: https://one.example{path}\n")
        let r = c.registry()
        let first = try #require(r.reloadAll().site(forHost: "a.test"))
        #expect(first.fallbackSettings?.web?.text == "https://one.example{path}")
        first.fallbackCounts?.add(.ios)
        try c.write("sites/a.test/site.yaml", "fallback:\n  web: http://two.example{path}\n")
        let kept = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(kept.fallbackSettings?.web?.text == "https://one.example{path}")
        #expect(r.statuses.first?.state == .servingLastGood)
        try c.write("sites/a.test/site.yaml", "fallback:\n  web: https://two.example{path}\n  android: https://play.example/x\n")
        let changed = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(changed.fallbackSettings?.web?.text == "https://two.example{path}")
        #expect(changed.fallback?.variesByUserAgent == true)
        #expect(changed.fallbackCounts?.value(.ios) == 1, "counts are the site's, not the version's")
        // Removed from site.yaml: other paths are 404 again.
        try c.write("sites/a.test/site.yaml", "cache-control: max-age=1\n")
        #expect(r.reload(["a.test"]).site(forHost: "a.test")?.fallback == nil)
    }

    @Test("a page that leads out of its site directory (a symlink to a key, to /proc) is never served")
    func pageSymlinkEscape() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/tls/key.pem", "-----BEGIN PRIVATE KEY-----\nsecret\n")
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        let r = c.registry()
        for target in [c.root + "/sites/b.test/tls/key.pem", "../b.test/tls/key.pem", "/proc/self/environ", "/etc/passwd"] {
            try? c.remove("sites/a.test/landing.html")
            try c.link("sites/a.test/landing.html", to: target)
            let site = try #require(r.reloadAll().site(forHost: "a.test"))
            #expect(site.page == nil, "\(target) was served")
            #expect(r.statuses.first?.errors.contains { $0.contains("outside the site's directory") } == true, "\(target)")
        }
        // A symlink within the directory (a ConfigMap's ..data layout) is fine.
        try c.remove("sites/a.test/landing.html")
        try c.write("sites/a.test/..data/landing.html", "<p>ok</p>")
        try c.link("sites/a.test/landing.html", to: "..data/landing.html")
        #expect(r.reloadAll().site(forHost: "a.test")?.page?.body == Array("<p>ok</p>".utf8))
    }

    @Test("a page kept as the last good version takes the options in force: Vary when a redirect is added meanwhile")
    func keptPageRebuilt() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        try c.write("sites/a.test/landing.html", "<p>v1</p>")
        let r = c.registry()
        #expect(r.reloadAll().site(forHost: "a.test")?.page?.headers.value(of: "Vary") == nil)
        try c.write("sites/a.test/landing.html", "")
        try c.write(
            "sites/a.test/site.yaml", "page: landing.html\ncache-control: max-age=7\nfallback:\n  ios: https://apps.apple.com/app/id1\n")
        let page = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.page)
        #expect(page.body == Array("<p>v1</p>".utf8), "the last good page")
        #expect(page.headers.value(of: "Vary") == "User-Agent")
        #expect(page.headers.value(of: "Cache-Control") == "max-age=7")
        #expect(r.distinctContents == 2, "one content each for the AASA file and the page")
    }

    @Test("a page beside platform redirects says Vary: User-Agent; the page's file is not reported as unknown")
    func pageVaries() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\nfallback:\n  ios: https://apps.apple.com/app/id1\n")
        try c.write("sites/a.test/landing.html", String(repeating: "<p>banner</p>", count: 100))
        let r = c.registry()
        let site = try #require(r.reloadAll().site(forHost: "a.test"))
        #expect(site.page?.headers.value(of: "Vary") == "Accept-Encoding, User-Agent")
        let fallback = try #require(site.fallback)
        guard case .page = fallback.answer(for: .web), case .page = fallback.answer(for: .android),
            case .redirect(let redirect) = fallback.answer(for: .ios)
        else {
            Issue.record("web and android get the page, ios the store")
            return
        }
        #expect(redirect.headers.value(of: "Location") == "https://apps.apple.com/app/id1")
        #expect(redirect.headers.value(of: "Vary") == "User-Agent")
        #expect(r.statuses.first?.errors == [])
        let scan = ConfigLoader.scan(directory: c.root)
        #expect(scan.sites.first?.problems.isEmpty == true, "\(scan.sites.first?.problems ?? [])")
    }
}

extension TempConfig {
    fileprivate func write(_ relative: String, _ data: Data) throws {
        try data.write(to: URL(fileURLWithPath: root + "/" + relative))
    }
}
