import Foundation
import SiteStore
import TestSupport
import Testing

@testable import Daemon

/// What `aasad validate` reads through Daemon: a directory (a config directory or a lone site)
/// and a settings file's problems.
@Suite struct ValidateLoadingTests {
    static let aasa = Array(#"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}"#.utf8)

    @Test func aLoneSiteDirectoryIsReadAsOneSiteWhateverItsName() throws {
        let directory = try TemporaryDirectory()
        try directory.write("my site\n/apple-app-site-association", Self.aasa)
        for path in [directory.path("my site\n"), directory.path("my site\n") + "/"] {
            let scan = ConfigLoading.load(directoryOrSite: path)
            #expect(scan.root == directory.path, "\(path)")
            #expect(scan.sites.count == 1, "\(path)")
            #expect(scan.sites.first?.aasa?.isValid == true)
        }
        // A directory with sites/ is a config directory, even when it holds the files too.
        try directory.write("config/apple-app-site-association", Self.aasa)
        try directory.write("config/sites/a.test/apple-app-site-association", Self.aasa)
        #expect(ConfigLoading.load(directoryOrSite: directory.path("config")).sites.map(\.host.name) == ["a.test"])
        // Neither file: a config directory, whose missing sites/ is its problem.
        let empty = ConfigLoading.load(directoryOrSite: directory.path)
        #expect(empty.sites.isEmpty && empty.problems.contains { $0.file == "sites" })
    }

    @Test func aLoneFileIsValidatedByItsName() throws {
        let directory = try TemporaryDirectory()
        let list =
            #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example", "#
            + #""sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
        for name in ["assetlinks.json", "assetlinks.json.bak", "any-name"] { try directory.write(name, Array(list.utf8)) }
        let links = try ConfigLoading.validate(file: directory.path("assetlinks.json")).get()
        #expect(links.kind == "assetlinks.json" && links.valid)
        // The same list under any other name is an apple-app-site-association file, which it is not.
        for name in ["assetlinks.json.bak", "any-name"] {
            let other = try ConfigLoading.validate(file: directory.path(name)).get()
            #expect(other.kind == "apple-app-site-association" && !other.valid && !other.diagnostics.isEmpty, "\(name)")
        }
        // A directory is no file: a read error, not a verdict.
        #expect(throws: (any Error).self) { try ConfigLoading.validate(file: directory.path).get() }
    }

    @Test func aSettingsFileIsCheckedWholeOnlyOnceItReads() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("aasad.yaml")
        // A key unknown: that problem alone; the values together are not looked at.
        try directory.write("aasad.yaml", Array("listen:\n  http-redirect: true\n  htp: x\n".utf8))
        let unknown = ServerSettings.problems(ofFile: path)
        #expect(unknown.count == 1 && unknown.first?.key.contains("htp") == true, "\(unknown)")
        // Every key known: the values together, then the files the api section names.
        try directory.write("aasad.yaml", Array("listen:\n  http-redirect: true\napi:\n  tokens-file: \(path).none\n".utf8))
        let problems = ServerSettings.problems(ofFile: path)
        #expect(problems.map(\.key).contains("listen.http-redirect") && problems.last?.key == "api.tokens-file", "\(problems)")
        #expect(problems.allSatisfy { $0.source == path })
        #expect(ServerSettings.problems(ofFile: path + ".missing").map(\.key) == ["(file)"])
    }
}
