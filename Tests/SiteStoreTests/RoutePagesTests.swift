import AASA
import Foundation
import Glibc
import HTTPCore
import Hashing
import Logging
import Testing

@testable import Served
@testable import SiteStore

private let aasa = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
private let key =
    "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET\n-----END PRIVATE KEY-----\n"

/// The page a path of the site is answered with (a desktop browser), or nil for 404 or a redirect.
private func page(_ site: ServedSite?, _ path: String) -> String? {
    guard let site else { return nil }
    let answer = Array(path.utf8).withUnsafeBytes { site.linkAnswer(host: "a.test", target: $0, userAgent: nil) }
    guard case .page(let file)? = answer?.kind else { return nil }
    return String(decoding: file.body, as: UTF8.self)
}

private func yamlErrors(_ yaml: String) -> [String] {
    SiteSettings.parse(yaml, file: "sites/a.test/site.yaml").1.filter { $0.severity == .error }.map(\.message)
}

/// A route's own page (`routes: - path: /help  page: help.html`): read under the site's page
/// rules, bounded per site, a bad one refusing the site.yaml that names it.
@Suite("site.yaml routes: a page per route")
struct RoutePagesTests {
    /// a.test with a site page and two routes with pages of their own; b.test beside it with a key.
    func config(_ yaml: String? = nil) throws -> TempConfig {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write(
            "sites/a.test/site.yaml",
            yaml ?? "page: landing.html\nroutes:\n  - path: /help\n    page: help.html\n  - path: /privacy\n    page: privacy.html\n")
        try c.write("sites/a.test/landing.html", "<p>landing</p>")
        try c.write("sites/a.test/help.html", "<p>help</p>")
        try c.write("sites/a.test/privacy.html", "<p>privacy</p>")
        try c.write("sites/a.test/tls/key.pem", key)
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/tls/key.pem", key)
        try c.write("sites/b.test/x.html", "<p>b's</p>")
        return c
    }

    func errors(_ r: SiteRegistry) -> [String] { r.statuses.first { $0.directory == "a.test" }?.errors ?? [] }
    /// The errors but the fixture's tls/ folder (a key without a certificate, for pages to link to).
    func pageErrors(_ r: SiteRegistry) -> [String] { errors(r).filter { !$0.contains("/tls/") } }

    @Test("hostile page names are refused in site.yaml, quoted escaped, naming the route")
    func hostileNames() {
        // As written in YAML (double-quoted escapes: CR, LF, ESC, U+202E, a backslash).
        for name in [
            "../b.test/x.html", "tls/key.pem", "tls", "site.yaml", "apple-app-site-association", ".hidden.html", "/etc/passwd",
            #"a\r\nSet-Cookie: x.html"#, #"x\e[31m.html"#, #"help\u202Elmth.html"#, "a b.html", #"a\\b.html"#, "",
            String(repeating: "a", count: SiteSettings.maximumPageNameLength + 1),
        ] {
            let found = yamlErrors("routes:\n  - path: /ok\n    web: https://a.example/\n  - path: /help\n    page: \"\(name)\"\n")
            #expect(found.first?.hasPrefix("routes[1].page") == true, "\(name): \(found)")
            #expect(!found.joined().unicodeScalars.contains { $0.value < 0x20 || $0 == "\u{202E}" }, "\(name): \(found)")
        }
        #expect(yamlErrors("routes:\n  - path: /help\n    page: \(String(repeating: "a", count: 255))\n").isEmpty)
    }

    @Test("at most maximumPages distinct pages a site: 16 load, 17 are refused naming the route; routes may share a page")
    func pageBound() {
        func table(pages: Int, routes: Int) -> String {
            "page: p0.html\nroutes:\n" + (0..<routes).map { "  - {path: \"/r\($0)\", page: \"p\($0 % pages).html\"}\n" }.joined()
        }
        let n = SiteSettings.maximumPages
        let (atBound, problems) = SiteSettings.parse(table(pages: n, routes: n), file: "site.yaml")
        #expect(problems.isEmpty, "\(problems)")
        #expect(atBound.pageNames.count == n)
        let (past, refused) = SiteSettings.parse(table(pages: n + 1, routes: n + 1), file: "site.yaml")
        #expect(refused.first?.message.contains("routes[\(n)].page") == true, "\(refused)")
        #expect(refused.first?.message.contains("at most \(n) pages") == true, "\(refused)")
        #expect(past.links.routes.isEmpty && past.pageNames.count == 1, "nothing past the bound is left to read")
        // 1,000 routes sharing two pages: two pages.
        let (shared, none) = SiteSettings.parse(table(pages: 2, routes: 1000), file: "site.yaml")
        #expect(none.isEmpty && shared.pageNames == ["p0.html", "p1.html"])
    }

