import Foundation
import TestSupport
import Testing

@Suite("aasad validate: certificates")
final class ValidateCertificateTests {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("aasad-validate-tls-\(UUID().uuidString)")
    let aasa = Array(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#.utf8)

    deinit { try? FileManager.default.removeItem(at: root) }

    func site(_ name: String) throws -> String {
        let directory = root.appendingPathComponent("config/sites/\(name)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(aasa).write(to: directory.appendingPathComponent("apple-app-site-association"))
        return directory.path
    }

    @Test("expired certificates, names a certificate does not cover (aliases, site.yaml, wildcards, the default pair)")
    func fixedDates() throws {
        var certificates = try TestCertificates(root: root)
        let past = ("20200101000000Z", "20200201000000Z")
        let current = ("20200101000000Z", "20991231000000Z")
        // Expired.
        try certificates.make(in: try site("expired.test") + "/tls", names: ["expired.test"], start: past.0, end: past.1)
        // Valid, but not for the symlink alias or the site.yaml alias.
        let names = try site("names.test")
        try FileManager.default.createSymbolicLink(
            atPath: root.appendingPathComponent("config/sites/www.names.test").path, withDestinationPath: "names.test")
        try Data("aliases:\n  - other.test\n".utf8).write(to: URL(fileURLWithPath: names + "/site.yaml"))
        try certificates.make(in: names + "/tls", names: ["names.test"], start: current.0, end: current.1)
        // A wildcard covers one label, not the name itself nor two labels.
        try certificates.make(in: try site("a.b.deep.test") + "/tls", names: ["*.deep.test"], start: current.0, end: current.1)
        try certificates.make(in: try site("tld.test") + "/tls", names: ["*.test"], start: current.0, end: current.1)
        try certificates.make(in: try site("wild.test") + "/tls", names: ["*.wild.test"], start: current.0, end: current.1)
        // A wildcard site needs the same wildcard.
        try certificates.make(in: try site("*.w.test") + "/tls", names: ["a.w.test"], start: current.0, end: current.1)
        // Covered: exactly, and by a one-label wildcard.
        try certificates.make(in: try site("good.test") + "/tls", names: ["good.test"], start: current.0, end: current.1)
        try certificates.make(
            in: try site("x.star.test") + "/tls", names: ["*.star.test", "unused.test"], start: current.0, end: current.1)
        // The default pair serves the sites without their own: it covers one, not the other.
        try certificates.make(
            in: root.appendingPathComponent("config/tls").path, names: ["plain.test"], start: current.0, end: current.1)
        _ = try site("plain.test")
        _ = try site("uncovered.test")

        let out = try AASAD.run(["validate", "config"], in: root)
        #expect(out.status == 1)
        try AASAD.expectGolden(out.stdout, "validate-certificates.txt")
    }

    @Test("a certificate expiring soon is a warning, one not yet valid an error; a default pair is checked too")
    func relativeDates() throws {
        var certificates = try TestCertificates(root: root)
        let now = Date()
        let day = 86_400.0
        try certificates.make(
            in: try site("soon.test") + "/tls", names: ["soon.test"], start: TestCertificates.stamp(now - 60 * day),
            end: TestCertificates.stamp(now + 5 * day))
        try certificates.make(
            in: try site("later.test") + "/tls", names: ["later.test"], start: TestCertificates.stamp(now + 10 * day),
            end: TestCertificates.stamp(now + 100 * day))
        try certificates.make(
            in: try site("fine.test") + "/tls", names: ["fine.test"], start: TestCertificates.stamp(now - day),
            end: TestCertificates.stamp(now + 60 * day))
        try certificates.make(
            in: root.appendingPathComponent("config/tls").path, names: ["*.test"], start: "20200101000000Z", end: "20200201000000Z")
        _ = try site("plain.test")

        let out = try AASAD.run(["validate", "--format", "json", "config"], in: root)
        #expect(out.status == 1)
        let report = try JSONSerialization.jsonObject(with: Data(out.stdout.utf8)) as? [String: Any]
        let findings = (report?["files"] as? [[String: Any]] ?? []).flatMap { file in
            (file["findings"] as? [[String: Any]] ?? []).map { (file["file"] as? String ?? "", $0) }
        }
        func finding(_ file: String) -> [String: Any]? { findings.first { $0.0 == file }?.1 }
        let soon = finding("config/sites/soon.test/tls/cert.pem")
        #expect(soon?["severity"] as? String == "warning")
        #expect(((soon?["message"] as? String) ?? "").contains("expires on"))
        let later = finding("config/sites/later.test/tls/cert.pem")
        #expect(later?["severity"] as? String == "error")
        #expect(((later?["message"] as? String) ?? "").contains("not valid before"))
        #expect(finding("config/sites/fine.test/tls/cert.pem") == nil)
        let expiredDefault = finding("config/tls/cert.pem")
        #expect(expiredDefault?["severity"] as? String == "error")
        #expect(((expiredDefault?["message"] as? String) ?? "").contains("expired on 2020-02-01"))

        // --strict turns the warning alone into a failure.
        try FileManager.default.removeItem(at: root.appendingPathComponent("config/sites/later.test"))
        try FileManager.default.removeItem(at: root.appendingPathComponent("config/tls"))
        #expect(try AASAD.run(["validate", "config"], in: root).status == 0)
        #expect(try AASAD.run(["validate", "--strict", "config"], in: root).status == 1)
    }
}

/// A certificate need not cover names refused to its site.
extension ValidateCertificateTests {
    @Test("an alias another site holds is reported refused, not as a name the certificate misses; a held one still counts")
    func refusedAliasNotCounted() throws {
        var certificates = try TestCertificates(root: root)
        _ = try site("victim.test")
        let tenant = try site("tenant.test")
        try Data("aliases: [victim.test, extra.test]\n".utf8).write(to: URL(fileURLWithPath: tenant + "/site.yaml"))
        try certificates.make(in: tenant + "/tls", names: ["tenant.test"], start: "20200101000000Z", end: "20991231000000Z")

        let out = try AASAD.run(["validate", "config"], in: root)
        #expect(out.status == 1)
        #expect(out.stdout.contains("the alias victim.test is not served by sites/tenant.test"), "\(out.stdout)")
        #expect(out.stdout.contains("does not cover extra.test;"), "\(out.stdout)")
        #expect(!out.stdout.contains("victim.test, extra.test"), "\(out.stdout)")
        #expect(!out.stdout.contains("does not cover victim.test"), "\(out.stdout)")
    }
}
