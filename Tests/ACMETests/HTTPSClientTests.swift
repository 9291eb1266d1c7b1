import Foundation
import TestSupport
import Testing

@testable import ACME

/// The HTTPS client against a hostile server on loopback (Python's http.server over TLS): bodies
/// and header sections past the bounds, redirects, a server that stalls.
@Suite("ACME HTTPS client")
final class HTTPSClientTests {
    let directory: TemporaryDirectory
    let server = Process()
    let port: Int

    static let script = #"""
        import http.server, ssl, sys, time
        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def log_message(self, *a): pass
            def do_GET(self):
                if self.path.startswith("/body/"):
                    n = int(self.path[6:])
                    self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
                    self.wfile.write(b"a" * n)
                elif self.path == "/redirect":
                    self.send_response(302); self.send_header("Location", "/body/1"); self.send_header("Content-Length", "0"); self.end_headers()
                elif self.path == "/headers":
                    self.send_response(200)
                    for i in range(100): self.send_header("X-Fill-%d" % i, "a" * 1000)
                    self.send_header("Content-Length", "0"); self.end_headers()
                elif self.path == "/stall":
                    # The sleep is the input (a server that stops mid-body), not an order of events.
                    self.send_response(200); self.send_header("Content-Length", "10"); self.end_headers()
                    self.wfile.write(b"a"); self.wfile.flush(); time.sleep(30)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        announce(server.server_address[1], sys.argv[1])
        server.serve_forever()
        """#

    init() throws {
        directory = try TemporaryDirectory(prefix: "acme-https")
        try Pebble.makeCertificates(in: directory)
        try directory.write("server.py", Array((ReadyFile.python + Self.script).utf8))
        // The server binds port 0 and announces the port it got (ReadyFile): a port picked here
        // could be another test's server by the time Python binds it.
        let portFile = directory.path("port")
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = [Tool.python3, directory.path("server.py"), portFile, directory.path("cert.pem"), directory.path("key.pem")]
        try server.run()
        port = ReadyFile.port(portFile, of: server) ?? 0
        #expect(port != 0, "the test server did not listen")
    }

    deinit {
        // SIGKILL: a child started from a test thread inherits its blocked signals (libdispatch
        // blocks them in its workers), and Python, unlike pebble (Go), does not unblock SIGTERM.
        server.killAndWait()
    }

    func get(_ path: String, timeout: Int = 30_000) throws(ACMEError) -> HTTPSResponse {
        var configuration = HTTPSClient.Configuration(caFile: directory.path("ca.pem"))
        configuration.totalTimeoutMilliseconds = timeout
        return try HTTPSClient(configuration: configuration).request(.get, try ACMEURL("https://127.0.0.1:\(port)\(path)"))
    }

    @Test("a body at the bound is read whole; one byte more stops the transfer with a transport error")
    func bodyBound() throws {
        #expect(try get("/body/\(ACMELimits.maximumBodyBytes)").body.count == ACMELimits.maximumBodyBytes)
        #expect {
            try self.get("/body/\(ACMELimits.maximumBodyBytes + 1)")
        } throws: {
            guard case .transport(let text) = $0 as? ACMEError else { return false }
            return text.contains("over \(ACMELimits.maximumBodyBytes) bytes")
        }
    }

    @Test("a redirect is returned to the caller, never followed")
    func redirect() throws {
        let response = try get("/redirect")
        #expect(response.status == 302 && response.body.isEmpty)
        #expect(response.headers.first("location") == Array("/body/1".utf8))
    }

    @Test("a header section past the bound stops the transfer")
    func headerBound() throws {
        #expect {
            try self.get("/headers")
        } throws: {
            guard case .transport(let text) = $0 as? ACMEError else { return false }
            return text.contains("header section is over")
        }
    }

    @Test("a server that stalls mid-body is given up at the total timeout")
    func stall() throws {
        #expect {
            try self.get("/stall", timeout: 1_000)
        } throws: {
            guard case .transport(let text) = $0 as? ACMEError else { return false }
            return text.lowercased().contains("timed out") || text.lowercased().contains("timeout")
        }
    }
}