    @Test("1,000 routes naming 1,000 pages read none of them; 10,000 routes are refused before any page")
    func thousandsOfPages() throws {
        let c = try config(
            "routes:\n" + (0..<1000).map { "  - {path: \"/r\($0)\", page: \"p\($0).html\"}\n" }.joined())
        let r = c.registry()
        let site = try #require(r.reloadAll().site(forHost: "a.test"))
        #expect(site.pages.isEmpty && site.routes == nil)
        // Had the loader looked for them, each absent file would be a problem of its own.
        #expect(errors(r).count <= 2, "\(errors(r).prefix(4))")
        #expect(errors(r).contains { $0.contains("at most \(SiteSettings.maximumPages) pages") }, "\(errors(r))")
        let many = "routes:\n" + (0..<10_000).map { "  - {path: \"/r\($0)\", page: \"p\($0).html\"}\n" }.joined()
        #expect(yamlErrors(many).first?.contains("at most \(RouteSettings.maximumCount)") == true)
        try c.write("sites/a.test/site.yaml", many)
        _ = r.reloadAll()
        #expect(errors(r).contains { $0.contains("site.yaml") && $0.contains("64 KB") }, "\(errors(r))")
    }

    @Test("two routes take two pages, the fallback the site's: HTML with the site page's fields; routes share one page, copies one body")
    func twoPages() throws {
        let c = try config(
            "page: landing.html\ncache-control: max-age=30\nroutes:\n  - path: /help\n    page: help.html\n"
                + "  - path: /faq\n    page: help.html\n  - path: /privacy\n    page: privacy.html\n  - path: /copy\n    page: copy.html\n")
        try c.write("sites/a.test/copy.html", "<p>help</p>")
        let r = c.registry()
        let site = try #require(r.reloadAll().site(forHost: "a.test"))
        #expect(pageErrors(r).isEmpty, "\(errors(r))")
        #expect(page(site, "/help") == "<p>help</p>")
        #expect(page(site, "/faq") == "<p>help</p>")
        #expect(page(site, "/privacy") == "<p>privacy</p>")
        #expect(page(site, "/other") == "<p>landing</p>")
        #expect(site.pages.keys.sorted() == ["copy.html", "help.html", "landing.html", "privacy.html"])
        #expect(site.routePages[0] === site.routePages[1], "one prepared page for the routes that share it")
        #expect(site.routePages[0]?.content === site.routePages[3]?.content, "identical pages share one body")
        for file in site.pages.values {
            #expect(file.headers.value(of: "Content-Type") == "text/html; charset=utf-8")
            #expect(file.headers.value(of: "Cache-Control") == "max-age=30")
            #expect(file.headers.value(of: "X-Content-Type-Options") == "nosniff")
            #expect(file.headers.value(of: "Vary") == "User-Agent")
            #expect(file.headers.value(of: "ETag") == file.etag)
            #expect(file.options == site.page?.options, "the site page's options")
        }
        // Neither is warned about as a stray file of the directory.
        let scan = ConfigLoader.scan(directory: c.root)
        let problems = (scan.sites.first { $0.host.name == "a.test" }?.problems ?? []).filter { !$0.file.contains("/tls") }
        #expect(problems.isEmpty, "\(problems)")
        #expect(scan.sites.first { $0.host.name == "a.test" }?.pageUses["help.html"]?.routes == [0, 1])
        // Hashed by the read (on the loader's cores), not by the registry.
        let help = scan.sites.first { $0.host.name == "a.test" }?.pages["help.html"]
        #expect(help?.sha256 != nil && help?.sha256 == help.map { Digest.sha256($0.bytes) })
    }

