import Foundation
import Glibc
import Testing

@testable import SiteStore

private let aasa = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
private let key =
    "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgSECRETSECRETSECRET\n-----END PRIVATE KEY-----\n"

/// A site's files are its own regular files (ConfigLoader.readFile's rules): never read from a
/// tls/ folder, never a FIFO, device or directory, and a page never a hard link. Each case is
/// what a tenant who writes one site directory can plant.
@Suite("a site's files are its own regular files")
struct SiteFileRulesTests {
    /// a.test serving a page, b.test beside it with a key, the root's default pair.
    func config() throws -> TempConfig {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        try c.write("sites/a.test/tls/key.pem", key)
        try c.write("sites/a.test/tls/cert.pem", "-----BEGIN CERTIFICATE-----\n")
        try c.write("sites/b.test/apple-app-site-association", aasa)
        try c.write("sites/b.test/tls/key.pem", key)
        try c.write("tls/key.pem", key)
        return c
    }

    func errors(_ r: SiteRegistry, _ site: String = "a.test") -> [String] {
        r.statuses.first { $0.directory == site }?.errors ?? []
    }

    @Test("a page that is a link to the site's own tls/key.pem, or to one through tls/ named otherwise, is refused with the reason")
    func pageIntoOwnTLS() throws {
        let c = try config()
        let r = c.registry()
        for target in ["tls/key.pem", "./tls/../tls/key.pem", "TLSDIR/key.pem"] {
            try? FileManager.default.removeItem(atPath: c.root + "/sites/a.test/landing.html")
            if target.hasPrefix("TLSDIR") {
                // A Kubernetes Secret volume: tls is a link to a folder of another name.
                try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/tls")
                try c.write("sites/a.test/..secret/key.pem", key)
                try c.write("sites/a.test/..secret/cert.pem", "-----BEGIN CERTIFICATE-----\n")
                try c.link("sites/a.test/tls", to: "..secret")
                try c.link("sites/a.test/landing.html", to: "..secret/key.pem")
            } else {
                try c.link("sites/a.test/landing.html", to: target)
            }
            let site = try #require(r.reloadAll().site(forHost: "a.test"))
            #expect(site.page == nil, "\(target) was served")
            #expect(errors(r).contains { $0.contains("landing.html") && $0.contains("tls/ directory") }, "\(target): \(errors(r))")
            #expect(!errors(r).joined().contains("SECRET"), "a message quoted the key")
        }
    }

    @Test("a page that is a hard link (to another site's key, or to anything) is refused; one name is fine")
    func pageHardLink() throws {
        let c = try config()
        let r = c.registry()
        #expect(link(c.root + "/sites/b.test/tls/key.pem", c.root + "/sites/a.test/landing.html") == 0)
        #expect(r.reloadAll().site(forHost: "a.test")?.page == nil)
        #expect(errors(r).contains { $0.contains("landing.html") && $0.contains("hard link") }, "\(errors(r))")
        // A hard link of a harmless file is refused all the same: the count is what is known.
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/landing.html")
        try c.write("sites/a.test/page-source.html", "<p>hi</p>")
        #expect(link(c.root + "/sites/a.test/page-source.html", c.root + "/sites/a.test/landing.html") == 0)
        #expect(r.reloadAll().site(forHost: "a.test")?.page == nil)
        // With its other name gone, it has one name: served.
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/page-source.html")
        #expect(r.reloadAll().site(forHost: "a.test")?.page?.body == Array("<p>hi</p>".utf8))
    }

