import Daemon
import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The admin listener's status page (`/`) as a person sees it: headless Chromium loads it from
/// a daemon in this process (the admin listener is on 127.0.0.1, where the browser runs too),
/// over a config with good and broken sites. TestConfig has a.test (good, with the alias
/// symlink www.a.test), *.w.test, own.test (its own certificate) and bad.test (an invalid file:
/// not served).
@Suite("Status page: what a browser shows of good, broken and hostile sites", .serialized)
final class StatusPageBrowserTests {
    let config: TestConfig

    /// Where the screenshots are kept for review: .build/status-page/ in the package.
    static let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent(".build/status-page")

    init() throws {
        config = try TestConfig()
    }

    /// The text a person reads in each row of a table section (`problems` or `sites`), in page
    /// order: tags dropped, character references read back.
    static func rows(_ dom: String, section: String) -> [String] {
        guard let start = dom.range(of: "<section id=\"\(section)\">"),
            let end = dom.range(of: "</section>", range: start.upperBound..<dom.endIndex)
        else { return [] }
        let part = String(dom[start.upperBound..<end.lowerBound])
        return part.components(separatedBy: "<tr class=\"").dropFirst().map { row in
            // After the class attribute's end: the cells.
            let cells = row.components(separatedBy: "</tr>")[0].drop { $0 != ">" }.dropFirst()
            return text(String(cells))
        }
    }

    /// Markup as text: tags removed (a `<br>` or cell end as a space), references decoded.
    static func text(_ markup: String) -> String {
        var out = ""
        var inTag = false
        for c in markup {
            if c == "<" {
                inTag = true
                out += " "
            } else if c == ">" {
                inTag = false
            } else if !inTag {
                out.append(c)
            }
        }
        for (reference, character) in [("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&amp;", "&")] {
            out = out.replacingOccurrences(of: reference, with: character)
        }
        return out.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
    }

