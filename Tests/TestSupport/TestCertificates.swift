package import Foundation
import Testing

/// Certificates made by `openssl ca`, which (unlike `req -x509` in OpenSSL 3.0) takes any start
/// and end date: expired, not yet valid and nearly expired certificates without a fake clock.
package struct TestCertificates {
    package let root: URL
    private var count = 0

    package init(root: URL) throws {
        self.root = root.appendingPathComponent("openssl-ca")
        try FileManager.default.createDirectory(at: self.root.appendingPathComponent("new"), withIntermediateDirectories: true)
        try Data().write(to: self.root.appendingPathComponent("index.txt"))
        let configuration = """
            [ca]
            default_ca = test
            [test]
            dir = \(self.root.path)
            database = $dir/index.txt
            new_certs_dir = $dir/new
            default_md = sha256
            policy = any
            unique_subject = no
            copy_extensions = copy
            rand_serial = yes
            [any]
            commonName = supplied
            """
        try Data(configuration.utf8).write(to: self.root.appendingPathComponent("ca.cnf"))
    }

    /// `openssl ca`'s date form, e.g. 20200101000000Z.
    package static func stamp(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMddHHmmss'Z'"
        return formatter.string(from: date)
    }

    /// A self-signed pair for `names` (subjectAltName DNS entries) valid from `start` to `end`,
    /// written as `cert.pem` and `key.pem` in `directory`.
    package mutating func make(in directory: String, names: [String], start: String, end: String) throws {
        count += 1
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let request = root.appendingPathComponent("request-\(count).pem").path
        let made = try Tool.run(
            "openssl",
            [
                "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=\(names[0])", "-addext",
                "subjectAltName=" + names.map { "DNS:\($0)" }.joined(separator: ","), "-keyout", directory + "/key.pem", "-out", request,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        let signed = try Tool.run(
            "openssl",
            [
                "ca", "-batch", "-config", root.appendingPathComponent("ca.cnf").path, "-selfsign", "-keyfile", directory + "/key.pem",
                "-in", request, "-startdate", start, "-enddate", end, "-notext", "-out", directory + "/cert.pem",
            ])
        #expect(signed.status == 0, "\(signed.stderr)")
    }
}
