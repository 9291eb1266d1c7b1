import Foundation
import Glibc
import TestSupport
import Testing

@testable import TLS

/// What the development CA reads and writes in its directory, which under `--user` lies in a
/// state directory that user owns (Sources/aasad/Privileges.swift): root, at the next start,
/// must neither write where a planted link leads nor read a planted FIFO or link.
@Suite("the development CA's directory")
struct DevelopmentStorageTests {
    @Test("a dev-tls that is a symbolic link is refused: nothing is written where it leads")
    func linkedDirectory() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let elsewhere = scratch.path("elsewhere")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: scratch.path("dev-tls"), withDestinationPath: elsewhere)
        #expect(throws: TLSError.self) { try DevelopmentCertificate.issue(directory: scratch.path("dev-tls"), hosts: ["a.test"]) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
    }

    @Test("a FIFO or a link planted as a CA file is not read nor followed; the files are replaced, the key 0600")
    func plantedFiles() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let directory = scratch.path("dev-tls")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let secret = scratch.path("secret")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: secret))
        #expect(mkfifo(directory + "/ca.pem", 0o644) == 0)
        try FileManager.default.createSymbolicLink(atPath: directory + "/ca-key.pem", withDestinationPath: secret)
        try FileManager.default.createSymbolicLink(atPath: directory + "/key.pem", withDestinationPath: secret)
        let issued = try DevelopmentCertificate.issue(directory: directory, hosts: ["a.test"])
        #expect(issued.authorityCreated)
        #expect(try String(contentsOfFile: secret, encoding: .utf8) == "keep me")
        for name in ["ca.pem", "ca-key.pem", "cert.pem", "key.pem"] {
            var info = stat()
            #expect(lstat(directory + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFREG, "\(name)")
            if name.hasSuffix("key.pem") { #expect(info.st_mode & 0o777 == 0o600, "\(name)") }
        }
    }

    @Test("a stored CA file of maximumStoredFileSize bytes is read back; one byte more and a new CA is made")
    func storedFileBound() throws {
        let scratch = try TemporaryDirectory(prefix: "aasad-tls-test")
        let directory = scratch.path("dev-tls")
        #expect(try DevelopmentCertificate.issue(directory: directory, hosts: ["a.test"]).authorityCreated)
        for (extra, created) in [(0, false), (1, true)] {
            // PEM readers skip what follows the block: padding keeps the same CA.
            let path = directory + "/ca.pem"
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            bytes += [UInt8](repeating: 0x0A, count: DevelopmentCertificate.maximumStoredFileSize + extra - bytes.count)
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            #expect(try DevelopmentCertificate.issue(directory: directory, hosts: ["a.test"]).authorityCreated == created, "\(extra)")
        }
    }
}
