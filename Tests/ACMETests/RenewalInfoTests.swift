import Foundation
import Logging
import TestSupport
import Testing

@testable import ACME

/// ACME Renewal Information (RFC 9773): the certificate identifier, the window document as a
/// hostile CA could send it, and the manager moving a renewal earlier when the CA says so.
@Suite("ACME renewal information (ARI)")
struct RenewalInfoTests {
    @Test("the certificate identifier of RFC 9773 §4.1's example: AKI 69:88:5B:…, serial 0x87654321")
    func certificateID() throws {
        let dir = try TemporaryDirectory(prefix: "acme-ari")
        let aki = "69:88:5B:6B:87:46:40:41:E1:B3:7B:84:7B:A0:AE:2C:DE:01:C8:D4"
        try OpenSSLCA.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=ari issuer", "-days", "2",
            "-addext", "subjectKeyIdentifier=\(aki)", "-keyout", dir.path("ca.key"), "-out", dir.path("ca.pem"),
        ])
        try OpenSSLCA.openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=a.test",
            "-keyout", dir.path("leaf.key"), "-out", dir.path("leaf.csr"),
        ])
        try dir.write("ext.cnf", Array("authorityKeyIdentifier=keyid\nsubjectAltName=DNS:a.test\n".utf8))
        try OpenSSLCA.openssl([
            "x509", "-req", "-in", dir.path("leaf.csr"), "-CA", dir.path("ca.pem"), "-CAkey", dir.path("ca.key"), "-set_serial",
            "0x87654321", "-days", "1", "-extfile", dir.path("ext.cnf"), "-outform", "DER", "-out", dir.path("leaf.der"),
        ])
        let der = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.path("leaf.der"))))
        #expect(try RenewalInfo.certificateID(leafDER: der) == "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE")
        // Without an Authority Key Identifier there is nothing to ask about.
        try OpenSSLCA.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=b.test", "-days", "1",
            "-addext", "authorityKeyIdentifier=none", "-addext", "subjectKeyIdentifier=none", "-outform", "DER",
            "-keyout", dir.path("b.key"), "-out", dir.path("b.der"),
        ])
        let bare = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir.path("b.der"))))
        #expect(try RenewalInfo.certificateID(leafDER: bare) == nil)
        #expect(throws: ACMEError.self) { try RenewalInfo.certificateID(leafDER: [0x30, 0x03, 0x02, 0x01, 0x01]) }
    }

    @Test("the window document: both ends, RFC 3339, the end after the start; anything else refused")
    func document() throws {
        let good = try RenewalInfo(
            body: Array(
                #"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-03T04:00:00Z"},"explanationURL":"https://ca.test/why"}"#
                    .utf8))
        #expect(good.start == 1_735_790_400 && good.end == 1_735_876_800)
        #expect(good.renewalTime(random: 0) == good.start)
        #expect(good.renewalTime(random: 0.5) == good.start + 43_200)
        #expect(good.renewalTime(random: 0.999_999_9) < good.end)
        for bad in [
            #"{}"#, #"{"suggestedWindow":{}}"#, #"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z"}}"#,
            #"{"suggestedWindow":{"start":"2025-01-03T04:00:00Z","end":"2025-01-02T04:00:00Z"}}"#,
            #"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"2025-01-02T04:00:00Z"}}"#,
            #"{"suggestedWindow":{"start":"yesterday","end":"2025-01-02T04:00:00Z"}}"#,
            #"{"suggestedWindow":{"start":1735790400,"end":1735876800}}"#,
            #"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","end":"99999-01-02T04:00:00Z"}}"#,
            #"{"suggestedWindow":{"start":"2025-01-02T04:00:00Z","start":"2025-01-01T04:00:00Z","end":"2025-01-03T04:00:00Z"}}"#,
        ] {
            #expect(throws: ACMEError.self, "\(bad)") { try RenewalInfo(body: Array(bad.utf8)) }
        }
    }

    @Test(
        "a window open now (a batch about to be revoked) makes a certificate due at once; a late window, or one about a predecessor, changes nothing"
    )
    func managerFollowsWindow() throws {
        for (scenario, due) in [("ari-now", true), ("ari-late", false), ("ari-stale", false)] {
            let ca = try FakeCA(.init(name: scenario), names: ["a.test"])
            let folder = try TemporaryDirectory(prefix: "acme-ari-manager")
            // A stored certificate from an issuer with a key identifier, valid for 2 days.
            let issuer = try OpenSSLCA()
            let key = try LeafKey.generate()
            let csr = try CertificateRequest(names: ["a.test"], key: key)
            let chain = try issuer.sign(
                csrDER: csr.der, extensions: "subjectAltName=DNS:a.test\nauthorityKeyIdentifier=keyid\n")
            let storage = try ACMEStorage(root: folder.path("storage"))
            try storage.storeCertificate(name: "a.test", chainPEM: chain, keyPEM: try key.pem())
            let manager = try CertificateManager(
                configuration: .init(
                    directory: try ACMEURL("https://127.0.0.1:\(ca.port)/dir"), directoryCA: ca.directory.path("ca.pem"),
                    storage: folder.path("storage"), challenges: ["http-01"], rescanInterval: 1, renewalCheckSpread: 0),
                logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            manager.want(["a.test"])
            manager.loadStored()
            let before = try #require(manager.statusesByName().statuses["a.test"])
            #expect(before.state == .valid && before.renewAt != nil)
            manager.start()
            defer { manager.stop() }
            // It asks about the stored certificate by its RFC 9773 identifier.
            let leaf = try CertificateChain(pem: chain).certificates[0]
            let id = try #require(try RenewalInfo.certificateID(leafDER: leaf))
            let asked = eventually(attempts: 200) {
                let count = try? Tool.run("curl", ["-sS", "--cacert", ca.directory.path("ca.pem"), "https://127.0.0.1:\(ca.port)/count"])
                return count?.text.contains("\"ari_ids\": [\"\(id)\"") == true
            }
            #expect(asked, "the manager never asked for the renewal window of \(id)")
            if due {
                // The moment it leaves `valid` (an order then runs against the fake CA), its
                // renewal time is the window's, earlier than the third-of-lifetime rule's.
                var renewAtWhenDue: Int64?
                #expect(
                    eventually(attempts: 400, interval: 0.02) {
                        guard let status = manager.statusesByName().statuses["a.test"], status.state != .valid else { return false }
                        renewAtWhenDue = status.renewAt
                        return true
                    }, "\(manager.statuses())")
                #expect((renewAtWhenDue ?? .max) < before.renewAt!)
            } else {
                // A sleep, not a wait: what is checked is that the certificate stays as it is,
                // and the manager shows no count of its passes to wait on.
                Thread.sleep(forTimeInterval: 1)
                #expect(manager.statusesByName().statuses["a.test"]?.state == .valid)
                #expect(manager.statusesByName().statuses["a.test"]?.renewAt == before.renewAt)
            }
        }
    }
}
