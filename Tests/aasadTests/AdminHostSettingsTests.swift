import Foundation
import TestSupport
import Testing

/// `admin-hosts` as a setting: what `validate` and `serve` refuse (the serving rule itself is
/// tested on a daemon in-process, Tests/DaemonServeTests/AdminHostTests.swift).
@Suite("aasad validate and serve: admin-hosts values that are refused")
final class AdminHostSettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
        try config.write("config/aasad.yaml", Array("admin-hosts: [Metrics.Example.NET]\n".utf8))
    }

    @Test("admin-hosts refuses a port, a wildcard, a non-ASCII name, and names the key")
    func badSettings() throws {
        for (value, message) in [
            ("[\"metrics.example:9190\"]", "no port"), ("[\"*.example.net\"]", "wildcard"), ("[\"métrics.example\"]", "A-label"),
        ] {
            try config.write("config/aasad.yaml", Array("admin-hosts: \(value)\n".utf8))
            let run = try Tool.run(AASAD.binary.path, ["validate", config.path("config/aasad.yaml")])
            #expect(run.status != 0, "\(value)")
            #expect(run.text.contains("admin-hosts") && run.text.contains(message), "\(value): \(run.text)")
        }
        let environment = try Tool.run(
            "env",
            ["AASAD_ADMIN_HOSTS=a.example,*.b.example", AASAD.binary.path, "serve", "--config", config.config, "--https", "127.0.0.1:0"])
        #expect(environment.status != 0)
        #expect(environment.stderr.contains("AASAD_ADMIN_HOSTS"), "\(environment.stderr)")
    }
}
