import Foundation
import TestSupport
import Testing

/// A changed aasad.yaml applied while serving: each live key takes effect without a
/// restart, an invalid file changes nothing, and keys only a new process can apply are reported.
@Suite("aasad.yaml changed while serving")
final class LiveSettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    func cacheControl(_ server: RunningServer) throws -> String? {
        try server.https("a.test", "/.well-known/apple-app-site-association").headers["cache-control"]
    }

    func metrics(_ server: RunningServer) throws -> String {
        String(decoding: try server.admin("/metrics").body, as: UTF8.self)
    }

    /// Whether the server closes a kept-alive connection within `seconds` of its last response.
    func closesIdle(_ server: RunningServer, within seconds: Int) throws -> Bool {
        let script = """
            import socket, ssl, sys, time
            context = ssl.create_default_context(); context.check_hostname = False; context.verify_mode = ssl.CERT_NONE
            tls = context.wrap_socket(socket.create_connection(("127.0.0.1", \(server.httpsPort))), server_hostname="a.test")
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

    /// Whether the server closes a TCP connection that never starts its TLS handshake within `seconds`.
    func closesSilent(_ server: RunningServer, within seconds: Int) throws -> Bool {
        let script = """
            import socket
            raw = socket.create_connection(("127.0.0.1", \(server.httpsPort)))
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

    @Test("cache-control, logging, the access log, timeouts and the CDN watch change while serving; an invalid file changes nothing")
    func liveKeys() throws {
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\n".utf8))
        let server = try RunningServer(config: config)
        #expect(try cacheControl(server) == "max-age=11")
        #expect(try !closesIdle(server, within: 3))
        #expect(try !closesSilent(server, within: 3))
        #expect(try !metrics(server).contains("aasad_cdn_sites"))
        let accessLog = config.path("access.log")

        try config.write(
            "config/aasad.yaml",
            Array(
                """
                cache-control: max-age=22
                timeouts: {idle: 1, handshake: 1}
                logging: {level: debug, format: json, access-log: \(accessLog)}
                cdn-watch: {enabled: true, url: "https://127.0.0.1:9/a/v1/", rate: 1}

                """.utf8))
        #expect(server.waitForLog("aasad.yaml applied"))
        #expect(eventually { (try? cacheControl(server)) == "max-age=22" })
        // Workers take the new limits at their next tick, within a second; a sleep, because the
        // server shows no sign that every worker has (Server.Tuner in Sources/HTTPServer).
        usleep(1_100_000)
        #expect(try closesIdle(server, within: 5))
        #expect(try closesSilent(server, within: 5))
        #expect(eventually { (try? String(contentsOfFile: accessLog, encoding: .utf8))?.contains("\"status\":200") ?? false })
        #expect(try metrics(server).contains("aasad_cdn_sites"))
        // The log is JSON from the change on, at the debug level.
        #expect(server.waitForLog("\"level\":\"debug\""))

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
        // Back to the defaults: idle connections are kept again, the CDN watch is gone, and the
        // log at the error level says nothing about the change it applies.
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\nlogging: {level: error}\n".utf8))
        #expect(eventually { (try? cacheControl(server)) == "max-age=11" })
        // The workers' next tick, as above.
        usleep(1_100_000)
        #expect(try !closesIdle(server, within: 3))
        #expect(try !metrics(server).contains("aasad_cdn_sites"))
        #expect(server.stop() == 0)
        let log = server.log()
        #expect(log.contains("timeouts.idle: must be whole seconds from 1 to 86400, not \\\"never\\\""), "\(log)")
        #expect(log.contains("\"keys\":\"tls.min-version\""), "\(log)")
        #expect(log.components(separatedBy: "aasad.yaml applied").count == 3, "\(log)")
    }
}

/// `timeouts.shutdown-delay` (Kubernetes): on SIGTERM the process turns unready
/// (`/readyz` 503) and goes on serving for the delay, then stops accepting and drains.
@Suite("stopping: unready before accepting stops")
final class ShutdownDelayTests {
    @Test("with a delay set while serving, /readyz is 503 while HTTPS still answers, then the process drains and exits 0")
    func unreadyFirst() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config)
        #expect(try server.admin("/readyz").status == 200)
        try config.write("config/aasad.yaml", Array("timeouts: {shutdown-delay: 3}\n".utf8))
        #expect(server.waitForLog("aasad.yaml applied"))
        server.signal(SIGTERM)
        #expect(eventually { (try? server.admin("/readyz").status) == 503 })
        // Unready, and still serving new connections.
        let served = try server.https("a.test", "/.well-known/apple-app-site-association")
        #expect(served.status == 200 && served.body == config.aasa)
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
        #expect(throws: (any Error).self) { try server.https("a.test", "/.well-known/apple-app-site-association") }
        #expect(server.log().contains("unready; serving 3 s more before accepting stops"))
    }

    @Test("a second SIGTERM cuts the delay short")
    func secondSignal() throws {
        let config = try TestConfig()
        let server = try RunningServer(config: config, extra: ["--shutdown-delay", "300"])
        server.signal(SIGTERM)
        #expect(eventually { (try? server.admin("/readyz").status) == 503 })
        server.signal(SIGTERM)
        server.process.waitUntilExit()
        #expect(server.process.terminationStatus == 0)
    }
}
