import Foundation
import HTTPServer
import Reactor
import Testing

/// The admin listener under load (issue 10): probes answer whatever `/sites` and reloads are doing.
@Suite("aasad serve: admin probes stay independent of /sites (issue 10)")
final class AdminProbeTests {
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
        let server = try RunningServer(config: config)
        // A client that asks for /sites and reads none of it: its answer waits in the server.
        guard let stalled = Loopback.connect(port: server.adminPort, receiveBuffer: 4096) else {
            Issue.record("cannot connect to the admin listener")
            return
        }
        defer { close(stalled) }
        Loopback.send(stalled, Array("GET /sites HTTP/1.1\r\nHost: admin\r\n\r\n".utf8))
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

    @Test("/healthz, /readyz and /metrics answer while a reload holds the registry and /sites has been asked for")
    func probesDuringReload() throws {
        let server = try RunningServer(config: config, extra: ["--no-watch"])
        // A site whose file is a FIFO: the SIGHUP reload blocks reading it, holding the registry,
        // until this test writes the file. A reload over 100,000 sites holds it as long.
        let fifo = config.path("config/sites/slow.test/apple-app-site-association")
        try FileManager.default.createDirectory(atPath: config.path("config/sites/slow.test"), withIntermediateDirectories: true)
        #expect(mkfifo(fifo, 0o600) == 0)
        server.signal(SIGHUP)
        // A writer can open the FIFO without blocking once the reload has it open for reading.
        var writer: Int32 = -1
        for _ in 0..<100 where writer < 0 {
            writer = open(fifo, O_WRONLY | O_NONBLOCK)
            if writer < 0 { usleep(50_000) }
        }
        #expect(writer >= 0, "the reload never opened the FIFO")
        guard writer >= 0 else { return }
        // Nothing else may read the FIFO again: the reload already holds it open.
        unlink(fifo)
        // /sites asked for in the middle of the reload, on its own connection.
        guard let sites = Loopback.connect(port: server.adminPort) else {
            Issue.record("cannot connect to the admin listener")
            return
        }
        defer { close(sites) }
        Loopback.send(sites, Array("GET /sites HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n".utf8))
        // A probe that waits on the reload times out (curl fails, recorded as no answer): never
        // throw before the reload is let go, or the server could not stop.
        func probe(_ path: String) -> Int {
            (try? server.curl(["--max-time", "5", "http://127.0.0.1:\(server.adminPort)\(path)"]))?.status ?? 0
        }
        let health = probe("/healthz")
        let ready = probe("/readyz")
        let metrics = probe("/metrics")
        // Let the reload finish.
        _ = config.aasa.withUnsafeBytes { write(writer, $0.baseAddress, $0.count) }
        close(writer)
        #expect(health == 200, "/healthz waited for the reload")
        #expect(ready == 200, "/readyz waited for the reload")
        #expect(metrics == 200, "/metrics waited for the reload")
        Loopback.setReceiveTimeout(sites, seconds: 10)
        #expect(String(decoding: Loopback.receiveAll(sites).prefix(12), as: UTF8.self) == "HTTP/1.1 200")
    }
}

@Suite("Apple's network for AASA-Bot fetches (issue 10)")
struct AppleNetworkTests {
    @Test("17.0.0.0/8 over IPv4 and IPv4-mapped IPv6 is Apple's network; other addresses are not")
    func addresses() throws {
        for (text, apple) in [
            ("17.0.0.1:0", true), ("17.255.255.255:0", true), ("[::ffff:17.1.2.3]:0", true), ("18.0.0.1:0", false),
            ("127.0.0.1:0", false), ("16.255.255.255:0", false), ("[::1]:0", false), ("[::ffff:18.1.2.3]:0", false),
            ("[::17.1.2.3]:0", false),
        ] {
            #expect(FetchLog.isAppleNetwork(try SocketAddress(parsing: text)) == apple, "\(text)")
        }
    }
}
