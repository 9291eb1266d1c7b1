import Foundation
import Glibc
import Testing

@testable import SiteStore

private let aasa = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
/// Stand-ins for the ownership checks' key and a record that would pass as site files if read: a
/// key is 32 random bytes, but what matters is that the loader never reads it, whatever it holds.
private let keyThatValidates =
    #"{"applinks": {"apps": [], "details": [{"appIDs": ["KEYKEYKEY1.com.secret.key"], "components": [{"/": "/k/*"}]}]}}"#
private let recordThatValidates =
    #"{"applinks": {"apps": [], "details": [{"appIDs": ["RECORDREC1.com.secret.rec"], "components": [{"/": "/r/*"}]}]}}"#

/// No site file reaches `<config>/.aasad-verify/` (the ownership checks' HMAC key and records,
/// Sources/TenantAPI/VerificationStore.swift): not by a symbolic link (as into tls/), and not the
/// key by a hard link. Whoever can write one site directory can plant either.
@Suite("a site's files never reach .aasad-verify/")
struct VerifyDirectoryFileRulesTests {
    func config() throws -> TempConfig {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", aasa)
        try c.write("sites/a.test/site.yaml", "page: landing.html\n")
        try c.write("sites/a.test/landing.html", "<p>good</p>")
        try c.write(".aasad-verify/key", keyThatValidates)
        try c.write(".aasad-verify/names/b.test.json", recordThatValidates)
        try c.write("tls/cert.pem", "-----BEGIN CERTIFICATE-----\n")
        return c
    }

    func errors(_ r: SiteRegistry, _ site: String = "a.test") -> [String] {
        r.statuses.first { $0.directory == site }?.errors ?? []
    }

    func served(_ r: SiteRegistry, _ host: String = "a.test") -> String {
        let site = r.reloadAll().site(forHost: host)
        return (site?.aasa.map { String(decoding: $0.body, as: UTF8.self) } ?? "")
            + (site?.page.map { String(decoding: $0.body, as: UTF8.self) } ?? "")
    }

    @Test("a symlink from any site file to the key or a record, relative, absolute or through a dot segment, is refused with the reason")
    func symlinks() throws {
        let c = try config()
        for file in ["apple-app-site-association", "assetlinks.json", "site.yaml", "landing.html"] {
            for target in [
                "../../.aasad-verify/key", c.root + "/.aasad-verify/names/b.test.json", "../../tls/../.aasad-verify/key",
                "../../.AASAD-VERIFY/key",
            ] {
                let path = c.root + "/sites/a.test/" + file
                let original = try? Data(contentsOf: URL(fileURLWithPath: path))
                try? FileManager.default.removeItem(atPath: path)
                if target.contains("AASAD-VERIFY") {
                    // A folder of that name in another case (a case-insensitive filesystem opens it as the directory).
                    try c.write(".AASAD-VERIFY/key", keyThatValidates)
                }
                try c.link("sites/a.test/" + file, to: target)
                let r = c.registry()
                let text = served(r)
                #expect(!text.contains("KEYKEYKEY1") && !text.contains("RECORDREC1"), "\(file) -> \(target) served")
                // A page is also held to its site's directory, which may refuse it first.
                #expect(
                    errors(r).contains {
                        $0.contains(file) && ($0.contains(".aasad-verify/") || (file == "landing.html" && $0.contains("leads outside")))
                    },
                    "\(file) -> \(target): \(errors(r))")
                try FileManager.default.removeItem(atPath: path)
                if let original { try original.write(to: URL(fileURLWithPath: path)) }
            }
        }
    }

    @Test("the directory itself a link to a folder named otherwise (a shared volume), and a site directory linked into it, are refused")
    func linkedDirectory() throws {
        let c = try config()
        try FileManager.default.removeItem(atPath: c.root + "/.aasad-verify")
        try c.write("verify-volume/key", keyThatValidates)
        try c.write("verify-volume/names/apple-app-site-association", recordThatValidates)
        try c.link(".aasad-verify", to: "verify-volume")
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/apple-app-site-association")
        try c.link("sites/a.test/apple-app-site-association", to: "../../verify-volume/key")
        try c.link("sites/c.test", to: "../.aasad-verify/names")
        let r = c.registry()
        #expect(!served(r).contains("KEYKEYKEY1"))
        #expect(errors(r).contains { $0.contains(".aasad-verify/") }, "\(errors(r))")
        #expect(!served(r, "c.test").contains("RECORDREC1"))
        #expect(errors(r, "c.test").contains { $0.contains(".aasad-verify/") }, "\(errors(r, "c.test"))")
    }

    @Test("a hard link to the key as any site file is refused unread; a hard link between two sites' own files is still served")
    func hardLinks() throws {
        let c = try config()
        for file in ["apple-app-site-association", "assetlinks.json", "site.yaml"] {
            let path = c.root + "/sites/a.test/" + file
            let original = try? Data(contentsOf: URL(fileURLWithPath: path))
            try? FileManager.default.removeItem(atPath: path)
            #expect(link(c.root + "/.aasad-verify/key", path) == 0)
            let r = c.registry()
            #expect(!served(r).contains("KEYKEYKEY1"), "\(file) served the key")
            #expect(errors(r).contains { $0.contains(file) && $0.contains("ownership checks' key") }, "\(file): \(errors(r))")
            try FileManager.default.removeItem(atPath: path)
            if let original { try original.write(to: URL(fileURLWithPath: path)) }
        }
        // The page: refused as any hard link is (one name only), the key's bytes never served.
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/landing.html")
        #expect(link(c.root + "/.aasad-verify/key", c.root + "/sites/a.test/landing.html") == 0)
        #expect(!served(c.registry()).contains("KEYKEYKEY1"))
        // `cp -al`-style deployments keep working: a file with two names that is not the key.
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/landing.html")
        try c.write("sites/a.test/landing.html", "<p>good</p>")
        try c.write("sites/b.test/site.yaml", "cache-control: max-age=60\n")
        #expect(link(c.root + "/sites/a.test/apple-app-site-association", c.root + "/sites/b.test/apple-app-site-association") == 0)
        let r = c.registry()
        #expect(served(r, "b.test").contains("ABCDE12345"), "\(errors(r, "b.test"))")
    }
}
