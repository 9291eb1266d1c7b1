import DaemonTesting
import Foundation
import TestSupport
import Testing

/// The admin listener of a daemon in-process: its probes answer while a client holds a large
/// `/sites` answer unread and another asks for it again and again.
@Suite("aasad serve: admin probes stay independent of a held /sites")
final class AdminProbeServeTests {
    let config: TestConfig
    /// Enough sites that `/sites` is far larger than a socket buffer (about 300 bytes each), few
    /// enough that they load in about a second.
    static let siteCount = 2000

    init() throws {
        config = try TestConfig()
    }

    @Test("/healthz and /readyz answer while one client holds /sites half-read and another asks for it again and again")
    func probesBesideSites() throws {
        for i in 0..<Self.siteCount {
            try config.write("config/sites/s\(i).bulk.test/apple-app-site-association", config.aasa)
        }
        let server = try TestDaemon(config: config)
        // A client that asks for /sites and reads none of it: its answer waits in the server.
        guard let stalled = Loopback.connect(port: server.adminPort, receiveBuffer: 4096) else {
            Issue.record("cannot connect to the admin listener")
            return
        }
        defer { close(stalled) }
        Loopback.send(stalled, Array("GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        for _ in 0..<5 {
            let sites = try server.admin("/sites")
            #expect(sites.status == 200)
            let json = try JSONSerialization.jsonObject(with: Data(sites.body)) as? [String: Any]
            #expect((json?["sites"] as? [Any])?.count ?? 0 > Self.siteCount)
            #expect(try server.admin("/healthz").status == 200)
            #expect(try server.admin("/readyz").status == 200)
        }
        // The stalled client still gets its whole answer when it reads.
        Loopback.setReceiveTimeout(stalled, seconds: 10)
        var head = [UInt8](repeating: 0, count: 12)
        #expect(recv(stalled, &head, head.count, Int32(MSG_WAITALL)) == 12)
        #expect(String(decoding: head, as: UTF8.self) == "HTTP/1.1 200")
    }
}
