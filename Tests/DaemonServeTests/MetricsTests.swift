import DaemonTesting
import Foundation
import TestSupport
import Testing

@testable import Daemon

/// `/metrics` read as Prometheus reads it, on a daemon in this process: the page goes through
/// prometheus_client's text parser (TestSupport's `Metrics`) and every sample is looked up by
/// name and labels.
@Suite("aasad serve: /metrics")
final class MetricsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    @Test("the page parses as Prometheus text, every family has help, and the counters start where they should")
    func parses() throws {
        let server = try TestDaemon(config: config)
        let metrics = try Metrics(server)
        for family in [
            "aasad_tls_handshakes", "aasad_tls_handshake_failures", "aasad_connections_accepted", "aasad_connections_open",
            "aasad_connection_timeouts", "aasad_apple_fetches", "aasad_sites", "aasad_conflicting_hosts", "aasad_config_reloads",
            "aasad_config_reload_failures", "aasad_config_last_reload_successful", "aasad_build_info", "process_resident_memory_bytes",
            "process_cpu_seconds", "process_open_fds", "process_start_time_seconds",
        ] {
            #expect(metrics.families[family] != nil, "missing \(family)")
            #expect(metrics.families[family]?.help.isEmpty == false, "\(family) has no help")
        }
        #expect(metrics.families["aasad_tls_handshakes"]?.type == "counter")
        #expect(metrics.families["aasad_connections_open"]?.type == "gauge")
        // TestConfig: a.test, *.w.test and own.test serve; bad.test never had a good file.
        #expect(metrics["aasad_sites", ["state": "serving"]] == 3)
        #expect(metrics["aasad_sites", ["state": "refused"]] == 1)
        #expect(metrics["aasad_sites", ["state": "serving-last-good"]] == 0)
        #expect(metrics["aasad_config_last_reload_successful"] == 0, "bad.test was refused at start")
        #expect(metrics["aasad_tls_handshake_failures_total", ["reason": "timeout"]] == 0)
        #expect(metrics["process_resident_memory_bytes"] > 1_000_000)
        #expect(metrics["process_open_fds"] > 0)
        let now = Date().timeIntervalSince1970
        #expect(metrics["process_start_time_seconds"] > now - 120 && metrics["process_start_time_seconds"] <= now)
    }

    @Test("every family on the page has one # HELP line, the exporter's text, right before its # TYPE line")
    func helpPerFamily() throws {
        let server = try TestDaemon(config: config)
        #expect(try server.http("a.test", "/apple-app-site-association").status == 200)
        var page = ""
        #expect(
            try eventually {
                page = String(decoding: try server.admin("/metrics").body, as: UTF8.self)
                return page.contains("\naasad_requests_total{")
            }, "the request was never counted")
        let lines = page.split(separator: "\n").map(String.init)
        var families: Set<String> = []
        for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
            let name = String(line.dropFirst(7).prefix { $0 != " " })
            families.insert(name)
            let help = "# HELP \(name) "
            #expect(lines.filter { $0.hasPrefix(help) }.count == 1, "\(name): not one HELP line")
            let text = index > 0 && lines[index - 1].hasPrefix(help) ? String(lines[index - 1].dropFirst(help.count)) : ""
            #expect(!text.isEmpty && text == MetricsExporter.helpTexts[name], "\(name): help \(text.debugDescription)")
        }
        // This server has no automatic certificates, no CDN watch and no routes: those families
        // are absent (ACMEServeTests, CDNWatchTests and RouteServeTests read them).
        #expect(
            families
                == Set(MetricsExporter.helpTexts.keys).subtracting(MetricsExporter.automaticCertificateFamilies)
                .subtracting(MetricsExporter.cdnWatchFamilies).subtracting(MetricsExporter.routeFamilies),
            "families without help text, or help text without a family")
    }

    @Test("requests count by protocol, site class, path and status class; Apple's fetches by status")
    func requests() throws {
        let server = try TestDaemon(config: config)
        let before = try Metrics(server)
        #expect(try server.http("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(try server.http("a.test", "/.well-known/apple-app-site-association").status == 200)
        #expect(try server.http("a.test", "/apple-app-site-association", ["-A", "AASA-Bot/1.0.0"]).status == 200)
        #expect(try server.http("nobody.test", "/.well-known/apple-app-site-association", ["-A", "AASA-Bot/1.0.0"]).status == 404)
        #expect(try server.https("www.a.test", "/.well-known/assetlinks.json", ["--http2"]).status == 200)
        #expect(try server.https("a.test", "/index.html", ["--http2"]).status == 404)
        let etag = try server.http("a.test", "/apple-app-site-association").headers["etag"] ?? ""
        #expect(try server.http("a.test", "/apple-app-site-association", ["-H", "If-None-Match: \(etag)"]).status == 304)
        #expect(String(decoding: server.raw(Array("GET / HTTP/1.1\r\n\r\n".utf8)), as: UTF8.self).hasPrefix("HTTP/1.1 400"))

        let after = try Metrics(server)
        func delta(_ labels: [String: String]) -> Double {
            after["aasad_requests_total", labels] - before["aasad_requests_total", labels]
        }
        let wellKnown = "/.well-known/apple-app-site-association"
        #expect(delta(["protocol": "1.1", "site": "configured", "path": wellKnown, "status": "2xx"]) == 2)
        #expect(delta(["protocol": "1.1", "site": "configured", "path": "/apple-app-site-association", "status": "2xx"]) == 2)
        #expect(delta(["protocol": "1.1", "site": "configured", "path": "/apple-app-site-association", "status": "3xx"]) == 1)
        #expect(delta(["protocol": "1.1", "site": "unknown", "path": wellKnown, "status": "4xx"]) == 1)
        #expect(delta(["protocol": "2", "site": "configured", "path": "/.well-known/assetlinks.json", "status": "2xx"]) == 1)
        #expect(delta(["protocol": "2", "site": "configured", "path": "other", "status": "4xx"]) == 1)
        #expect(delta(["protocol": "1.1", "site": "unknown", "path": "other", "status": "4xx"]) == 1, "the 400 for a missing Host")
        // From 127.0.0.1, so not from Apple's network (17.0.0.0/8): the User-Agent alone is spoofable.
        for status in ["2xx", "4xx"] {
            let outside = ["status": status, "apple_network": "false"]
            let inside = ["status": status, "apple_network": "true"]
            #expect(after["aasad_apple_fetches_total", outside] - before["aasad_apple_fetches_total", outside] == 1)
            #expect(after["aasad_apple_fetches_total", inside] - before["aasad_apple_fetches_total", inside] == 0)
        }
        #expect(after.series("aasad_apple_fetches_total").count == 4 * 2, "status class × apple_network")
        // Two HTTPS connections, both full TLS 1.3 handshakes choosing h2 (curl offers it).
        let h2 = ["version": "1.3", "resumed": "false", "protocol": "2"]
        #expect(after["aasad_tls_handshakes_total", h2] - before["aasad_tls_handshakes_total", h2] == 2)
        #expect(
            after["aasad_connections_accepted_total", ["listener": "https"]]
                - before["aasad_connections_accepted_total", ["listener": "https"]] == 2)
        #expect(
            after["aasad_connections_accepted_total", ["listener": "http"]]
                - before["aasad_connections_accepted_total", ["listener": "http"]] == 7)
        // The admin listener's own scrapes are not counted as requests.
        #expect(after.series("aasad_requests_total").allSatisfy { !$0.contains("metrics") })
        // /sites counts the fetch on the site's own entry.
        let json = try JSONSerialization.jsonObject(with: Data(try server.admin("/sites").body)) as? [String: Any]
        let site = (json?["sites"] as? [[String: Any]] ?? []).first { $0["directory"] as? String == "a.test" }
        #expect(site?["appleFetches"] as? Int == 1)
        #expect(site?["appleFetchesFromAppleNetwork"] as? Int == 0)
        #expect(site?["lastAppleFetchFromAppleNetwork"] as? Bool == false)
        #expect(site?["lastAppleFetch"] as? Int ?? 0 > 0)
    }

    @Test("sites Apple's CDN has not fetched, and the oldest last fetch: two series whatever the sites (deploy/monitoring alerts on them)")
    func appleFetchLook() throws {
        // A site with assetlinks.json only has nothing for Apple to fetch: never counted.
        try config.write("config/sites/android.test/assetlinks.json", config.assetLinks)
        let server = try TestDaemon(config: config)
        let start = Date().timeIntervalSince1970
        var metrics = try Metrics(server)
        // a.test, *.w.test and own.test serve an AASA file; bad.test is refused.
        #expect(metrics["aasad_apple_unfetched_sites"] == 3)
        #expect(metrics["aasad_apple_fetch_oldest_last_timestamp_seconds"] == 0)
        // Not fetches of a site: a browser's request, Apple's User-Agent for a host of no site or
        // for the Android file.
        let aasa = "/.well-known/apple-app-site-association"
        #expect(try server.http("a.test", aasa).status == 200)
        #expect(try server.http("nobody.test", aasa, ["-A", "AASA-Bot/1.0.0"]).status == 404)
        #expect(try server.http("android.test", "/.well-known/assetlinks.json", ["-A", "AASA-Bot/1.0.0"]).status == 200)
        metrics = try Metrics(server)
        #expect(metrics["aasad_apple_unfetched_sites"] == 3)
        #expect(metrics["aasad_apple_fetch_oldest_last_timestamp_seconds"] == 0)

        // The alias fetches its site's file: a.test counts as fetched.
        #expect(try server.http("www.a.test", aasa, ["-A", "AASA-Bot/1.0.0"]).status == 200)
        metrics = try Metrics(server)
        #expect(metrics["aasad_apple_unfetched_sites"] == 2)
        let oldest = metrics["aasad_apple_fetch_oldest_last_timestamp_seconds"]
        #expect(oldest >= start.rounded(.down) && oldest <= Date().timeIntervalSince1970)

        // A removed site's fetch no longer counts: it would hold the oldest back for good.
        try FileManager.default.removeItem(atPath: config.path("config/sites/www.a.test"))
        try FileManager.default.removeItem(atPath: config.path("config/sites/a.test"))
        #expect(server.reload())
        metrics = try Metrics(server)
        #expect(metrics["aasad_apple_unfetched_sites"] == 2)
        #expect(metrics["aasad_apple_fetch_oldest_last_timestamp_seconds"] == 0)
    }

    @Test("labels stay bounded whatever hosts and paths clients send")
    func boundedLabels() throws {
        let server = try TestDaemon(config: config)
        for i in 0..<150 {
            let host = "random-\(i)-\(UUID().uuidString.prefix(8)).test"
            let request = "GET /p/\(UUID().uuidString) HTTP/1.1\r\nHost: \(host)\r\nUser-Agent: AASA-Bot/\(i)\r\nConnection: close\r\n\r\n"
            #expect(String(decoding: server.raw(Array(request.utf8)), as: UTF8.self).hasPrefix("HTTP/1.1 404"))
        }
        let metrics = try Metrics(server)
        #expect(metrics["aasad_requests_total", ["protocol": "1.1", "site": "unknown", "path": "other", "status": "4xx"]] == 150)
        // At most 2 protocols x 2 site classes x 4 paths x 4 status classes.
        #expect(metrics.series("aasad_requests_total").count <= 64)
        #expect(metrics.samples.keys.allSatisfy { !$0.contains("random-") && !$0.contains("/p/") })
        #expect(metrics.samples.count < 200, "\(metrics.samples.count) series")
    }

    @Test("TLS failures count by reason: plain HTTP on the HTTPS port, an old protocol")
    func tlsFailures() throws {
        let server = try TestDaemon(config: config)
        let before = try Metrics(server)
        _ = server.raw(Array("GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8), port: server.httpsPort)
        _ = try Tool.run(
            "openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(server.httpsPort)", "-servername", "a.test", "-tls1_1", "-cipher",
                "DEFAULT:@SECLEVEL=0",
            ],
            input: [])
        let after = try Metrics(server)
        func delta(_ reason: String) -> Double {
            after["aasad_tls_handshake_failures_total", ["reason": reason]]
                - before["aasad_tls_handshake_failures_total", ["reason": reason]]
        }
        #expect(delta("not_tls") == 1)
        #expect(delta("protocol_version") == 1)
        #expect(delta("timeout") == 0)
        #expect(after["aasad_connections_open", ["listener": "https"]] == 0)
    }

    @Test("a client that never starts its handshake counts as a handshake timeout")
    func handshakeTimeout() throws {
        let server = try TestDaemon(config: config, flags: ["--handshake-timeout", "1"])
        let silent = try #require(Loopback.connect(port: server.httpsPort))
        defer { close(silent) }
        // The timeout fires on the worker's next one-second tick after the deadline.
        let after = try Metrics.wait(server) { $0["aasad_connection_timeouts_total", ["phase": "handshake"]] > 0 }
        #expect(after["aasad_connection_timeouts_total", ["phase": "handshake"]] == 1)
        #expect(after["aasad_tls_handshake_failures_total", ["reason": "timeout"]] == 1)
        #expect(after["aasad_connections_open", ["listener": "https"]] == 0)
    }

    @Test("a client that stops reading its responses is dropped after the write timeout")
    func writeTimeout() throws {
        let server = try TestDaemon(config: config, flags: ["--write-timeout", "1"])
        let fd = try #require(Loopback.connect(port: server.httpPort, receiveBuffer: 4096))
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        // Pipelined requests, never reading: the responses fill both socket buffers.
        let request = Array("GET /.well-known/assetlinks.json HTTP/1.1\r\nHost: a.test\r\n\r\n".utf8)
        let batch = Array([[UInt8]](repeating: request, count: 1000).joined())
        let start = Date()
        while Date().timeIntervalSince(start) < 1 {
            // Sends what the socket takes, then waits for room (or 10 ms) for the next batch.
            Loopback.send(fd, batch)
            var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            _ = poll(&ready, 1, 10)
        }
        let metrics = try Metrics.wait(server) { $0["aasad_connection_timeouts_total", ["phase": "write"]] > 0 }
        #expect(metrics["aasad_connection_timeouts_total", ["phase": "write"]] == 1)
        #expect(metrics["aasad_connections_open", ["listener": "http"]] == 0)
        // The server is unaffected.
        #expect(try server.http("a.test", "/apple-app-site-association").status == 200)
    }

    @Test("open connections are a level: up while clients hold them, down when they leave")
    func openConnections() throws {
        let server = try TestDaemon(config: config)
        let held = (0..<5).compactMap { _ in Loopback.connect(port: server.httpPort) }
        #expect(held.count == 5)
        let open = try Metrics.wait(server) { $0["aasad_connections_open", ["listener": "http"]] == 5 }
        #expect(open["aasad_connections_open", ["listener": "http"]] == 5)
        held.forEach { _ = close($0) }
        let closed = try Metrics.wait(server) { $0["aasad_connections_open", ["listener": "http"]] == 0 }
        #expect(closed["aasad_connections_open", ["listener": "http"]] == 0)
    }

    @Test("reloads count, a refused change is a reload failure, and sites move between states")
    func reloads() throws {
        let server = try TestDaemon(config: config)
        let start = try Metrics(server)
        func wait(until done: (Metrics) -> Bool) throws -> Metrics { try Metrics.wait(server, until: done) }
        try config.write("config/sites/a.test/apple-app-site-association", Array("{".utf8))
        let broken = try wait { $0["aasad_sites", ["state": "serving-last-good"]] == 1 }
        #expect(broken["aasad_sites", ["state": "serving-last-good"]] == 1)
        #expect(broken["aasad_sites", ["state": "serving"]] == 2)
        #expect(broken["aasad_config_reloads_total"] > start["aasad_config_reloads_total"])
        #expect(broken["aasad_config_reload_failures_total"] > start["aasad_config_reload_failures_total"])
        #expect(broken["aasad_config_last_reload_successful"] == 0)

        try config.write("config/sites/a.test/apple-app-site-association", config.aasa)
        let fixed = try wait { $0["aasad_config_last_reload_successful"] == 1 }
        #expect(fixed["aasad_config_last_reload_successful"] == 1)
        #expect(fixed["aasad_sites", ["state": "serving"]] == 3)
        #expect(fixed["aasad_config_last_reload_success_timestamp_seconds"] >= broken["aasad_config_last_reload_success_timestamp_seconds"])

        // A second site's alias on a.test's symlink name: refused to it, and counted.
        try FileManager.default.createDirectory(atPath: config.path("config/sites/other.test"), withIntermediateDirectories: true)
        try config.write("config/sites/other.test/site.yaml", Array("aliases: [www.a.test]\n".utf8))
        try config.write("config/sites/other.test/apple-app-site-association", config.ownAASA)
        let conflicted = try wait { $0["aasad_conflicting_hosts"] == 1 }
        #expect(conflicted["aasad_conflicting_hosts"] == 1)
        try FileManager.default.removeItem(atPath: config.path("config/sites/other.test"))
        #expect(try wait { $0["aasad_conflicting_hosts"] == 0 }["aasad_conflicting_hosts"] == 0)

        // The reload SIGHUP asks for is a full reload; bad.test is still refused, so it counts as a
        // failure.
        let beforeHUP = try Metrics(server)
        server.daemon.reload()
        let hup = try wait { $0["aasad_config_reloads_total"] > beforeHUP["aasad_config_reloads_total"] }
        #expect(hup["aasad_config_reloads_total"] == beforeHUP["aasad_config_reloads_total"] + 1)
        #expect(hup["aasad_config_last_reload_successful"] == 0)
    }
}