    @Test("a page that is a FIFO, a directory, a link to /dev/zero or to a FIFO is refused unopened, and the last good page stays")
    func pageNotRegular() throws {
        let c = try config()
        try c.write("sites/a.test/landing.html", "<p>good</p>")
        let r = c.registry()
        #expect(r.reloadAll().site(forHost: "a.test")?.page?.body == Array("<p>good</p>".utf8))
        let page = c.root + "/sites/a.test/landing.html"
        let cases: [(String, () throws -> Void, String)] = [
            ("fifo", { #expect(mkfifo(page, 0o644) == 0) }, "not a regular file"),
            ("directory", { try FileManager.default.createDirectory(atPath: page, withIntermediateDirectories: false) }, "a directory"),
            ("/dev/zero", { try c.link("sites/a.test/landing.html", to: "/dev/zero") }, "not a regular file"),
            ("link to a fifo", { try c.link("sites/a.test/landing.html", to: "pipe") }, "not a regular file"),
            ("tls/key.pem", { try c.link("sites/a.test/landing.html", to: "tls/key.pem") }, "tls/ directory"),
        ]
        #expect(mkfifo(c.root + "/sites/a.test/pipe", 0o644) == 0)
        for (name, plant, reason) in cases {
            try FileManager.default.removeItem(atPath: page)
            try plant()
            let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
            #expect(site.page?.body == Array("<p>good</p>".utf8), "\(name): the last good page")
            #expect(errors(r).contains { $0.contains("landing.html") && $0.contains(reason) }, "\(name): \(errors(r))")
            #expect(r.statuses.first { $0.directory == "a.test" }?.state == .servingLastGood, "\(name)")
        }
    }

    @Test("site.yaml and the association files never resolve into a tls/ folder (the site's, another's, the root's)")
    func namedFilesIntoTLS() throws {
        let c = try config()
        for (file, target) in [
            ("site.yaml", "tls/key.pem"), ("apple-app-site-association", "../b.test/tls/key.pem"),
            ("assetlinks.json", "../../tls/key.pem"), ("apple-app-site-association", c.root + "/sites/b.test/tls/key.pem"),
        ] {
            try? FileManager.default.removeItem(atPath: c.root + "/sites/a.test/" + file)
            try c.link("sites/a.test/" + file, to: target)
            let r = c.registry()
            _ = r.reloadAll()
            #expect(errors(r).contains { $0.contains(file) && $0.contains("tls/ directory") }, "\(file) -> \(target): \(errors(r))")
            #expect(!errors(r).joined().contains("SECRET"), "a message quoted the key")
            try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/" + file)
            try c.write("sites/a.test/" + file, file == "site.yaml" ? "page: landing.html\n" : file == "assetlinks.json" ? "[]" : aasa)
        }
    }

    @Test("a site directory that is a link into another site's tls/ reads none of its files")
    func siteDirectoryIntoTLS() throws {
        let c = try config()
        try c.write("sites/b.test/tls/apple-app-site-association", aasa)
        try c.link("sites/c.test", to: "b.test/tls")
        let r = c.registry()
        #expect(r.reloadAll().site(forHost: "c.test") == nil)
        #expect(errors(r, "c.test").contains { $0.contains("tls/ directory") }, "\(errors(r, "c.test"))")
    }

    @Test("an association file may be a hard link or a link to a shared file outside tls/; it must be a regular file")
    func associationFilesLinked() throws {
        let c = try config()
        try c.write("shared/aasa.json", aasa)
        try FileManager.default.removeItem(atPath: c.root + "/sites/b.test/apple-app-site-association")
        try c.link("sites/b.test/apple-app-site-association", to: "../../shared/aasa.json")
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/apple-app-site-association")
        #expect(link(c.root + "/shared/aasa.json", c.root + "/sites/a.test/apple-app-site-association") == 0)
        let r = c.registry()
        let snapshot = r.reloadAll()
        #expect(snapshot.site(forHost: "a.test")?.aasa != nil, "\(errors(r))")
        #expect(snapshot.site(forHost: "b.test")?.aasa != nil, "\(errors(r, "b.test"))")
        try FileManager.default.removeItem(atPath: c.root + "/sites/b.test/apple-app-site-association")
        try c.link("sites/b.test/apple-app-site-association", to: "/dev/zero")
        _ = r.reloadAll()
        #expect(errors(r, "b.test").contains { $0.contains("not a regular file") }, "\(errors(r, "b.test"))")
    }

    @Test("a key hard-linked as an association file or site.yaml is neither JSON nor settings, and no message quotes its bytes")
    func keyAsAssociationFile() throws {
        let c = try config()
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/apple-app-site-association")
        #expect(link(c.root + "/sites/b.test/tls/key.pem", c.root + "/sites/a.test/apple-app-site-association") == 0)
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/site.yaml")
        #expect(link(c.root + "/sites/b.test/tls/key.pem", c.root + "/sites/a.test/site.yaml") == 0)
        let scan = ConfigLoader.scan(directory: c.root)
        let problems = scan.sites.first { $0.directory == "sites/a.test" }?.problems.map(\.message) ?? []
        let findings = scan.sites.first { $0.directory == "sites/a.test" }?.aasa?.result.diagnostics.map(\.message) ?? []
        #expect(!(problems + findings).isEmpty)
        #expect(!(problems + findings).joined().contains("SECRET"), "\(problems + findings)")
        #expect(!(problems + findings).joined().contains("MIG"), "\(problems + findings)")
    }

    @Test("a legacy encrypted PEM key as site.yaml (a line with ': ' in it) fails as YAML without quoting a line of key material")
    func encryptedKeyAsSettings() {
        let legacy = """
            -----BEGIN RSA PRIVATE KEY-----
            Proc-Type: 4,ENCRYPTED
            DEK-Info: AES-128-CBC,0123456789ABCDEF

            MIIEsecretSECRETsecretSECRET
            -----END RSA PRIVATE KEY-----

            """
        let problems = SiteSettings.parse(legacy, file: "sites/a.test/site.yaml").1.map(\.message)
        #expect(!problems.isEmpty)
        #expect(!problems.joined().contains("SECRET"), "\(problems)")
    }

    @Test("a hard link to another site's key whose other name a renewal replaced (one name left) is refused by its content")
    func pageKeyAfterRenewal() throws {
        let c = try config()
        try c.write("sites/a.test/landing.html", "<p>good</p>")
        let r = c.registry()
        #expect(r.reloadAll().site(forHost: "a.test")?.page?.body == Array("<p>good</p>".utf8))
        let page = c.root + "/sites/a.test/landing.html"
        try FileManager.default.removeItem(atPath: page)
        #expect(link(c.root + "/sites/b.test/tls/key.pem", page) == 0)
        // b.test's key renewed as every tool does it: a new file renamed over the old name.
        try c.write("sites/b.test/tls/key.new", key)
        #expect(rename(c.root + "/sites/b.test/tls/key.new", c.root + "/sites/b.test/tls/key.pem") == 0)
        let site = try #require(r.reload(["a.test"]).site(forHost: "a.test"))
        #expect(site.page?.body == Array("<p>good</p>".utf8), "the old key was served")
        #expect(errors(r).contains { $0.contains("private key") }, "\(errors(r))")
        #expect(!errors(r).joined().contains("SECRET"), "a message quoted the key")
    }

    @Test("a page holding a PEM private key of any label is refused; a certificate or the words alone are not")
    func pagePrivateKeyContent() {
        for label in ["PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "RSA PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY"] {
            let page = "<pre>\n-----BEGIN \(label)-----\r\nMIGH\n-----END \(label)-----\n</pre>"
            let result = LandingPage.validate(Array(page.utf8), name: "landing.html")
            #expect(result.document == nil && result.diagnostics.first?.rule == .pagePrivateKey, "\(label)")
        }
        for harmless in [
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", "<p>-----BEGIN </p>\n<p>PRIVATE KEY-----</p>",
            "PRIVATE KEY----- -----BEGIN ", "-----BEGIN ",
        ] {
            #expect(LandingPage.validate(Array(harmless.utf8), name: "landing.html").document != nil, "\(harmless)")
        }
    }
}
