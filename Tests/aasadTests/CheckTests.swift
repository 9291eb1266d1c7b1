import AASA
import Foundation
import TestSupport
import Testing

/// `aasad check` (the real binary) against a fake origin and a fake Apple CDN over TLS.
@Suite("aasad check: a deployed host as Apple's fetcher sees it")
final class CheckTests {
    let server: FakeOriginCDN

    init() throws {
        server = try FakeOriginCDN()
        let v1 = FakeOriginCDN.aasa(1)
        let v2 = FakeOriginCDN.aasa(2)
        for host in ["good.test", "missing.test", "cdnerror.test", "botblock.test", "html.test", "app.test", "expiring.test"] {
            try server.origin(host, v1)
        }
        try server.cdnCopy("good.test", v1)
        // Stale: the origin moved on to v2, the CDN still has v1.
        try server.origin("stale.test", v2)
        try server.cdnCopy("stale.test", v1)
        // The CDN writes the JSON out again: other spacing and member order, the same content.
        try server.origin("reformatted.test", v1)
        try server.cdnCopy(
            "reformatted.test",
            Array(#"{"applinks":{"details":[{"components":[{"/":"/v1/*"}],"appIDs":["ABCDE12345.com.example.app"]}]}}"#.utf8))
        try server.cdnStatus("cdnerror.test", 503)
        try server.origin("invalid.test", Array(#"{"applinks": {"details": [}"#.utf8))
        try server.origin(
            "good.test.assetlinks",
            Array(
                #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app", "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
                    .utf8))
    }

    func check(_ hosts: [String], _ extra: [String] = []) throws -> (status: Int32, hosts: [[String: Any]], stdout: String) {
        let out = try AASAD.run(server.arguments(hosts) + ["--format", "json"] + extra)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any], "\(out.stderr)")
        let reports = try #require(object["hosts"] as? [[String: Any]])
        return (out.status, reports, out.stdout)
    }

    static func codes(_ report: [String: Any]) -> [String] {
        ((report["problems"] as? [[String: Any]]) ?? []).compactMap { $0["code"] as? String }
    }

    static func cdnState(_ report: [String: Any]) -> String? {
        (report["cdn"] as? [String: Any])?["state"] as? String
    }

    @Test("a healthy host: ok, exit 0, the origin's facts and a current CDN copy")
    func healthy() throws {
        let result = try check(["good.test"])
        #expect(result.status == 0, "\(result.stdout)")
        let report = try #require(result.hosts.first)
        #expect(report["ok"] as? Bool == true)
        #expect(Self.codes(report).isEmpty)
        let origin = try #require(report["origin"] as? [String: Any])
        #expect(origin["status"] as? Int == 200)
        #expect(origin["contentType"] as? String == "application/json")
        #expect(origin["redirect"] is NSNull)
        #expect(origin["valid"] as? Bool == true)
        #expect((origin["errors"] as? [Any])?.isEmpty == true)
        let certificate = try #require(origin["certificate"] as? [String: Any])
        #expect((certificate["names"] as? [String])?.contains("good.test") == true)
        let notAfter = try #require(certificate["notAfter"] as? Int)
        #expect(abs(notAfter - Int(Date().timeIntervalSince1970) - 30 * 86_400) < 2 * 86_400)
        #expect(Self.cdnState(report) == "current")
        #expect((report["cdn"] as? [String: Any])?["status"] as? Int == 200)
        #expect((report["assetLinks"] as? [String: Any])?["valid"] as? Bool == true)
        #expect(server.cdnRequests.contains("good.test"))
        // The text form says the same for people.
        let text = try AASAD.run(server.arguments(["good.test"]))
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("good.test: ok\n"))
        #expect(text.stdout.contains("Apple CDN: current (200)"))
    }

    @Test(
        "each CDN state and origin problem is reported with its code, a fix, and exit 1",
        arguments: [
            ("stale.test", "stale", ["cdn-stale"]),
            ("missing.test", "missing", ["cdn-missing"]),
            ("cdnerror.test", "error", ["cdn-error"]),
            ("reformatted.test", "current", []),
            ("redirect.test", "missing", ["redirect", "cdn-missing"]),
            ("html.test", "missing", ["content-type", "cdn-missing"]),
            ("invalid.test", "missing", ["invalid-json", "cdn-missing"]),
            ("botblock.test", "missing", ["blocked-user-agent", "cdn-missing"]),
            ("notfound.test", "missing", ["not-found", "cdn-missing"]),
            ("expired.test", "missing", ["certificate-expired", "cdn-missing"]),
            ("wrongname.test", "missing", ["certificate-name-mismatch", "cdn-missing"]),
        ])
    func problems(_ host: String, _ cdn: String, _ codes: [String]) throws {
        let result = try check([host])
        let report = try #require(result.hosts.first)
        #expect(Self.codes(report) == codes)
        #expect(Self.cdnState(report) == cdn)
        #expect(result.status == (codes.isEmpty ? 0 : 1))
        #expect(report["ok"] as? Bool == codes.isEmpty)
        for problem in (report["problems"] as? [[String: Any]]) ?? [] {
            #expect(!((problem["fix"] as? String) ?? "").isEmpty)
            #expect(!((problem["message"] as? String) ?? "").isEmpty)
        }
    }

    @Test("the details of a problem: the redirect's target, the refused certificate, the CDN's failure reason")
    func details() throws {
        let result = try check(["redirect.test", "expired.test", "missing.test"])
        #expect(result.status == 1)
        let redirect = try #require(result.hosts[0]["origin"] as? [String: Any])
        #expect(redirect["status"] as? Int == 301)
        #expect(redirect["redirect"] as? String == "https://www.redirect.test/.well-known/apple-app-site-association")
        let expired = try #require(result.hosts[1]["origin"] as? [String: Any])
        #expect(expired["status"] is NSNull)
        let certificate = try #require(expired["certificate"] as? [String: Any])
        #expect(certificate["trusted"] as? Bool == false)
        #expect(certificate["notAfter"] as? Int == 1_580_515_200)  // 2020-02-01
        let cdn = try #require(result.hosts[2]["cdn"] as? [String: Any])
        #expect(cdn["failureReason"] as? String == "SWCERR00101 Bad HTTP Response: 404 Not Found")
    }

    @Test("a certificate close to its end is a warning: the host stays ok")
    func expiring() throws {
        let result = try check(["expiring.test"], ["--cdn", "none"])
        let report = try #require(result.hosts.first)
        #expect(Self.codes(report) == ["certificate-expiring"])
        #expect(report["ok"] as? Bool == true)
        #expect(result.status == 0)
        #expect(report["cdn"] is NSNull)
    }

    @Test("--app: which services and rules the app gets; an app the file does not list is a problem")
    func app() throws {
        let listed = try check(["app.test"], ["--cdn", "none", "--app", "ABCDE12345.com.example.app"])
        #expect(listed.status == 0)
        let apps = try #require(listed.hosts.first?["apps"] as? [[String: Any]])
        #expect(apps.first?["services"] as? [String] == ["applinks"])
        #expect(apps.first?["rules"] as? [String] == [#"{"/": "/v1/*"}"#])
        let other = try check(["app.test"], ["--cdn", "none", "--app", "ZZZZZ99999.com.example.other"])
        #expect(other.status == 1)
        #expect(Self.codes(try #require(other.hosts.first)) == ["app-missing"])
    }

    @Test("the JSON shape is stable: keys and types match the golden file")
    func jsonShape() throws {
        let result = try check(["good.test", "redirect.test"])
        // Values change with every run (ports, dates); the shape does not: each value becomes
        // its type, an array the distinct shapes of its elements.
        func shape(_ value: JSONValue) -> String {
            switch value.kind {
            case .object(let members):
                return "{"
                    + members.map(\.key).sorted().map { key in
                        "\(JSONValue.quote(key)): " + shape(members.first { $0.key == key }!.value)
                    }.joined(separator: ", ") + "}"
            case .array(let items):
                var seen: [String] = []
                for item in items.map(shape) where !seen.contains(item) { seen.append(item) }
                return "[" + seen.joined(separator: ", ") + "]"
            case .string: return "string"
            case .number: return "number"
            case .bool: return "bool"
            case .null: return "null"
            }
        }
        let parsed = try JSONParser.parse(Array(result.stdout.utf8))
        try AASAD.expectGolden(shape(parsed) + "\n", "check-shape.json")
    }

    @Test("--entitlements: every associated domain, wildcards at their base domain, developer mode without the CDN")
    func entitlements() throws {
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
                <key>com.apple.developer.associated-domains</key>
                <array>
                    <string>applinks:good.test</string>
                    <string>webcredentials:good.test</string>
                    <string>applinks:*.stale.test</string>
                    <string>applinks:app.test?mode=developer</string>
                    <string>applinks:good.test:8443</string>
                </array>
                <key>application-identifier</key>
                <string>ABCDE12345.com.example.app</string>
            </dict>
            </plist>
            """
        try server.directory.write("App.entitlements", Array(plist.utf8))
        let out = try AASAD.run(server.arguments([]) + ["--format", "json", "--entitlements", server.directory.path("App.entitlements")])
        #expect(out.status == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any], "\(out.stderr)")
        let hosts = try #require(object["hosts"] as? [[String: Any]])
        #expect(hosts.map { $0["host"] as? String } == ["good.test", "stale.test", "app.test"])
        // good.test: the app is in applinks but not in webcredentials.
        #expect(Self.codes(hosts[0]) == ["app-missing"])
        #expect(Self.cdnState(hosts[1]) == "stale")
        // Developer mode reads the origin directly: no CDN for app.test.
        #expect(hosts[2]["cdn"] is NSNull)
        #expect(hosts[2]["ok"] as? Bool == true)
        let entitlementProblems = try #require(object["entitlements"] as? [[String: Any]])
        #expect(entitlementProblems.count == 1)
        #expect((entitlementProblems.first?["message"] as? String)?.contains("port") == true)
    }

    @Test(
        "bad arguments are usage errors",
        arguments: [
            ["check"], ["check", "https://good.test/"], ["check", "good.test:443"], ["check", "--app", "bad", "good.test"],
            ["check", "--cdn", "http://cdn.test/a/v1/", "good.test"],
        ])
    func usage(_ arguments: [String]) throws {
        let out = try AASAD.run(arguments)
        #expect(out.status == 64, "\(arguments): \(out.stderr)")
    }
}
