import DaemonTesting
import Foundation
import TestSupport
import Testing

/// Routes with pages of their own (`routes: - path: /help  page: help.html`) over real curl
/// (HTTP/1.1 and HTTP/2, TLS) on a daemon in this process; `validate` and `match` are the
/// binary's. The loader's rules for each page: Tests/SiteStoreTests/RoutePagesTests.swift.
@Suite("aasad serve: a page per route")
final class RoutePagesServeTests {
    let config: TestConfig
    static let appStore = "https://apps.apple.com/app/id1234567890"
    static let landing = Array(("<!doctype html><title>Example</title>" + String(repeating: "<p>Get the app</p>", count: 20)).utf8)
    static let help = Array(("<!doctype html><title>Help</title>" + String(repeating: "<p>How to</p>", count: 30)).utf8)
    static let privacy = Array("<!doctype html><title>Privacy</title><p>Nothing is kept.</p>".utf8)
    static let yaml = """
        page: landing.html
        cache-control: max-age=60
        routes:
          - path: /help
            page: help.html
          - path: /privacy
            page: privacy.html
            ios: \(appStore)

        """

    init() throws {
        config = try TestConfig()
        try config.write("config/sites/link.test/apple-app-site-association", config.aasa)
        try config.write("config/sites/link.test/site.yaml", Array(Self.yaml.utf8))
        try config.write("config/sites/link.test/landing.html", Self.landing)
        try config.write("config/sites/link.test/help.html", Self.help)
        try config.write("config/sites/link.test/privacy.html", Self.privacy)
        // Another tenant's key, which a route's page must never publish.
        try config.write("config/sites/other.test/apple-app-site-association", config.aasa)
        try config.write("config/sites/other.test/tls/key.pem", Array("-----BEGIN PRIVATE KEY-----\nSECRETSECRET\n".utf8))
    }

    @Test(
        "two routes take two pages over TLS, HTTP/1.1 and HTTP/2, with the site page's fields; each answers 304 to its own ETag only",
        arguments: ["--http1.1", "--http2"])
    func twoPages(_ version: String) throws {
        let server = try TestDaemon(config: config)
        let site = try server.https("link.test", "/anything", [version, "-A", BrowserAgents.desktopChrome])
        #expect(site.status == 200 && site.body == Self.landing)
        #expect(site.version == (version == "--http2" ? "2" : "1.1"))
        var etags: [String: String] = [:]
        for (path, body) in [("/help", Self.help), ("/privacy", Self.privacy)] {
            let r = try server.https("link.test", path, [version, "-A", BrowserAgents.desktopChrome])
            #expect(r.status == 200 && r.body == body, "\(path)")
            for field in ["content-type", "cache-control", "x-content-type-options"] {
                #expect(r.headers[field] == site.headers[field], "\(path): \(field)")
            }
            #expect(r.headers["content-type"] == "text/html; charset=utf-8")
            #expect(r.headers["cache-control"] == "max-age=60")
            #expect(r.headers["vary"]?.contains("User-Agent") == true, "\(path): \(r.headers)")
            #expect(r.headers["last-modified"] != nil)
            let etag = try #require(r.headers["etag"])
            etags[path] = etag
            let again = try server.https("link.test", path, [version, "-H", "If-None-Match: \(etag)"])
            #expect(again.status == 304 && again.body.isEmpty, "\(path)")
            let other = try server.https("link.test", path, [version, "-H", "If-None-Match: \(site.headers["etag"] ?? "")"])
            #expect(other.status == 200 && other.body == body, "\(path): the site page's ETag is not this page's")
        }
        #expect(Set(etags.values).count == 2)
        // The route's own target beats its page for its platform.
        let phone = try server.https("link.test", "/privacy", [version, "-A", BrowserAgents.iPhoneSafari])
        #expect(phone.status == 302 && phone.headers["location"] == Self.appStore)
        let sites = String(decoding: try server.admin("/sites").body, as: UTF8.self)
        #expect(sites.contains(#""routes":[{"path":"/help","answers":3}"#), "\(sites)")
    }

    @Test(
        "a new route whose page leads to another tenant's key refuses site.yaml on a running daemon: the key never served, the last good routes stay; validate and match say which page a route takes"
    )
    func plantedRoutePage() throws {
        let server = try TestDaemon(config: config)
        #expect(try server.https("link.test", "/help").body == Self.help)
        try FileManager.default.createSymbolicLink(
            atPath: config.path("config/sites/link.test/evil.html"), withDestinationPath: "../other.test/tls/key.pem")
        try config.write(
            "config/sites/link.test/site.yaml",
            Array((Self.yaml + "  - path: /evil\n    page: evil.html\n  - path: /help2\n    page: help.html\n").utf8))
        #expect(
            eventually {
                (try? self.siteErrors(server, "link.test"))?.contains {
                    $0.contains("evil.html") && $0.contains("outside the site's directory") && $0.contains("routes[2] (/evil)")
                } == true
            }, "\((try? self.siteErrors(server, "link.test")) ?? [])")
        for version in ["--http1.1", "--http2"] {
            let evil = try server.https("link.test", "/evil", [version])
            #expect(evil.status == 200 && evil.body == Self.landing, "the site's page, as before the change")
            #expect(!String(decoding: evil.body, as: UTF8.self).contains("SECRET"))
            #expect(try server.https("link.test", "/help2", [version]).body == Self.landing, "the new settings are not applied")
            #expect(try server.https("link.test", "/help", [version]).body == Self.help)
        }
        let out = try Tool.run(Binary.aasad.path, ["validate", config.config])
        #expect(out.status == 1)
        #expect(out.text.contains("evil.html") && out.text.contains("routes[2] (/evil)"), "\(out.text)")
        #expect(
            out.text.contains("page: \(config.config)/sites/link.test/help.html: the page of routes[0] (/help), routes[3] (/help2)"),
            "\(out.text)")
        #expect(!out.text.contains("SECRET"))
        // Fixed: the new table applies.
        try FileManager.default.removeItem(atPath: config.path("config/sites/link.test/evil.html"))
        try config.write("config/sites/link.test/evil.html", Array("<p>not evil</p>".utf8))
        #expect(try eventually { try server.https("link.test", "/help2").body == Self.help })
        #expect(try server.https("link.test", "/evil").body == Array("<p>not evil</p>".utf8))
        let match = try Tool.run(
            Binary.aasad.path, ["match", "--config", config.config, "--format", "json", "https://link.test/help2", "https://link.test/x"])
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(match.stdout)) as? [[String: Any]], "\(match.text)")
        let help = try #require(reports[0]["browser"] as? [[String: Any]])
        #expect(help.map { $0["pageFile"] as? String } == ["help.html", "help.html", "help.html"])
        #expect(help.map { $0["route"] as? Int } == [3, 3, 3])
        let other = try #require(reports[1]["browser"] as? [[String: Any]])
        #expect(other.map { $0["pageFile"] as? String } == ["landing.html", "landing.html", "landing.html"])
        let text = try Tool.run(Binary.aasad.path, ["match", "--config", config.config, "https://link.test/help"]).text
        #expect(text.contains("in a browser on web: 200 the page help.html (routes[0]: /help)"), "\(text)")
    }

    /// The errors `/sites` lists for one site directory.
    func siteErrors(_ server: TestDaemon, _ directory: String) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let sites = object?["sites"] as? [[String: Any]] ?? []
        return sites.first { $0["directory"] as? String == directory }?["errors"] as? [String] ?? []
    }
}
