import DaemonTesting
import Foundation
import TestSupport
import Testing

/// A whole link domain: every other path of a site answered by platform, over real
/// curl (HTTP/1.1 and HTTP/2) and raw sockets, with the AASA paths untouched, on a daemon in this
/// process; `validate` and `match` are the binary's, as a user runs them.
@Suite("aasad serve: fallback and page for other paths")
final class FallbackServeTests {
    let config: TestConfig
    static let aasaPath = "/.well-known/apple-app-site-association"
    static let web = "https://www.example.com{path}"
    static let appStore = "https://apps.apple.com/app/id1234567890"
    static let playStore = "https://play.google.com/store/apps/details?id=com.example"
    static let page = Array(
        ("<!doctype html><meta name=\"apple-itunes-app\" content=\"app-id=1234567890\">"
            + String(repeating: "<p>Get the app</p>", count: 40)).utf8)

    init() throws {
        config = try TestConfig()
        try config.write("config/sites/link.test/apple-app-site-association", config.aasa)
        try config.write(
            "config/sites/link.test/site.yaml",
            Array("fallback:\n  web: \(Self.web)\n  ios: \(Self.appStore)\n  android: \(Self.playStore)\n".utf8))
        try config.write("config/sites/page.test/apple-app-site-association", config.aasa)
        try config.write("config/sites/page.test/site.yaml", Array("page: landing.html\nfallback:\n  ios: \(Self.appStore)\n".utf8))
        try config.write("config/sites/page.test/landing.html", Self.page)
    }

