package import Foundation

/// A config directory for tests that serve (a daemon in-process or the binary), built fresh in a
/// temporary directory:
/// - `a.test`: an AASA file and assetlinks.json; `www.a.test` is a symlink alias of it
/// - `*.w.test`: a wildcard site
/// - `own.test`: a site with its own RSA certificate (the default one is the development ECDSA one)
/// - `bad.test`: an invalid file, so not served
package final class TestConfig {
    /// Removed with everything in it when the config is released.
    package let directory: TemporaryDirectory
    package var root: URL { directory.url }
    package let aasa = Array(
        #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#.utf8)
    package let wildcardAASA = Array(
        #"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.w", "paths": ["*"]}]}}"#.utf8)
    package let ownAASA = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.own"]}}"#.utf8)
    package let assetLinks = Array(
        #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example", "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
            .utf8)

    package init() throws {
        directory = try TemporaryDirectory(prefix: "aasad-inprocess")
        try write("config/sites/a.test/apple-app-site-association", aasa)
        try write("config/sites/a.test/assetlinks.json", assetLinks)
        try FileManager.default.createSymbolicLink(atPath: path("config/sites/www.a.test"), withDestinationPath: "a.test")
        try write("config/sites/*.w.test/apple-app-site-association", wildcardAASA)
        try write("config/sites/own.test/apple-app-site-association", ownAASA)
        try write("config/sites/bad.test/apple-app-site-association", Array(#"{"applinks": {"details": [],}}"#.utf8))
        // own.test's certificate is RSA so that a server presents an ECDSA and an RSA one; the
        // process's shared pair, made once per run (`TestPKI`).
        try TestPKI.shared(["own.test"], key: .rsa).write(into: path("config/sites/own.test/tls"))
    }

    /// The clients and parsers the end-to-end tests share (Python scripts), beside the tests that
    /// run the binary.
    package static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("aasadTests/Fixtures")

    package func path(_ relative: String) -> String { directory.path(relative) }

    /// A valid AASA file of at least `size` bytes, one component a path prefix: for responses
    /// past the server's output bounds.
    package static func largeAASA(atLeast size: Int) -> [UInt8] {
        let head = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["#
        var components: [String] = []
        var length = head.utf8.count + 5
        while length < size {
            let component = #"{"/": "/p\#(components.count)/*"}"#
            components.append(component)
            length += component.utf8.count + 1
        }
        return Array((head + components.joined(separator: ",") + "]}]}}").utf8)
    }

    package func write(_ relative: String, _ bytes: [UInt8]) throws { try directory.write(relative, bytes) }

    package var config: String { path("config") }
    package var state: String { path("state") }
    package var developmentCA: String { path("state/dev-tls/ca.pem") }
    package var ownCA: String { path("config/sites/own.test/tls/cert.pem") }

    /// Makes a self-signed ECDSA pair whose subjectAltName lists `names` into `directory`.
    package func makePair(_ names: [String], into directory: String) throws {
        try TestPKI.make(names).write(into: directory)
    }
}
