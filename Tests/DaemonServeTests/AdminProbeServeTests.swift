import Daemon
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

    @Test("/healthz, /readyz and /metrics answer while a /sites render is held; the /sites asked meanwhile share one render")
    func probesBesideRender() throws {
        let (server, render, gate) = try holdingRenders(sites: 10)
        defer {
            render.holdRenders(nil)
            gate.release()
        }
        // No page is rendered yet: the first /sites starts a render, held; a /healthz pipelined
        // behind it on the same connection waits for it, in order.
        let first = try #require(Loopback.connect(port: server.adminPort))
        defer { close(first) }
        Loopback.send(
            first,
            Array(
                "GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\nGET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8))
        #expect(gate.waitHeld(), "no render started")
        // Two more while it is held: they wait for the next render, together.
        let others = try (0..<2).map { _ in try #require(Loopback.connect(port: server.adminPort)) }
        defer { others.forEach { close($0) } }
        for fd in others { Loopback.send(fd, Array("GET /sites HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)) }
        // The admin worker's thread is free: probes and scrapes answer while the render is held.
        for _ in 0..<3 {
            #expect(try server.admin("/healthz").status == 200)
            #expect(try server.admin("/readyz").status == 200)
            #expect(try server.admin("/metrics").status == 200)
        }
        #expect(render.renders == 1)
        render.holdRenders(nil)
        gate.release()
        for fd in [first] + others { Loopback.setReceiveTimeout(fd, seconds: 10) }
        let pipelined = String(decoding: Loopback.receiveAll(first), as: UTF8.self)
        let sitesEnd = try #require(pipelined.range(of: "]}"), "no /sites page: \(pipelined.prefix(300))")
        #expect(pipelined.hasPrefix("HTTP/1.1 200 OK\r\n") && pipelined.contains("s9.render.test"))
        #expect(pipelined[sitesEnd.upperBound...].hasPrefix("HTTP/1.1 200 OK\r\n") && pipelined.hasSuffix("\r\n\r\nok\n"))
        for fd in others {
            let text = String(decoding: Loopback.receiveAll(fd), as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n") && text.contains("s9.render.test") && text.hasSuffix("]}"))
        }
        // The held render and one more for the two that asked during it.
        #expect(render.renders == 2)
        // Nothing changed since: the rendered page is answered on the admin thread, no render.
        #expect(try server.admin("/sites").status == 200)
        #expect(render.renders == 2)
    }

    @Test("a client that asks for /sites and hangs up (FIN) while the render is held is closed at once")
    func hangUpWhileWaiting() throws {
        let (server, render, gate) = try holdingRenders(sites: 1)
        defer {
            render.holdRenders(nil)
            gate.release()
        }
        let fd = try #require(Loopback.connect(port: server.adminPort))
        defer { close(fd) }
        Loopback.send(fd, Array("GET /sites HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8))
        #expect(gate.waitHeld(), "no render started")
        // The waiting connection is closed while the render is still held: the client reads EOF.
        shutdown(fd, Int32(SHUT_WR))
        Loopback.setReceiveTimeout(fd, seconds: 10)
        var byte: UInt8 = 0
        #expect(recv(fd, &byte, 1, 0) == 0, "the server did not close the waiting connection")
        #expect(render.renders == 1)
    }

    /// A daemon with `sites` sites whose `/sites` renders wait on the gate where they begin.
    private func holdingRenders(sites: Int) throws -> (TestDaemon, PageRender, Gate) {
        for i in 0..<sites {
            try config.write("config/sites/s\(i).render.test/apple-app-site-association", config.aasa)
        }
        let server = try TestDaemon(config: config)
        let render = try #require(server.daemon.sitesRender)
        let gate = Gate()
        render.holdRenders { gate.hold() }
        return (server, render, gate)
    }
}