    @Test(
        "a new route whose page is planted (a link out, into tls/, a hard link to a key, a FIFO, /dev/zero, 1 GB, a key's text) refuses site.yaml: the last good settings stay"
    )
    func plantedNewPage() throws {
        let c = try config()
        let r = c.registry()
        #expect(page(r.reloadAll().site(forHost: "a.test"), "/new") == "<p>landing</p>")
        let file = c.root + "/sites/a.test/new.html"
        #expect(mkfifo(c.root + "/sites/a.test/pipe", 0o644) == 0)
        let cases: [(String, () throws -> Void, String)] = [
            ("missing", {}, "missing"),
            ("../b.test/x.html", { try c.link("sites/a.test/new.html", to: "../b.test/x.html") }, "outside the site's directory"),
            ("/etc/passwd", { try c.link("sites/a.test/new.html", to: "/etc/passwd") }, "outside the site's directory"),
            ("tls/key.pem", { try c.link("sites/a.test/new.html", to: "tls/key.pem") }, "tls/ directory"),
            ("hard link", { #expect(link(c.root + "/sites/b.test/tls/key.pem", file) == 0) }, "hard link"),
            ("fifo", { #expect(mkfifo(file, 0o644) == 0) }, "not a regular file"),
            ("link to a fifo", { try c.link("sites/a.test/new.html", to: "pipe") }, "not a regular file"),
            ("/dev/zero", { try c.link("sites/a.test/new.html", to: "/dev/zero") }, "not a regular file"),
            ("directory", { try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false) }, "a directory"),
            (
                "1 GB",
                {
                    let fd = creat(file, 0o644)
                    #expect(fd >= 0 && ftruncate(fd, 1 << 30) == 0)
                    close(fd)
                }, "larger than"
            ),
            ("a key's text", { try c.write("sites/a.test/new.html", key) }, "private key"),
            ("empty", { try c.write("sites/a.test/new.html", "") }, "empty"),
        ]
        try c.write(
            "sites/a.test/site.yaml",
            "page: landing.html\nroutes:\n  - path: /help\n    page: help.html\n  - path: /new\n    page: new.html\n")
        for (name, plant, reason) in cases {
            try? FileManager.default.removeItem(atPath: file)
            try plant()
            let started = Date()
            let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"), "\(name)")
            #expect(Date().timeIntervalSince(started) < 5, "\(name): read bounded")
            #expect(page(site, "/new") == "<p>landing</p>", "\(name): the route was applied")
            #expect(page(site, "/help") == "<p>help</p>", "\(name)")
            #expect(page(site, "/privacy") == "<p>privacy</p>", "\(name): the last good settings")
            #expect(site.pages["new.html"] == nil, "\(name)")
            #expect(
                errors(r).contains { $0.contains("sites/a.test/new.html") && $0.contains(reason) && $0.contains("routes[1] (/new)") },
                "\(name): \(errors(r))")
            #expect(errors(r).contains { $0.contains("site.yaml: not applied") }, "\(name): \(errors(r))")
            #expect(!errors(r).joined().contains("SECRET"), "\(name): a message quoted the key")
            #expect(r.statuses.first { $0.directory == "a.test" }?.state == .servingLastGood, "\(name)")
        }
        // A good file: the new settings apply.
        try FileManager.default.removeItem(atPath: file)
        try c.write("sites/a.test/new.html", "<p>new</p>")
        let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(page(site, "/new") == "<p>new</p>" && page(site, "/privacy") == "<p>landing</p>", "\(errors(r))")
        #expect(pageErrors(r).isEmpty, "\(errors(r))")
    }

    @Test(
        "at start-up (and after a restart) a missing, oversized or empty page refuses nothing: the aliases, the other routes and the fallback serve; its route answers 404"
    )
    func firstLoadWithUnservablePage() throws {
        let yaml =
            "aliases: [www.a.test]\npage: landing.html\nfallback:\n  ios: https://apps.apple.com/app/id1\n"
            + "routes:\n  - path: /help\n    page: help.html\n  - path: /privacy\n    page: privacy.html\n"
        for (name, plant) in [
            ("missing", { (c: TempConfig) in try c.remove("sites/a.test/landing.html") }),
            (
                "oversized",
                { (c: TempConfig) in
                    try c.write("sites/a.test/landing.html", String(repeating: "x", count: LandingPage.maximumFileSize + 1))
                }
            ),
            ("empty", { (c: TempConfig) in try c.write("sites/a.test/landing.html", "") }),
        ] as [(String, (TempConfig) throws -> Void)] {
            let c = try config(yaml)
            // Another tenant wants the alias: it must not get it because a.test's page is bad.
            try c.write("sites/b.test/site.yaml", "aliases: [www.a.test]\n")
            try plant(c)
            // The restart remembers who served the alias first (a daemon's state file).
            for round in ["start", "restart"] {
                let r = SiteRegistry(
                    root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }),
                    servedFirstFile: c.root + "/served-first")
                let snapshot = r.reloadAll()
                let site = try #require(snapshot.site(forHost: "www.a.test"), "\(name) \(round): \(errors(r))")
                #expect(site.directory == "a.test", "\(name) \(round): \(errors(r)) \(r.statuses.map(\.errors))")
                #expect(page(site, "/help") == "<p>help</p>", "\(name) \(round)")
                #expect(page(site, "/privacy") == "<p>privacy</p>", "\(name) \(round)")
                #expect(site.fallback != nil, "\(name) \(round): the fallback is in force")
                #expect(site.pages["landing.html"] == nil, "\(name) \(round)")
                #expect(!errors(r).contains { $0.contains("not applied") }, "\(name) \(round): \(errors(r))")
                #expect(errors(r).contains { $0.contains("landing.html") }, "\(name) \(round): \(errors(r))")
            }
        }
    }