    @Test(
        "each platform gets its target over HTTP/1.1 and HTTP/2, GET and HEAD, with the path and query as sent",
        arguments: ["--http1.1", "--http2"])
    func platforms(_ version: String) throws {
        let server = try TestDaemon(config: config)
        let path = "/buy/42?src=mail&x=%41%2F"
        for (agent, location) in [
            (BrowserAgents.iPhoneSafari, Self.appStore), (BrowserAgents.androidChrome, Self.playStore),
            (BrowserAgents.desktopChrome, "https://www.example.com" + path), ("", "https://www.example.com" + path),
        ] {
            for head in [false, true] {
                let r = try server.https("link.test", path, [version, "-A", agent] + (head ? ["-I"] : []))
                #expect(r.status == 302, "\(agent)")
                #expect(r.headers["location"] == location, "\(agent)")
                #expect(r.headers["cache-control"] == "no-store")
                #expect(r.headers["vary"] == "User-Agent")
                #expect(r.headers["content-length"] == "0")
                if !head { #expect(r.body.isEmpty) }  // with -I, curl prints the head as its output
                #expect(r.version == (version == "--http2" ? "2" : "1.1"))
            }
        }
        // The association files are always the files, whatever the User-Agent.
        for agent in [BrowserAgents.iPhoneSafari, BrowserAgents.androidChrome, BrowserAgents.desktopChrome] {
            for path in [Self.aasaPath, "/apple-app-site-association"] {
                let r = try server.https("link.test", path, [version, "-A", agent])
                #expect(r.status == 200 && r.body == config.aasa && r.headers["location"] == nil, "\(path)")
            }
            #expect(try server.https("link.test", "/.well-known/assetlinks.json", [version, "-A", agent]).status == 404)
            #expect(try server.https("link.test", "/.well-known/security.txt", [version, "-A", agent]).status == 404)
        }
        // A site without fallback answers other paths 404, as before.
        #expect(try server.https("a.test", "/buy/42", [version, "-A", BrowserAgents.iPhoneSafari]).status == 404)
        // Only GET and HEAD.
        #expect(try server.https("link.test", "/buy/42", [version, "-X", "DELETE"]).status == 405)
    }

    @Test(
        "hostile paths stay on the target's host and never split the head",
        arguments: [
            ("//evil.example/x", "https://www.example.com//evil.example/x"),
            ("/%2F%2Fevil.example", "https://www.example.com/%2F%2Fevil.example"),
            ("/%0d%0aSet-Cookie:%20a=b", "https://www.example.com/%0d%0aSet-Cookie:%20a=b"),
            ("/x?next=https://evil.example/", "https://www.example.com/x?next=https://evil.example/"),
            ("/@evil.example", "https://www.example.com/@evil.example"),
        ])
    func hostilePaths(_ path: String, _ expected: String) throws {
        let server = try TestDaemon(config: config)
        for version in ["--http1.1", "--http2"] {
            let r = try server.https("link.test", path, [version, "-A", BrowserAgents.desktopChrome])
            #expect(r.status == 302)
            #expect(r.headers["location"] == expected, "\(version)")
            #expect(r.headers["set-cookie"] == nil)
            #expect(URL(string: r.headers["location"] ?? "")?.host == "www.example.com")
        }
    }

    @Test("a Location over 16 KB is 414; just under it is served")
    func locationBound() throws {
        let server = try TestDaemon(config: config)
        // Each '"' becomes %22: 5,400 of them make a Location of 16,224 bytes, 5,500 of 16,524.
        for (count, status) in [(5400, "302"), (5500, "414")] {
            let request = "GET /\(String(repeating: "\"", count: count)) HTTP/1.1\r\nHost: link.test\r\nConnection: close\r\n\r\n"
            let reply = String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
            #expect(reply.hasPrefix("HTTP/1.1 \(status) "), "\(count): \(reply.prefix(60))")
        }
    }

    @Test("a request with content is refused 413 and not counted as a fallback answer; a fragment in :path is refused")
    func bodyNotCounted() throws {
        let server = try TestDaemon(config: config)
        let r = try server.https("link.test", "/x", ["--http2", "-X", "GET", "--data-binary", "abc"])
        #expect(r.status == 413)
        let sites = String(decoding: try server.admin("/sites").body, as: UTF8.self)
        #expect(sites.contains(#""fallback":{"web":0,"ios":0,"android":0}"#), "\(sites)")
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"aasad_fallback_responses_total{platform="web",status="4xx"} 0"#))
        // curl drops a fragment before sending; a raw HTTP/2 client sends it in :path.
        let script = TestConfig.fixtures.appendingPathComponent("h2fragment.py").path
        let out = try Tool.run("python3", [script, "\(server.httpsPort)"]).text
        #expect(out.contains("StreamReset") && !out.contains("302"), "\(out)")
    }

    @Test("raw bytes a client may put in a path are percent-encoded, never passed on")
    func rawBytes() throws {
        let server = try TestDaemon(config: config)
        // The HTTP/1.1 parser refuses controls and bytes >= 0x80 in the target; what it lets
        // through and a URL may not hold is encoded.
        for (path, expected) in [
            ("/\\evil.example", "https://www.example.com/%5Cevil.example"),
            ("/a\"b<c>{d}|e^`", "https://www.example.com/a%22b%3Cc%3E%7Bd%7D%7Ce%5E%60"),
        ] {
            let request = "GET \(path) HTTP/1.1\r\nHost: link.test\r\nConnection: close\r\n\r\n"
            let reply = String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
            #expect(reply.hasPrefix("HTTP/1.1 302 Found\r\n"), "\(reply.prefix(100))")
            #expect(reply.contains("\r\nLocation: \(expected)\r\n"), "\(reply)")
        }
        for bad in ["/\u{7F}", "/caf\u{E9}", "/a\tb"] {
            let request = "GET \(bad) HTTP/1.1\r\nHost: link.test\r\nConnection: close\r\n\r\n"
            let reply = String(decoding: server.raw(Array(request.utf8)), as: UTF8.self)
            #expect(reply.hasPrefix("HTTP/1.1 400"), "\(reply.prefix(100))")
        }
    }

    @Test("the page: text/html with its ETag, 304 and gzip like the AASA file; iPhones get the store")
    func page() throws {
        let server = try TestDaemon(config: config)
        for version in ["--http1.1", "--http2"] {
            let r = try server.https("page.test", "/promo/summer", [version, "-A", BrowserAgents.desktopChrome])
            #expect(r.status == 200 && r.body == Self.page)
            #expect(r.headers["content-type"] == "text/html; charset=utf-8")
            #expect(r.headers["vary"] == "Accept-Encoding, User-Agent")
            let etag = try #require(r.headers["etag"])
            let again = try server.https("page.test", "/other", [version, "-H", "If-None-Match: \(etag)"])
            #expect(again.status == 304 && again.body.isEmpty)
            let since = try #require(r.headers["last-modified"])
            #expect(try server.https("page.test", "/other", [version, "-H", "If-Modified-Since: \(since)"]).status == 304)
            // The first client that accepts gzip gets the page as it is (with the same Vary)
            // while the background queue compresses it; later ones get the gzip form.
            var gzip = try server.https("page.test", "/x", [version, "--compressed", "-A", BrowserAgents.androidChrome])
            _ = try eventually {
                if gzip.headers["content-encoding"] != nil { return true }
                #expect(gzip.status == 200 && gzip.body == Self.page && gzip.headers["vary"] == "Accept-Encoding, User-Agent")
                gzip = try server.https("page.test", "/x", [version, "--compressed", "-A", BrowserAgents.androidChrome])
                return false
            }
            #expect(gzip.status == 200 && gzip.body == Self.page && gzip.headers["content-encoding"] == "gzip")
            let store = try server.https("page.test", "/promo/summer", [version, "-A", BrowserAgents.iPhoneSafari])
            #expect(store.status == 302 && store.headers["location"] == Self.appStore)
            #expect(try server.https("page.test", Self.aasaPath, [version]).body == config.aasa)
        }
    }

    @Test("a fallback change is served after a reload; an invalid one keeps the last good settings")
    func reload() throws {
        let server = try TestDaemon(config: config)
        #expect(
            try server.https("link.test", "/x", ["-A", BrowserAgents.desktopChrome]).headers["location"] == "https://www.example.com/x")
        try config.write(
            "config/sites/link.test/site.yaml", Array("fallback:\n  web: https://web2.example.com/go{path}\n  status: 308\n".utf8))
        #expect(
            try eventually {
                let r = try server.https("link.test", "/x", ["-A", BrowserAgents.iPhoneSafari])
                return r.status == 308 && r.headers["location"] == "https://web2.example.com/go/x" && r.headers["vary"] == nil
            })
        try config.write("config/sites/link.test/site.yaml", Array("fallback:\n  web: \"https://web3.example.com/\\r\\nX: y\"\n".utf8))
        #expect(server.waitForLog("fallback.web"))
        let kept = try server.https("link.test", "/x", ["-A", BrowserAgents.iPhoneSafari])
        #expect(kept.status == 308 && kept.headers["location"] == "https://web2.example.com/go/x")
        let sites = String(decoding: try server.admin("/sites").body, as: UTF8.self)
        #expect(sites.contains("serving-last-good"))
        // Every status the key allows, and the site's own Cache-Control for its redirects.
        for status in [301, 302, 307, 308] {
            try config.write(
                "config/sites/link.test/site.yaml",
                Array(
                    "fallback:\n  web: https://web4.example.com{path}\n  status: \(status)\nfallback-cache-control: max-age=\(status)\n"
                        .utf8))
            #expect(
                try eventually {
                    let r = try server.https("link.test", "/s?q=1", ["--http2"])
                    return r.status == status && r.headers["location"] == "https://web4.example.com/s?q=1"
                        && r.headers["cache-control"] == "max-age=\(status)"
                }, "status \(status)")
        }
        // Removed: other paths are 404 again.
        try config.write("config/sites/link.test/site.yaml", Array("cache-control: max-age=60\n".utf8))
        #expect(try eventually { try server.https("link.test", "/x").status == 404 })
    }

    @Test("match --config says what a browser gets without the app, per platform, as serve answers it")
    func matchPreview() throws {
        let out = try Tool.run(
            Binary.aasad.path,
            [
                "match", "--config", config.config, "--format", "json", "https://link.test/buy/42?src=mail", "https://page.test/x",
                "https://link.test/.well-known/apple-app-site-association", "https://a.test/x",
            ])
        let reports = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout)) as? [[String: Any]])
        let link = try #require(reports[0]["browser"] as? [[String: Any]])
        #expect(link.map { $0["platform"] as? String } == ["web", "ios", "android"])
        #expect(link.map { $0["location"] as? String } == ["https://www.example.com/buy/42?src=mail", Self.appStore, Self.playStore])
        #expect(link.allSatisfy { $0["status"] as? Int == 302 })
        let page = try #require(reports[1]["browser"] as? [[String: Any]])
        #expect(page.map { $0["status"] as? Int } == [200, 302, 200])
        #expect(page[0]["page"] as? Bool == true)
        let aasa = try #require(reports[2]["browser"] as? [[String: Any]])
        #expect(aasa.allSatisfy { $0["status"] as? Int == 404 }, "the association files are never a fallback")
        #expect(reports[3]["browser"] == nil, "a site without fallback says nothing more")
    }

    @Test("fallback answers are counted per site and platform on /sites and in /metrics, never by path")
    func counted() throws {
        let server = try TestDaemon(config: config)
        for agent in [BrowserAgents.iPhoneSafari, BrowserAgents.iPhoneSafari, BrowserAgents.androidChrome, BrowserAgents.desktopChrome] {
            _ = try server.https("link.test", "/secret-path-\(UUID().uuidString)", ["-A", agent])
        }
        _ = try server.https("page.test", "/x", ["-A", BrowserAgents.desktopChrome])
        let sites = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let list = try #require(sites?["sites"] as? [[String: Any]])
        let link = try #require(list.first { $0["directory"] as? String == "link.test" })
        #expect(link["fallback"] as? [String: Int] == ["web": 1, "ios": 2, "android": 1])
        let page = try #require(list.first { $0["directory"] as? String == "page.test" })
        #expect(page["fallback"] as? [String: Int] == ["web": 1, "ios": 0, "android": 0])
        #expect(list.first { $0["directory"] as? String == "a.test" }?["fallback"] == nil)
        let metrics = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
        #expect(metrics.contains(#"aasad_fallback_responses_total{platform="ios",status="3xx"} 2"#))
        #expect(metrics.contains(#"aasad_fallback_responses_total{platform="web",status="2xx"} 1"#))
        #expect(metrics.contains(#"path="fallback""#))
        #expect(!metrics.contains("secret-path"))
    }

    @Test(
        "a page planted by a tenant (a link to its tls/key.pem, a hard link to another site's key, before or after its renewal, a FIFO, a directory, /dev/zero) is refused with the reason; the last good page stays"
    )
    func plantedPages() throws {
        // page.test and other.test with their own pairs: the keys a tenant would publish.
        for site in ["page.test", "other.test"] {
            let tls = config.path("config/sites/\(site)/tls")
            try FileManager.default.createDirectory(atPath: tls, withIntermediateDirectories: true)
            let made = try Tool.run(
                "openssl",
                [
                    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj",
                    "/CN=\(site)", "-addext", "subjectAltName=DNS:\(site)", "-keyout", tls + "/key.pem", "-out", tls + "/cert.pem",
                ])
            #expect(made.status == 0)
        }
        try config.write("config/sites/other.test/apple-app-site-association", config.aasa)
        let cacert = config.path("config/sites/page.test/tls/cert.pem")
        let server = try TestDaemon(config: config)
        let good = try server.https("page.test", "/promo", ["-A", BrowserAgents.desktopChrome], cacert: cacert)
        #expect(good.status == 200 && good.body == Self.page)
        let page = config.path("config/sites/page.test/landing.html")
        let pipe = config.path("config/sites/page.test/pipe")
        #expect(mkfifo(pipe, 0o644) == 0)
        let cases: [(name: String, plant: () throws -> Void, reason: String)] = [
            (
                "a link to tls/key.pem", { try FileManager.default.createSymbolicLink(atPath: page, withDestinationPath: "tls/key.pem") },
                "tls/ directory"
            ),
            (
                "a hard link to another site's key", { #expect(link(self.config.path("config/sites/other.test/tls/key.pem"), page) == 0) },
                "hard link"
            ),
            ("a FIFO", { #expect(mkfifo(page, 0o644) == 0) }, "not a regular file"),
            (
                "a link to a FIFO", { try FileManager.default.createSymbolicLink(atPath: page, withDestinationPath: "pipe") },
                "not a regular file"
            ),
            ("a directory", { try FileManager.default.createDirectory(atPath: page, withIntermediateDirectories: false) }, "a directory"),
            (
                "a link to /dev/zero", { try FileManager.default.createSymbolicLink(atPath: page, withDestinationPath: "/dev/zero") },
                "not a regular file"
            ),
            (
                // One name left once other.test's key is renewed by rename, as every tool does.
                "a hard link to another site's key after its renewal",
                {
                    let key = self.config.path("config/sites/other.test/tls/key.pem")
                    #expect(link(key, page) == 0)
                    try FileManager.default.copyItem(atPath: key, toPath: key + ".new")
                    #expect(rename(key + ".new", key) == 0)
                },
                "private key"
            ),
        ]
        for planted in cases {
            // Replaced by rename, as a deploy does: the watcher sees one change.
            try FileManager.default.removeItem(atPath: page)
            try planted.plant()
            #expect(
                eventually(attempts: 100) {
                    (try? self.siteErrors(server, "page.test"))?.contains { $0.contains("landing.html") && $0.contains(planted.reason) }
                        == true
                }, "\(planted.name): \((try? self.siteErrors(server, "page.test")) ?? [])")
            for version in ["--http1.1", "--http2"] {
                let r = try server.https("page.test", "/promo", [version, "-A", BrowserAgents.desktopChrome], cacert: cacert)
                #expect(r.status == 200 && r.body == Self.page, "\(planted.name): the last good page")
                #expect(!String(decoding: r.body, as: UTF8.self).contains("PRIVATE KEY"), "\(planted.name) served the key")
            }
            // validate reads the same way and names the reason, never the key's bytes.
            let out = try Tool.run(Binary.aasad.path, ["validate", config.config])
            #expect(out.status == 1, "\(planted.name)")
            #expect(out.text.contains("landing.html") && out.text.contains(planted.reason), "\(planted.name): \(out.text)")
            #expect(!out.text.contains("PRIVATE KEY"), "\(planted.name): \(out.text)")
        }
        // A good page again: served.
        try FileManager.default.removeItem(atPath: page)
        try config.write("config/sites/page.test/landing.html", Array("<p>new</p>".utf8))
        #expect(
            eventually(attempts: 100) {
                (try? server.https("page.test", "/promo", ["-A", BrowserAgents.desktopChrome], cacert: cacert).body)
                    == Array("<p>new</p>".utf8)
            })
    }

    /// The errors `/sites` lists for one site directory.
    func siteErrors(_ server: TestDaemon, _ directory: String) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let sites = object?["sites"] as? [[String: Any]] ?? []
        return sites.first { $0["directory"] as? String == directory }?["errors"] as? [String] ?? []
    }
}
