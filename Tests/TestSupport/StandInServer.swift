package import Foundation
import Glibc

/// A stand-in for a name's HTTP server on loopback, in Python: each mode is one way a server the
/// tenant controls can answer the checker.
package final class StandInServer: @unchecked Sendable {
    package let process = Process()
    package let port: Int

    static let script = #"""
        import http.server, sys, time
        mode, body = sys.argv[1], sys.argv[2].encode()
        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a): pass
            def do_GET(self):
                if mode == "slow":
                    time.sleep(5)
                if mode == "host":
                    with open(sys.argv[3], "a") as f: f.write(self.headers.get("Host", "") + "\n")
                if mode == "count":
                    with open(body, "a") as f: f.write(self.path + "\n")
                    self.send_response(404); self.send_header("Content-Length", "0"); self.end_headers(); return
                if mode == "ask":
                    # Caddy's on-demand `ask`: 200 for the names listed in body, 404 for others; each
                    # request's path is logged.
                    with open(sys.argv[3], "a") as f: f.write(self.path + "\n")
                    name = self.path.split("domain=")[-1]
                    code = 200 if name in body.decode().split(",") else 404
                    self.send_response(code); self.send_header("Content-Length", "0"); self.end_headers(); return
                if mode == "status":
                    self.send_response(int(body)); self.send_header("Content-Length", "0"); self.end_headers(); return
                if mode == "redirect":
                    self.send_response(301); self.send_header("Location", body.decode()); self.send_header("Content-Length", "0"); self.end_headers(); return
                out = self.path.encode() if mode == "echo" else (body * 40000 if mode == "huge" else body)
                self.send_response(200); self.send_header("Content-Length", str(len(out))); self.end_headers(); self.wfile.write(out)
        s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        print(s.server_address[1], flush=True)
        s.serve_forever()
        """#

    package init(mode: String, body: String = "", log: String = "") throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [Tool.python3, "-c", Self.script, mode, body, log]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        var line: [UInt8] = []
        while let byte = try out.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
        port = Int(String(decoding: line, as: UTF8.self)) ?? 0
    }

    deinit {
        process.killAndWait()
    }
}
