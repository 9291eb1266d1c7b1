import Foundation
import TestSupport
import Testing

/// `validate` and `sites` load the config directory through the code `serve` uses, and report
/// what it refuses alike (serve beside them: Tests/DaemonServeTests/LoadPathTests.swift).
@Suite("One load path: validate and sites report the same problems")
final class LoadPathReportTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    private func aasad(_ arguments: [String]) throws -> Tool.Output {
        try Tool.run(AASAD.binary.path, arguments)
    }

    @Test("a symlink to a directory that is not a site is reported by validate and by sites alike")
    func aliasOfNoSite() throws {
        try config.write("config/sites/Not_A_Host/apple-app-site-association", config.aasa)
        try FileManager.default.createSymbolicLink(atPath: config.path("config/sites/link.test"), withDestinationPath: "Not_A_Host")
        let validate = try aasad(["validate", config.config])
        #expect(validate.status == 1)
        #expect(validate.text.contains("sites/link.test: an alias of Not_A_Host, which is not a site"), "\(validate.text)")
        let sites = try aasad(["sites", "--config", config.config])
        #expect(sites.status == 1)
        #expect(sites.text.contains("sites/link.test: an alias of Not_A_Host, which is not a site"), "\(sites.text)")
    }

    @Test("a config directory without sites/ is an error for validate and for sites alike")
    func noSitesDirectory() throws {
        try FileManager.default.removeItem(atPath: config.path("config/sites"))
        let validate = try aasad(["validate", config.config])
        #expect(validate.status == 1)
        #expect(validate.text.contains("no sites/ directory"), "\(validate.text)")
        let sites = try aasad(["sites", "--config", config.config])
        #expect(sites.status == 1, "\(sites.text)")
        #expect(sites.text.contains("no sites/ directory"), "\(sites.text)")
    }
}