    @Test(
        "a site's pages hold at most maximumPageBytes together: at the bound all serve; one byte more keeps the last good page, and at start-up leaves it unserved, the files named"
    )
    func pageBytesBudget() throws {
        let full = LandingPage.maximumFileSize
        let bound = SiteSettings.maximumPageBytes
        let routes = (1...4).map { "  - {path: /r\($0), page: p\($0).html}\n" }.joined()
        let c = try config("page: p0.html\nroutes:\n" + routes)
        // p0..p3 full but the last byte taken by p4: exactly the bound.
        let sizes = [full, full, full, bound - 3 * full - 1, 1]
        for (i, size) in sizes.enumerated() { try c.write("sites/a.test/p\(i).html", String(repeating: "\(i)", count: size)) }
        let r = c.registry()
        let site = try #require(r.reloadAll().site(forHost: "a.test"))
        #expect(site.pages.count == 5 && pageErrors(r).isEmpty, "\(pageErrors(r))")
        #expect(site.pages.values.map(\.content.body.count).reduce(0, +) == bound)
        // One byte more: p4 keeps its last good version, and the error names the pages.
        try c.write("sites/a.test/p4.html", "44")
        let kept = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(page(kept, "/r4") == "4")
        #expect(
            pageErrors(r).contains {
                $0.contains("sites/a.test/p4.html") && $0.contains("\(bound + 1) bytes")
                    && $0.contains("p0.html, p1.html, p2.html, p3.html, p4.html")
                    && $0.contains("512 KB")
            }, "\(pageErrors(r))")
        // A restart: the settings apply, the other pages serve, p4's route answers 404.
        let fresh = c.registry()
        let restarted = try #require(fresh.reloadAll().site(forHost: "a.test"))
        #expect(page(restarted, "/r1") == String(repeating: "1", count: full))
        #expect(page(restarted, "/r4") == nil && restarted.pages["p4.html"] == nil)
        #expect(errors(fresh).contains { $0.contains("p4.html") && $0.contains("512 KB") }, "\(errors(fresh))")
    }

    @Test("a route's page swapped for a key or a link after it was served keeps its last good version; deleted, the route answers 404")
    func swappedPage() throws {
        let c = try config()
        let r = c.registry()
        let first = try #require(r.reloadAll().site(forHost: "a.test"))
        let served = try #require(first.pages["help.html"])
        let file = c.root + "/sites/a.test/help.html"
        for (name, plant) in [
            ("tls/key.pem", { try c.link("sites/a.test/help.html", to: "tls/key.pem") }),
            ("../b.test/tls/key.pem", { try c.link("sites/a.test/help.html", to: "../b.test/tls/key.pem") }),
            ("hard link", { #expect(link(c.root + "/sites/b.test/tls/key.pem", file) == 0) }),
            ("a key's text", { try c.write("sites/a.test/help.html", key) }),
        ] as [(String, () throws -> Void)] {
            try FileManager.default.removeItem(atPath: file)
            try plant()
            let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
            #expect(page(site, "/help") == "<p>help</p>", "\(name): the last good page")
            #expect(site.pages["help.html"]?.etag == served.etag, "\(name)")
            #expect(errors(r).contains { $0.contains("help.html") && $0.contains("routes[0] (/help)") }, "\(name): \(errors(r))")
            #expect(!errors(r).joined().contains("SECRET"), "\(name)")
        }
        try FileManager.default.removeItem(atPath: file)
        let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(Array("/help".utf8).withUnsafeBytes { site.linkAnswer(host: "a.test", target: $0, userAgent: nil) } == nil, "404")
        #expect(page(site, "/privacy") == "<p>privacy</p>")
        #expect(errors(r).contains { $0.contains("help.html") && $0.contains("missing") && $0.contains("routes[0] (/help)") })
    }

    @Test("a page at exactly the size bound loads; one byte more keeps the last good version")
    func sizeBound() throws {
        let c = try config()
        let r = c.registry()
        _ = r.reloadAll()
        let largest = String(repeating: "x", count: LandingPage.maximumFileSize)
        try c.write("sites/a.test/help.html", largest)
        #expect(page(r.reload(["a.test"]).site(forHost: "a.test"), "/help") == largest)
        try c.write("sites/a.test/help.html", largest + "x")
        #expect(page(r.reload(["a.test"]).site(forHost: "a.test"), "/help") == largest)
        #expect(errors(r).contains { $0.contains("help.html") && $0.contains("larger than") }, "\(errors(r))")
    }

    @Test("when a route takes another page, that page's Last-Modified is later than any the site's pages had")
    func lastModifiedMovesForward() throws {
        let c = try config()
        // The pages' times are their ctimes, all of this second: the same URL must still move on.
        let r = c.registry()
        let first = try #require(r.reloadAll().site(forHost: "a.test"))
        let latest = first.pages.values.map(\.lastModified).max() ?? 0
        try c.write(
            "sites/a.test/site.yaml",
            "page: landing.html\nroutes:\n  - path: /help\n    page: privacy.html\n  - path: /privacy\n    page: help.html\n")
        let second = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(page(second, "/help") == "<p>privacy</p>")
        for (name, file) in second.pages { #expect(file.lastModified > latest, "\(name)") }
        // One time for every page, never past a second from now (not a second more per page).
        let now = Int64(Date().timeIntervalSince1970)
        #expect(Set(second.pages.values.map(\.lastModified)).count == 1, "\(second.pages.mapValues(\.lastModified))")
        #expect(second.pages.values.allSatisfy { $0.lastModified <= now + 1 })
        // Swapped back and forth many times: still never past a second from now.
        for round in 0..<10 {
            let (a, b) = round % 2 == 0 ? ("help", "privacy") : ("privacy", "help")
            try c.write(
                "sites/a.test/site.yaml",
                "page: landing.html\nroutes:\n  - path: /help\n    page: \(a).html\n  - path: /privacy\n    page: \(b).html\n")
            let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
            #expect(site.pages.values.allSatisfy { $0.lastModified <= Int64(Date().timeIntervalSince1970) + 1 }, "round \(round)")
        }
        // Nothing changed: the same prepared pages.
        try c.write(
            "sites/a.test/site.yaml",
            "page: landing.html\nroutes:\n  - path: /help\n    page: privacy.html\n  - path: /privacy\n    page: help.html\n")
        let last = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        let third = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        for (name, file) in third.pages { #expect(file === last.pages[name], "\(name)") }
    }

    @Test("pages read while the site serves nothing are not kept: the cache holds no version of them")
    func noPagesHeldUnserved() throws {
        let c = try config()
        try c.remove("sites/a.test/apple-app-site-association")
        try c.remove("sites/b.test/apple-app-site-association")
        let r = c.registry()
        for round in 0..<5 {
            try c.write("sites/a.test/help.html", "<p>help \(round)</p>")
            _ = r.reload(["a.test"])
            #expect(r.preparer.contents.count == 0, "round \(round)")
        }
        // Served again, then removed from site.yaml: only what is served is held.
        try c.write("sites/a.test/apple-app-site-association", aasa)
        _ = r.reload(["a.test"])
        #expect(r.preparer.contents.count == 4, "the association file and three pages")
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        _ = r.reload(["a.test"])
        #expect(r.preparer.contents.count == 2)
    }
}
