import Foundation
import TestSupport
import Testing

/// A changed aasad.yaml applied while the binary serves: the log's level and format, which are
/// the process's own (`LogControl` in Sources/Daemon/LiveLogging.swift). The other live keys are
/// tested in-process (Tests/DaemonServeTests/LiveSettingsServeTests.swift).
@Suite("aasad.yaml changed while serving")
final class LiveSettingsTests {
    let config: TestConfig

    init() throws {
        config = try TestConfig()
    }

    func cacheControl(_ server: RunningServer) throws -> String? {
        try server.https("a.test", "/.well-known/apple-app-site-association").headers["cache-control"]
    }

    @Test("the log's level and format change while serving; an invalid file and new-process keys are logged in the new format")
    func liveKeys() throws {
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\n".utf8))
        let server = try RunningServer(config: config)
        #expect(try cacheControl(server) == "max-age=11")
        try config.write("config/aasad.yaml", Array("cache-control: max-age=22\nlogging: {level: debug, format: json}\n".utf8))
        #expect(server.waitForLog("aasad.yaml applied"))
        #expect(eventually { (try? cacheControl(server)) == "max-age=22" })
        // The log is JSON from the change on, at the debug level: a handshake that fails (bytes
        // that are not TLS) is logged at debug only (Sources/HTTPServer/Worker+IO.swift).
        let notTLS = """
            import socket
            s = socket.create_connection(("127.0.0.1", \(server.httpsPort)), timeout=10)
            s.sendall(b"GET / HTTP/1.1\\r\\n\\r\\n")
            try:
                s.recv(1024)
            except OSError:
                pass
            """
        _ = try Tool.run("python3", ["-c", notTLS])
        #expect(server.waitForLog("\"level\":\"debug\""))

        // Invalid: nothing changes, the reason is logged.
        try config.write(
            "config/aasad.yaml", Array("cache-control: max-age=33\nlogging: {level: debug, format: json}\ntimeouts: {idle: never}\n".utf8))
        #expect(server.waitForLog("is not valid; the settings in force are kept"))
        #expect(try cacheControl(server) == "max-age=22")

        // Keys only a new process applies are reported; the rest of the change applies.
        try config.write(
            "config/aasad.yaml",
            Array("cache-control: max-age=55\nlogging: {level: debug, format: json}\ntls: {min-version: \"1.3\"}\n".utf8))
        #expect(server.waitForLog("these changes need a new process"))
        #expect(eventually { (try? cacheControl(server)) == "max-age=55" })
        // At the error level the log says nothing about the change it applies.
        try config.write("config/aasad.yaml", Array("cache-control: max-age=11\nlogging: {level: error}\n".utf8))
        #expect(eventually { (try? cacheControl(server)) == "max-age=11" })
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
