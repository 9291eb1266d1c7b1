import Foundation
import HTTPCore
import Reactor
import TestSupport
import Testing

@testable import HTTPServer

/// The admin listener under load: probes answer through a SIGHUP reload of many large sites. The
/// probes beside a held `/sites` are tested in-process (Tests/DaemonServeTests/AdminProbeServeTests.swift).
@Suite("aasad serve: admin probes stay independent of /sites")
final class AdminProbeTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("/healthz, /readyz and /metrics answer all through a reload of many large sites, and /sites asked for in its middle is answered")
    func probesDuringReload() throws {
        try writeSites(Self.reloadSiteCount) { _ in Self.largeAASA(0) }
        let server = try RunningServer(config: config, extra: ["--no-watch"])
        guard let before = Self.reloads(inMetrics: server.raw(Self.get("/metrics"), port: server.adminPort)) else {
            Issue.record("/metrics has no aasad_config_reloads_total")
            return
        }
        // Contents the server has never seen (one per site), so that the reload validates each:
        // a content validated before is not validated again.
        try writeSites(Self.reloadSiteCount) { Self.largeAASA($0 + 1) }
        // --no-watch: the signal thread reloads, holding the registry's lock while it reads every
        // site; the counter moves only when the reload has finished.
        server.signal(SIGHUP)
        var sites: Int32?
        defer { if let sites { close(sites) } }
        var rounds = 0
        var failures: [String] = []
        var after: Int?
        let deadline = Date().addingTimeInterval(Self.reloadDeadline)
        for round in 1...Self.maxRounds where after == nil && Date() < deadline {
            var answered = true
            var reloads: Int?
            for path in ["/healthz", "/readyz", "/metrics"] {
                let answer = server.raw(Self.get(path), timeout: Self.probeTimeout, port: server.adminPort)
                let status = Self.status(of: answer)
                if status != 200 {
                    answered = false
                    failures.append("\(path) answered \(status) in round \(round)")
                }
                if path == "/metrics" { reloads = Self.reloads(inMetrics: answer) }
            }
            if let reloads, reloads != before {
                after = reloads
            } else if answered {
                rounds += 1
            }
            // /sites asked for in the middle of the reload, on its own connection, read at the end.
            if sites == nil {
                sites = Loopback.connect(port: server.adminPort)
                if let sites { Loopback.send(sites, Self.get("/sites")) }
            }
            // The probes' pace, not an order of events: each round asks every probe once.
            if after == nil { usleep(Self.pollInterval) }
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(after == before + 1, "the reload did not finish within \(Self.reloadDeadline) s (reloads \(before) -> \(after ?? -1))")
        // Had the probes waited for the reload (as when /metrics took the registry's lock), at most
        // a round begun before it took the lock, or one slipped in before its view was published,
        // would count: five mean that none waited.
        #expect(rounds >= Self.minimumRounds, "only \(rounds) probe rounds were answered while the reload ran")
        guard let sites else {
            Issue.record("cannot connect to the admin listener for /sites")
            return
        }
        Loopback.setReceiveTimeout(sites, seconds: 10)
        #expect(Self.status(of: Loopback.receiveAll(sites)) == 200, "/sites asked for during the reload was not answered")
    }

    /// Sites in the reload test, each with `largeAASA`: a debug build takes seconds to reload them
    /// on two cores, long enough for many probe rounds. Few large files rather than 10,000 small
    /// ones, which cost as much to reload but a minute to create and delete on a busy disk.
    static let reloadSiteCount = 50
    /// An AASA file just under Apple's 128 KB limit with thousands of patterns: each costs the
    /// reloader parsing, validation, pattern compilation and gzip.
    /// `version` makes each content distinct.
    static func largeAASA(_ version: Int) -> [UInt8] {
        let components = (0..<2300).map { #"{"/":"/section\#($0)/item/*","comment":"entry \#($0) v\#(version)"}"# }
        return Array(#"{"applinks":{"apps":[],"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":["#.utf8)
            + Array(components.joined(separator: ",").utf8) + Array("]}]}}".utf8)
    }
    /// Probe rounds that must be answered while the reload runs (see the assertion).
    static let minimumRounds = 5
    /// Bounds on the probe loop: a reload that never finishes ends the test instead of hanging it.
    /// The deadline is generous: validating the 50 large sites took over 15 s with the test
    /// processes of scripts/test and a release build sharing two cores, and what is asserted is
    /// that the probes are answered meanwhile, not how long the reload takes.
    static let maxRounds = 2000
    static let reloadDeadline: TimeInterval = 90
    /// A probe that waits for the reload gives up after this many seconds (recorded as status 0).
    static let probeTimeout: Double = 3
    /// Between rounds, so that five rounds span far more than the signal's way to the reloader.
    static let pollInterval: useconds_t = 20_000

    /// `count` sites named s<i>.bulk.test, each with the AASA file `bytes`.
    private func writeSites(_ count: Int, _ bytes: (Int) -> [UInt8]) throws {
        for i in 0..<count {
            try config.write("config/sites/s\(i).bulk.test/apple-app-site-association", bytes(i))
        }
    }

    private static func get(_ path: String) -> [UInt8] {
        Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
    }

    /// The status code of a raw HTTP/1.1 answer, 0 for none.
    private static func status(of answer: [UInt8]) -> Int {
        let line = String(decoding: answer.prefix(12), as: UTF8.self)
        guard line.hasPrefix("HTTP/1.1 ") else { return 0 }
        return Int(line.dropFirst(9)) ?? 0
    }

    /// aasad_config_reloads_total in a raw /metrics answer.
    private static func reloads(inMetrics answer: [UInt8]) -> Int? {
        guard status(of: answer) == 200 else { return nil }
        let name = "aasad_config_reloads_total "
        let text = String(decoding: answer, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
        return Double(line.dropFirst(name.count)).flatMap { Int(exactly: $0) }
    }
}

@Suite("Apple's network for AASA-Bot fetches")
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

@Suite("Admin answers keep their status")
struct AdminEndpointTests {
    /// Every status the server can send (`Status` is closed: an answer cannot carry an unknown
    /// one, which the endpoint once turned into 200).
    static let statuses: [Status] = [
        .ok, .notModified, .badRequest, .notFound, .methodNotAllowed, .contentTooLarge, .uriTooLong, .misdirected,
        .fieldsTooLarge, .versionNotSupported, .serviceUnavailable,
    ]

    @Test("an answer's status is the status sent, never a silent 200", arguments: statuses)
    func statusKept(_ status: Status) {
        let endpoint = AdminEndpoint { _ in .init(status: status, body: Array("x\n".utf8)) }
        let response = endpoint.respond(method: .get, authority: nil, target: "/x")
        #expect(response.status == status)
        var bytes: [UInt8] = []
        response.serialize(into: &bytes, dateLine: [])
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 \(status.rawValue) \(status.reason)\r\n"))
    }
}
