import Foundation
import Glibc
import Logging
import TestSupport
import Testing

@testable import Daemon

/// A replica's record in `<storage>/replicas` (Sources/ACME/ReplicaPresence.swift) makes every
/// other replica's order wait for it: a start that fails after the certificate manager is made
/// must leave none behind, or the others wait the whole pause for a replica that never served.
@Suite("The daemon's replica record after a failed start")
struct ReplicaRecordStartTests {
    @Test("a start refused at its listeners, after the certificate manager was made, leaves no replica record, each time")
    func failedListenLeavesNoRecord() throws {
        var (folder, settings) = try DaemonTests.oneSite()
        // The manager is made without a word to the CA: a directory nobody answers will do.
        settings.acme.directory = "https://127.0.0.1:1/dir"
        // A listener without SO_REUSEPORT on the HTTPS port: the daemon's bind fails.
        let (socket, port) = try Self.plainListener()
        defer { close(socket) }
        settings.https = ["127.0.0.1:\(port)"]
        let records = folder.path("state/acme/replicas")
        for _ in 0..<3 {
            let daemon = Daemon(
                configDirectory: folder.path("config"), settings: settings, logger: Logger(label: "daemon-test"), output: { _ in })
            #expect(throws: StartFailure.self) { try daemon.start() }
            daemon.stop(drain: false)
            // The manager was made (its storage is there), and its record is gone.
            #expect(FileManager.default.fileExists(atPath: records))
            #expect(try FileManager.default.contentsOfDirectory(atPath: records) == [])
        }
    }

    struct Failure: Error {}

    /// A socket listening on 127.0.0.1 without SO_REUSEPORT, and its port.
    static func plainListener() throws -> (Int32, Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure() }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(fd, address, length) == 0 && listen(fd, 1) == 0 && getsockname(fd, address, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw Failure()
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
