import Foundation
import Testing

/// The deployment files (deploy/) checked by the tools that read them.
@Suite("Deployment files (issue 6)")
struct DeployTests {
    @Test("the systemd unit passes systemd-analyze verify, with the built binary in ExecStart")
    func systemdUnit() throws {
        let unit = AASAD.repositoryRoot.appendingPathComponent("deploy/systemd/aasad.service")
        let text = try String(contentsOf: unit, encoding: .utf8)
        #expect(text.contains("Type=notify") && text.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        // verify checks that ExecStart's binary exists: point it at the one just built.
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("aasad-\(UUID().uuidString).service")
        try Data(text.replacingOccurrences(of: "/usr/local/bin/aasad", with: AASAD.binary.path).utf8).write(to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        let out = try Tool.run("systemd-analyze", ["verify", copy.path])
        #expect(out.status == 0 && out.stderr.isEmpty, "\(out.stderr)")
    }
}
