import Foundation
import TestSupport
import Testing

/// scripts/api-schemathesis against a running `aasad serve` with the tenant API on loopback:
/// schemathesis (PyPI) sends generated requests to every operation of docs/api.yaml and fails on
/// a 5xx or an answer the document does not allow. Needs PyPI for its first run (the script
/// keeps its pinned schemathesis in .build/schemathesis-venv).
@Suite("Tenant API: schemathesis against docs/api.yaml", .serialized)
struct APISchemathesisTests {
    @Test(
        "no 5xx and every answer as docs/api.yaml says (50 examples per operation)",
        .timeLimit(.minutes(15)))
    func schemathesis() async throws {
        // TestConfig's sites (a symlinked alias, a wildcard, an invalid file, a site with tls/)
        // give GET, list and the API's 409 something to answer about.
        let config = try TestConfig()
        // The token's SHA-256 in the tokens file, never the token itself.
        let token = "schemathesis-platform-token"
        let digest = try Tool.run("sha256sum", [], input: Array(token.utf8)).text.prefix(64)
        try config.write(
            "api-tokens.yaml", Array("tokens:\n  - name: platform\n    sha256: \(digest)\n    scope: write\n    hosts: [\"*\"]\n".utf8))
        let server = try RunningServer(
            config: config,
            extra: [
                "--api-listen", "127.0.0.1:0", "--api-tokens-file", config.path("api-tokens.yaml"),
                // Its few hundred requests in seconds would otherwise meet the per-token limit.
                "--api-requests-per-minute", "100000",
            ])
        defer { _ = server.stop() }
        let base = "http://127.0.0.1:\(server.apiPort)"
        #expect(eventually { (try? Tool.run("curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", base + "/v1/sites"]).text) == "401" })
        let script = AASAD.repositoryRoot.appendingPathComponent("scripts/api-schemathesis").path
        // Minutes of waiting on the child: on a thread of its own (TestSupport/OwnThread.swift).
        let run = try await onOwnThread { try Tool.run("env", ["AASAD_API_TOKEN=\(token)", "EXAMPLES=50", script, base]) }
        #expect(run.status == 0, "\(run.text)\n\(run.stderr)")
    }
}
