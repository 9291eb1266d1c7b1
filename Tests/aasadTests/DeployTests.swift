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

@Suite("Kubernetes and Compose files (issue 6)")
struct ManifestTests {
    static let check = #"""
        import sys, yaml
        docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
        kinds = sorted(d["kind"] for d in docs)
        assert kinds == ["ConfigMap", "Deployment", "PodDisruptionBudget", "Secret", "Service"], kinds
        dep = next(d for d in docs if d["kind"] == "Deployment")
        spec = dep["spec"]["template"]["spec"]
        c = spec["containers"][0]
        assert dep["spec"]["replicas"] >= 2
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
        assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"https": 8443, "admin": 9190}
        assert spec["securityContext"]["runAsNonRoot"] and c["securityContext"]["readOnlyRootFilesystem"]
        assert spec["terminationGracePeriodSeconds"] > 10
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert mounts["sites"] == "/config/sites" and mounts["tls"] == "/config/tls"
        compose = yaml.safe_load(open(sys.argv[2]))
        assert compose["services"]["aasad"]["volumes"][0].endswith(":/config:ro")
        print("ok")
        """#

    @Test("the manifests parse and carry the probes, replicas, security context and mounts")
    func manifests() throws {
        let root = AASAD.repositoryRoot.path
        let out = try Tool.run(
            "python3", ["-c", Self.check, root + "/deploy/kubernetes/aasad.yaml", root + "/deploy/compose/docker-compose.yml"])
        #expect(out.text == "ok\n", "\(out.stderr)")
    }
}
