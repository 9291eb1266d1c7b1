import DaemonTesting
import Foundation
import TestSupport
import Testing

/// A changed aasad.yaml applied while a daemon serves in-process: each live key takes effect
/// without a restart, an invalid file changes nothing, and keys only a new process can apply are
/// reported. The log's level and format are the process's own (`LogControl`), so the case that
/// changes them stays on the binary (Tests/aasadTests/LiveSettingsTests.swift).
@Suite("aasad serve: aasad.yaml changed while serving")
final class LiveSettingsServeTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    func cacheControl(_ server: TestDaemon) throws -> String? {
        try server.https("a.test", "/.well-known/apple-app-site-association").headers["cache-control"]
    }

    func metrics(_ server: TestDaemon) throws -> String {
        String(decoding: try server.admin("/metrics").body, as: UTF8.self)
    }

    /// Whether the daemon closes a kept-alive connection within `seconds` of its last response.
    static func closesIdle(port: Int, within seconds: Int) throws -> Bool {
        let script = """
            import socket, ssl, sys, time
            context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
            tls = context.wrap_socket(socket.create_connection(("127.0.0.1", \(port))), server_hostname="a.test")
            tls.sendall(b"GET /.well-known/apple-app-site-association HTTP/1.1\\r\\nHost: a.test\\r\\n\\r\\n")
            data = tls.recv(65536)
            tls.settimeout(\(seconds))
            try:
                while True:
                    if not tls.recv(65536):
                        print("closed"); break
            except (socket.timeout, TimeoutError):
                print("open")
            """
        return try Tool.run("python3", ["-c", script]).text.contains("closed")
    }

    /// Whether the daemon closes a TCP connection that never starts its TLS handshake within `seconds`.
    static func closesSilent(port: Int, within seconds: Int) throws -> Bool {
        let script = """
            import socket
            raw = socket.create_connection(("127.0.0.1", \(port)))
            raw.settimeout(\(seconds))
            try:
                print("closed" if not raw.recv(1) else "data")
            except (socket.timeout, TimeoutError):
                print("open")
            except ConnectionResetError:
                print("closed")
            """
        return try Tool.run("python3", ["-c", script]).text.contains("closed")
    }

    @Test("cache-control, the access log, timeouts and the CDN watch change while serving; an invalid file changes nothing")
    func liveKeys() throws {
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\n".utf8))
        let server = try TestDaemon(config: config)
        #expect(try cacheControl(server) == "max-age=11")
        #expect(try !Self.closesIdle(port: server.httpsPort, within: 3))
        #expect(try !Self.closesSilent(port: server.httpsPort, within: 3))
        #expect(try !metrics(server).contains("aasad_cdn_sites"))
        let accessLog = config.path("access.log")

        let before = server.daemon.reloadGeneration
        try config.write(
            "config/aasad.yaml",
            Array(
                """
                cache-control: max-age=22
                timeouts: {idle: 1, handshake: 1}
                logging: {access-log: \(accessLog)}
                cdn-watch: {enabled: true, url: "https://127.0.0.1:9/a/v1/", rate: 1}

                """.utf8))
        #expect(server.waitForLog("aasad.yaml applied"))
        #expect(server.waitForReload(after: before))
        #expect(try cacheControl(server) == "max-age=22")
        // Workers take the new limits at their next tick: waited on, not slept past.
        #expect(eventually { server.daemon.limitsTakenByEveryWorker })
        #expect(try Self.closesIdle(port: server.httpsPort, within: 5))
        #expect(try Self.closesSilent(port: server.httpsPort, within: 5))
        #expect(eventually { (try? String(contentsOfFile: accessLog, encoding: .utf8))?.contains(" 200 ") ?? false })
        #expect(try metrics(server).contains("aasad_cdn_sites"))

        // Invalid: nothing changes, the reason is logged.
        try config.write("config/aasad.yaml", Array("cache-control: max-age=33\ntimeouts: {idle: never}\n".utf8))
        #expect(server.waitForLog("is not valid; the settings in force are kept"))
        #expect(try cacheControl(server) == "max-age=22")
        // An access log that cannot be opened refuses the whole change.
        try config.write(
            "config/aasad.yaml", Array("cache-control: max-age=44\nlogging: {access-log: \(config.path("no/such/dir/a.log"))}\n".utf8))
        #expect(server.waitForLog("cannot be applied; the settings in force are kept"))
        #expect(try cacheControl(server) == "max-age=22")

        // Keys only a new process applies are reported; the rest of the change applies.
        try config.write("config/aasad.yaml", Array("cache-control: max-age=55\ntls: {min-version: \"1.3\"}\n".utf8))
        #expect(server.waitForLog("these changes need a new process"))
        // Still TLS 1.2 as started: only a new process changes that.
        #expect(try server.https("a.test", "/apple-app-site-association", ["--tls-max", "1.2"]).status == 200)
        #expect(eventually { (try? cacheControl(server)) == "max-age=55" })
        // Back to the defaults: idle connections are kept again and the CDN watch is gone.
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\n".utf8))
        #expect(eventually { (try? cacheControl(server)) == "max-age=11" })
        #expect(eventually { server.daemon.limitsTakenByEveryWorker })
        #expect(try !Self.closesIdle(port: server.httpsPort, within: 3))
        #expect(try !metrics(server).contains("aasad_cdn_sites"))
        #expect(server.stop())
        let log = server.log()
        #expect(log.contains("timeouts.idle: must be whole seconds from 1 to 86400, not"), "\(log)")
        #expect(log.contains("tls.min-version"), "\(log)")
        #expect(log.components(separatedBy: "aasad.yaml applied").count == 4, "\(log)")
    }
}