    @Test("hostile values (markup, quotes, an RTL override) in names, errors and the query render as text: no element added, no script run")
    func hostileValuesAreText() throws {
        try #require(Chromium.isInstalled, "Debian's chromium is needed (scripts/test installs it)")
        // A site.yaml whose aliases are markup: refused, each quoted in the site's errors.
        let injected = #"<img src=x id=injected onerror="document.title='pwned'">"#
        let script = "<script>document.title='pwned'</script>"
        try config.write("config/sites/hostile.test/apple-app-site-association", config.aasa)
        try config.write(
            "config/sites/hostile.test/site.yaml",
            Array(
                "aliases: ['\(injected.replacingOccurrences(of: "'", with: "''"))', '\(script.replacingOccurrences(of: "'", with: "''"))', \"evil\u{202E}moc.test\"]\n"
                    .utf8))
        // An AASA file whose app identifier is markup: refused with the value quoted.
        try config.write(
            "config/sites/hostile2.test/apple-app-site-association",
            Array(#"{"applinks":{"apps":[],"details":[{"appIDs":["\#(script)\"'\#u{202E}"],"components":[{"/":"/*"}]}]}}"#.utf8))
        let server = try TestDaemon(config: config)
        let base = "http://127.0.0.1:\(server.adminPort)"
        // What the daemon says of them, to know the page has the values to escape.
        let sites = String(decoding: try server.admin("/sites").body, as: UTF8.self)
        #expect(sites.contains("<img src=x id=injected"), "\(sites)")
        #expect(sites.contains("<script>document.title="), "\(sites)")

        let hostileQuery = "\"><script>document.title='pwned'</script><b id=injected>\u{202E}"
        let urls = [
            base + "/", base + "/?site=hostile.test", base + "/?site=hostile2.test",
            base + "/?q=" + (hostileQuery.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""),
        ]
        // Each chromium run is about a CPU second: a page loaded here is read again below, not loaded again.
        var doms: [String: String] = [:]
        for url in urls {
            let dom = try Chromium.dumpDOM(url)
            doms[url] = dom
            // The page loaded (its own title), no script the values carry ran, no element they
            // carry exists.
            #expect(dom.contains("<title>aasad"), "\(url): \(dom.prefix(500))")
            #expect(!dom.contains("pwned</title>") && !dom.contains("<title>pwned"), "\(url): a value's script ran")
            #expect(!dom.contains("id=\"injected\""), "\(url): a value became an element")
            #expect(dom.components(separatedBy: "<script").count == 2, "\(url): one script, the page's own")
            // The RTL override shows as the escape, never as the character that reorders text;
            // only the search field holds it, as the query typed (it reorders the field's text
            // alone).
            #expect(!Self.withoutSearchValue(dom).contains("\u{202E}"), "\(url): a bidirectional override reached the page")
        }
        // And the values are there, as text a person reads.
        let hostile = try #require(doms[base + "/?site=hostile.test"])
        #expect(Self.text(hostile).contains(#"<img src=x id=injected onerror="document.title='pwned'">"#), "\(hostile)")
        #expect(Self.text(hostile).contains(#"evil\u{202E}moc.test"#), "\(hostile)")
        let searched = try #require(doms[urls[3]])
        // The search field holds the query as typed: its value is the raw query, escaped once
        // for the attribute, so a search sent again is the same search.
        #expect(Self.searchValue(searched) == hostileQuery, "\(Self.searchValue(searched) ?? "no field")")
        for typed in ["<script>", "&amp;", "a&b<c>\"d'e"] {
            let dom = try Chromium.dumpDOM(base + "/?q=" + (typed.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
            #expect(Self.searchValue(dom) == typed, "\(typed): \(Self.searchValue(dom) ?? "no field")")
        }
    }

    /// The search field's value attribute as the browser serialized it, references read back.
    static func searchValue(_ dom: String) -> String? {
        guard let field = dom.range(of: #"name="q" placeholder="host contains" value=""#) else { return nil }
        return unreference(String(dom[field.upperBound...].prefix { $0 != "\"" }))
    }

    /// The DOM with the search field's value left out.
    static func withoutSearchValue(_ dom: String) -> String {
        guard let field = dom.range(of: #"name="q" placeholder="host contains" value=""#) else { return dom }
        let rest = dom[field.upperBound...].drop { $0 != "\"" }
        return String(dom[..<field.upperBound]) + rest
    }

    /// Character references read back (the serializer writes `&amp;` `&quot;` `&lt;` `&gt;`
    /// `&nbsp;` in attributes), `&amp;` last so that `&amp;lt;` stays `&lt;`.
    static func unreference(_ text: String) -> String {
        var out = text
        for (reference, character) in [
            ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&#39;", "'"), ("&nbsp;", "\u{A0}"), ("&amp;", "&"),
        ] {
            out = out.replacingOccurrences(of: reference, with: character)
        }
        return out
    }

    @Test("broken sites are listed first, worst first, each with its reason; then every site, paged; a screenshot is kept")
    func brokenFirst() throws {
        try #require(Chromium.isInstalled, "Debian's chromium is needed (scripts/test installs it)")
        // A site whose file is refused after a good version: the good one goes on being served.
        try config.write("config/sites/lastgood.test/apple-app-site-association", config.aasa)
        // A site claiming a name under another site's wildcard: refused by the ownership rule.
        try config.write("config/sites/evil.test/apple-app-site-association", config.ownAASA)
        try config.write("config/sites/evil.test/site.yaml", Array("aliases: [x.w.test]\n".utf8))
        // Enough good sites for a second page of the site list.
        for k in 0..<120 { try config.write("config/sites/site\(1000 + k).test/apple-app-site-association", config.aasa) }
        let server = try TestDaemon(config: config)
        let generation = server.daemon.reloadGeneration
        try config.write("config/sites/lastgood.test/apple-app-site-association", Array(#"{"applinks": []}"#.utf8))
        #expect(server.waitForReload(after: generation))
        let base = "http://127.0.0.1:\(server.adminPort)"

        var problems: [String] = []
        // The page that lists them is read for the rest too (each chromium run is about a CPU
        // second): built after the last change, it is the one any later load gets.
        var dom = ""
        let listed = try eventually(attempts: 50) {
            dom = try Chromium.dumpDOM(base + "/")
            problems = Self.rows(dom, section: "problems")
            return problems.count == 3 && problems[1].contains("lastgood.test")
        }
        #expect(listed, "\(problems)")
        // Worst first: not served at all, then a refused file (last good served), then a name
        // the ownership rule refused; each with its reason and the error or rule behind it.
        #expect(problems.count == 3)
        if problems.count == 3 {
            #expect(problems[0].hasPrefix("bad.test not served: no valid file"), "\(problems[0])")
            #expect(problems[0].contains("sites/bad.test/apple-app-site-association"), "\(problems[0])")
            #expect(problems[1].hasPrefix("lastgood.test file refused, last good version served"), "\(problems[1])")
            #expect(problems[1].contains("serving the version loaded"), "\(problems[1])")
            #expect(problems[2].hasPrefix("evil.test names refused (ownership rule)"), "\(problems[2])")
            #expect(problems[2].contains("x.w.test: it lies under *.w.test"), "\(problems[2])")
        }
        // Then every site in name order, a page of StatusPages' 100 rows, the rest after `next`.
        let sites = Self.rows(dom, section: "sites")
        let total = try #require(dom.range(of: "All sites (").map { Int(dom[$0.upperBound...].prefix { $0 != ")" }) ?? 0 })
        #expect(sites.count == 100)
        #expect(sites.first?.hasPrefix("*.w.test") == true, "\(sites.first ?? "")")
        #expect(sites.contains { $0.hasPrefix("a.test a.test www.a.test serving") }, "\(sites.prefix(5))")
        // Per site: the files served (ETag, size), the certificate with its issuer and end.
        let a = sites.first { $0.hasPrefix("a.test ") } ?? ""
        #expect(a.contains("apple-app-site-association \"") && a.contains(", \(config.aasa.count) bytes"), "\(a)")
        #expect(a.contains("assetlinks.json \"") && a.contains(", \(config.assetLinks.count) bytes"), "\(a)")
        let own = sites.first { $0.hasPrefix("own.test ") } ?? ""
        #expect(own.contains("the site's own (tls/), issuer /") && own.contains("not after 20"), "\(own)")
        let next = try #require(dom.range(of: "id=\"next\" href=\"").map { dom[$0.upperBound...].prefix { $0 != "\"" } })
        let second = Self.rows(try Chromium.dumpDOM(base + Self.text(String(next))), section: "sites")
        #expect(total > 100 && second.count == total - 100, "\(total) \(second)")
        #expect(second.last?.hasPrefix("www") == false)
        // A search: substring of a host.
        let found = Self.rows(try Chromium.dumpDOM(base + "/?q=www.a"), section: "sites")
        #expect(found.count == 1 && found[0].hasPrefix("a.test"), "\(found)")

        try FileManager.default.createDirectory(at: Self.artifacts, withIntermediateDirectories: true)
        let shot = Self.artifacts.appendingPathComponent("overview.png").path
        try Chromium.screenshot(base + "/", to: shot, width: 1280, height: 900)
        let size = (try FileManager.default.attributesOfItem(atPath: shot)[.size] as? Int) ?? 0
        #expect(size > 10_000, "a blank screenshot is a few hundred bytes")
    }

    @Test("the page's answer: HTML with a Content-Security-Policy by hash, no-store, nosniff; 400 for a bad query, 404 for no such site")
    func headers() throws {
        let server = try TestDaemon(config: config)
        let page = try server.admin("/")
        #expect(page.status == 200)
        #expect(page.headers["content-type"] == "text/html; charset=utf-8")
        #expect(page.headers["cache-control"] == "no-store")
        #expect(page.headers["x-content-type-options"] == "nosniff")
        let policy = page.headers["content-security-policy"] ?? ""
        #expect(policy.hasPrefix("default-src 'none'; style-src 'sha256-"), "\(policy)")
        #expect(policy.contains("script-src 'sha256-") && !policy.contains("unsafe-inline"), "\(policy)")
        #expect(try server.admin("/?q=%zz").status == 400)
        #expect(try server.admin("/?q=" + String(repeating: "a", count: 1024)).status == 200)
        #expect(try server.admin("/?q=" + String(repeating: "a", count: 1025)).status == 400)
        #expect(try server.admin("/?site=nothing.test").status == 404)
        #expect(try server.admin("/?site=a.test").status == 200)
    }

    @Test(
        "the admin listener answers /metrics, /sites, probes and the status page while an index is being built; the page shows the previous one, whole, then the new"
    )
    func answersWhileIndexing() throws {
        let server = try TestDaemon(config: config)
        let pages = try #require(server.daemon.statusPages)
        #expect(try server.admin("/").status == 200)
        // The first page waits for the first index a little; a loaded machine may take longer.
        #expect(try eventually { pages.builds == 1 })
        let gate = Gate()
        pages.holdBuilds { gate.hold() }
        defer {
            pages.holdBuilds(nil)
            gate.release()
        }
        let generation = server.daemon.reloadGeneration
        try config.write("config/sites/fresh.test/apple-app-site-association", config.aasa)
        #expect(server.waitForReload(after: generation))
        // The page asks for a new index and answers with the old one, saying so.
        let stale = String(decoding: try server.admin("/").body, as: UTF8.self)
        #expect(stale.contains("a newer index is being built") && !stale.contains(">fresh.test<"), "\(stale.prefix(800))")
        #expect(gate.waitHeld(), "no build started")
        // Built and held on the index's queue: the admin thread answers everything meanwhile.
        #expect(try server.admin("/healthz").status == 200)
        #expect(try server.admin("/readyz").status == 200)
        let metrics = try server.admin("/metrics")
        #expect(metrics.status == 200 && String(decoding: metrics.body, as: UTF8.self).contains("aasad_"))
        let sites = try server.admin("/sites")
        #expect(sites.status == 200 && String(decoding: sites.body, as: UTF8.self).contains("fresh.test"))
        #expect(try server.admin("/?site=fresh.test").status == 200, "a site's page reads the current view")
        let held = String(decoding: try server.admin("/").body, as: UTF8.self)
        #expect(held.contains("a newer index is being built") && !held.contains(">fresh.test<"))
        #expect(pages.isBuilding)
        pages.holdBuilds(nil)
        gate.release()
        #expect(eventually { !pages.isBuilding })
        let fresh = String(decoding: try server.admin("/").body, as: UTF8.self)
        #expect(fresh.contains(">fresh.test<") && !fresh.contains("a newer index is being built"), "\(fresh.prefix(800))")
        #expect(pages.builds == 2)
    }

    @Test("a method other than GET or HEAD gets 405 with Allow on every admin page, and builds or renders nothing")
    func wrongMethods() throws {
        let server = try TestDaemon(config: config)
        let pages = try #require(server.daemon.statusPages)
        let paths = ["/", "/?site=a.test", "/?q=a", "/healthz", "/readyz", "/metrics", "/sites", "/nothing"]
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            for path in paths {
                let answer = try server.curl(["-X", method, "http://127.0.0.1:\(server.adminPort)\(path)"])
                #expect(answer.status == 405, "\(method) \(path)")
                #expect(answer.headers["allow"] == "GET, HEAD", "\(method) \(path)")
            }
        }
        // With content, the request is refused before any page too (413, Exchange's rule).
        #expect(try server.curl(["--data", "x=1", "http://127.0.0.1:\(server.adminPort)/"]).status == 413)
        // No page was asked for: no index was built.
        #expect(pages.builds == 0 && !pages.isBuilding)
        #expect(try server.admin("/").status == 200)
        #expect(try eventually { pages.builds == 1 })
    }
}
