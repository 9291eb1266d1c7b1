import Foundation
import TestSupport
import Testing

/// The deployment files (deploy/) checked by the tools that read them.
@Suite("Deployment files")
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

    @Test("the socket units pass systemd-analyze verify beside the service, and name what serve takes")
    func socketUnits() throws {
        let directory = try TemporaryDirectory(prefix: "aasad-units")
        let source = AASAD.repositoryRoot.appendingPathComponent("deploy/systemd")
        let service = try String(contentsOf: source.appendingPathComponent("aasad.service"), encoding: .utf8)
        try directory.write("aasad.service", Array(service.replacingOccurrences(of: "/usr/local/bin/aasad", with: AASAD.binary.path).utf8))
        for (unit, name) in [("aasad.socket", "https"), ("aasad-http.socket", "http")] {
            let text = try String(contentsOf: source.appendingPathComponent(unit), encoding: .utf8)
            #expect(text.contains("FileDescriptorName=\(name)\n") && text.contains("Service=aasad.service"))
            // PartOf= would restart the socket with the service: closed and bound again, the
            // queued connections reset; exactly what the socket is there to prevent.
            #expect(!text.split(separator: "\n").contains { $0.hasPrefix("PartOf=") })
            try directory.write(unit, Array(text.utf8))
        }
        let out = try Tool.run(
            "systemd-analyze",
            ["verify", directory.path("aasad.socket"), directory.path("aasad-http.socket"), directory.path("aasad.service")])
        #expect(out.status == 0 && out.stderr.isEmpty, "\(out.stderr)")
    }
}

@Suite("Kubernetes and Compose files")
struct ManifestTests {
    static let check = #"""
        import sys, yaml
        docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
        kinds = sorted(d["kind"] for d in docs)
        assert kinds == ["ConfigMap", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "Secret", "Service"], kinds
        dep = next(d for d in docs if d["kind"] == "Deployment")
        spec = dep["spec"]["template"]["spec"]
        c = spec["containers"][0]
        assert dep["spec"]["replicas"] >= 2
        assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
        assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "admin"}
        assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"https": 8443, "admin": 9190}
        assert spec["securityContext"]["runAsNonRoot"] and c["securityContext"]["readOnlyRootFilesystem"]
        assert spec["terminationGracePeriodSeconds"] > 10
        # preStop covers the Service's endpoint propagation; the grace covers it and the drain.
        pre = c["lifecycle"]["preStop"]["exec"]["command"]
        assert pre[0] == "/bin/sleep" and 3 <= int(pre[1]) <= 15, pre
        assert spec["terminationGracePeriodSeconds"] >= int(pre[1]) + 10 + 2, spec["terminationGracePeriodSeconds"]
        mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
        assert mounts["sites"] == "/config/sites" and mounts["tls"] == "/config/tls"
        # The admin port: only what needs it may reach it (kubelet probes are not subject to
        # NetworkPolicy); HTTPS stays open to all.
        pod_labels = dep["spec"]["template"]["metadata"]["labels"]
        policy = next(d for d in docs if d["kind"] == "NetworkPolicy")["spec"]
        selected = policy["podSelector"]["matchLabels"]
        assert selected and all(pod_labels.get(k) == v for k, v in selected.items()), selected
        assert policy["policyTypes"] == ["Ingress"]
        rules = policy["ingress"]
        def ports(rule):
            return {p["port"] for p in rule["ports"]}
        open_rules = [r for r in rules if "from" not in r]
        assert [ports(r) for r in open_rules] == [{"https"}], open_rules
        admin_rules = [r for r in rules if "admin" in ports(r)]
        assert admin_rules and all(r.get("from") for r in admin_rules), admin_rules
        for r in admin_rules:
            assert ports(r) == {"admin"}
            for peer in r["from"]:
                assert "ipBlock" not in peer, "the admin port by address range is too wide"
                assert peer.get("namespaceSelector") or peer.get("podSelector"), peer
        compose = yaml.safe_load(open(sys.argv[2]))
        service = compose["services"]["aasad"]
        assert service["volumes"][0].endswith(":/config:ro")
        # Published ports: HTTPS to all; the admin port (9190) on the host's loopback only.
        published = [str(p) for p in service["ports"]]
        admin = [p for p in published if p.split(":")[-1] == "9190"]
        assert admin == ["127.0.0.1:9190:9190"], published
        print("ok")
        """#

    @Test("the manifests parse and carry the probes, replicas, security context, mounts and the admin port's NetworkPolicy")
    func manifests() throws {
        let root = AASAD.repositoryRoot.path
        let out = try Tool.run(
            "python3", ["-c", Self.check, root + "/deploy/kubernetes/aasad.yaml", root + "/deploy/compose/docker-compose.yml"])
        #expect(out.text == "ok\n", "\(out.stderr)")
    }

    /// The git-sync manifest: aasad's --config is git-sync's --root joined with --link, on one
    /// shared emptyDir, read-only for aasad, with readiness on the admin /readyz.
    static let gitSyncCheck = #"""
        import sys, yaml
        docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
        spec = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
        containers = {c["name"]: c for c in spec["containers"]}
        sync, aasad = containers["git-sync"], containers["aasad"]
        flags = dict(a[2:].split("=", 1) for a in sync["args"] if "=" in a)
        config = aasad["args"][aasad["args"].index("--config") + 1]
        assert config == flags["root"] + "/" + flags["link"], (config, flags)
        volumes = {v["name"]: v for v in spec["volumes"]}
        assert "emptyDir" in volumes["git"]
        mount = next(m for m in aasad["volumeMounts"] if m["name"] == "git")
        assert mount["mountPath"] == flags["root"] and mount.get("readOnly") is True
        assert any(m["name"] == "git" and m["mountPath"] == flags["root"] for m in sync["volumeMounts"])
        assert aasad["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "admin"}
        init = spec["initContainers"][0]
        assert "--one-time" in init["args"] and init["image"] == sync["image"]
        print("ok")
        """#

    @Test("the git-sync manifest points aasad at git-sync's link on a shared emptyDir, with readiness on /readyz")
    func gitSyncManifest() throws {
        let out = try Tool.run("python3", ["-c", Self.gitSyncCheck, AASAD.repositoryRoot.path + "/deploy/kubernetes/git-sync.yaml"])
        #expect(out.text == "ok\n", "\(out.stderr)")
    }
}
