import Foundation
import HTTPCore
import Logging
import Served
import Testing

@testable import SiteStore

@Suite("A certificate pair's identity and directory")
struct CertificateIdentityTests {
    @Test("is the SHA-256 of chain, a zero byte and key in lower-case hex, as sha256sum writes it; another byte, another identity")
    func digestOfBytes() throws {
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 31, 32, 33, 700, 4_096] {
            let chain = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let key = (0..<(length / 3)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let files = CertificateFiles(directory: "sites/a.test/tls", chainPEM: chain, keyPEM: key)
            // The same digest from outside the process: the identity keys the verdicts kept
            // between runs and the shared TLS contexts.
            let input = FileManager.default.temporaryDirectory.appendingPathComponent("identity-\(UUID().uuidString)")
            try Data(chain + [0] + key).write(to: input)
            defer { try? FileManager.default.removeItem(at: input) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
            process.arguments = [input.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(files.identity == String(printed.prefix(64)), "\(length) bytes")
            #expect(files.identity.utf8.count == 64)
            // Its bytes, as the verdicts are looked up by: the same digest.
            #expect(files.withIdentityBytes { Hex.string($0) } == files.identity)
            var changed = chain + [0]
            changed[changed.count - 1] ^= 1
            #expect(CertificateFiles(directory: "sites/a.test/tls", chainPEM: changed, keyPEM: key).identity != files.identity)
            #expect(CertificateFiles(directory: "sites/b.test/tls", chainPEM: chain, keyPEM: key).identity == files.identity)
        }
    }

    @Test("a site's pair names its own tls/ in messages, whatever its spelling; another folder its path")
    func directory() throws {
        let c = try TempConfig()
        for name in ["a.test", "B.test", "c.test"] {
            try c.write(
                "sites/\(name)/apple-app-site-association",
                #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#)
            try c.write("sites/\(name)/tls/cert.pem", "chain of \(name)")
            try c.write("sites/\(name)/tls/key.pem", "key of \(name)")
        }
        let registry = SiteRegistry(root: c.root, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        let snapshot = registry.reloadAll()
        for name in ["a.test", "B.test", "c.test"] {
            let files = try #require(snapshot.sites[name]?.certificate, "\(name)")
            #expect(files.directory == "sites/\(name)/tls")
            #expect(String(decoding: files.chainPEM, as: UTF8.self) == "chain of \(name)")
        }
        #expect(CertificateFiles(directory: "tls", chainPEM: [1], keyPEM: [2]).directory == "tls")
        let named = CertificateFiles(siteNamed: "a.test", chainPEM: [1], keyPEM: [2])
        #expect(named == CertificateFiles(directory: "sites/a.test/tls", chainPEM: [1], keyPEM: [2]))
        #expect(named != CertificateFiles(siteNamed: "b.test", chainPEM: [1], keyPEM: [2]))
        // The same place with other bytes is another pair (a reload keeps a site's pair only when
        // it is equal), and the same bytes elsewhere have the same identity.
        #expect(named != CertificateFiles(siteNamed: "a.test", chainPEM: [1], keyPEM: [3]))
        #expect(named != CertificateFiles(directory: "sites/a.test/tls", chainPEM: [1, 0], keyPEM: [2]))
        #expect(named.hasSameBytes(as: CertificateFiles(directory: "tls", chainPEM: [1], keyPEM: [2])))
        #expect(!named.hasSameBytes(as: CertificateFiles(siteNamed: "a.test", chainPEM: [1], keyPEM: [2, 2])))
    }
}
