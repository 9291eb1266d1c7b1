import DaemonTesting
import Foundation
import HTTPCore
import TestSupport
import Testing

/// A worker keeps the last served file's head as written (`FileHeadCache`). Two sites with the
/// same file (same content, so the same length, ETag and shared parts) written a second apart,
/// fetched alternately from a daemon with one worker, must each get their own Last-Modified, over
/// HTTP/1.1 on one connection and over HTTP/2 on two.
@Suite("aasad serve: one worker, two files alike but for their date")
final class HeadCacheServeTests {
    let config: TestConfig
    let server: TestDaemon
    static let path = "/apple-app-site-association"
    /// Each site's Last-Modified: its file's change time, a second apart.
    let times: [String: Int64]

    init() throws {
        config = try TestConfig()
        let body = Array(
            #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#.utf8)
        var times: [String: Int64] = [:]
        for host in ["a.test", "b.test"] {
            // Last-Modified is the later of mtime and ctime (ConfigLoader+Files.swift), and the
            // ctime is now: the second file is written once the clock has passed the first's.
            if let last = times.values.max() { while time(nil) <= last { usleep(10_000) } }
            try config.write("config/sites/\(host)\(Self.path)", body)
            var status = stat()
            stat(config.path("config/sites/\(host)\(Self.path)"), &status)
            times[host] = Int64(max(status.st_mtim.tv_sec, status.st_ctim.tv_sec))
        }
        self.times = times
        server = try TestDaemon(config: config, flags: ["--threads", "1"])
    }

    func expected(_ hosts: [String]) -> [String] { hosts.map { HTTPDate.format(times[$0]!) } }

    /// The Last-Modified values of `text`'s responses, in order.
    static func dates(_ text: String) -> [String] {
        text.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("last-modified: ") }.map { String($0.dropFirst(15)) }
    }

    @Test("HTTP/1.1: a, b, a, b on one keep-alive connection, with a HEAD and a 304 among them")
    func http1() throws {
        let hosts = ["a.test", "b.test", "a.test", "b.test", "b.test", "a.test", "b.test", "a.test"]
        var requests = ""
        for (index, host) in hosts.enumerated() {
            let method = index == 4 ? "HEAD" : "GET"
            let close = index == hosts.count - 1 ? "Connection: close\r\n" : ""
            let condition = index == 5 ? "If-Modified-Since: \(HTTPDate.format(times[host]!))\r\n" : ""
            requests += "\(method) \(Self.path) HTTP/1.1\r\nHost: \(host)\r\n\(condition)\(close)\r\n"
        }
        let text = String(decoding: server.raw(Array(requests.utf8)), as: UTF8.self)
        #expect(Self.dates(text) == expected(hosts), "\(text)")
        #expect(text.components(separatedBy: "HTTP/1.1 304 Not Modified").count == 2)
    }

    @Test("HTTP/2: a, b, a, b, one connection per site, one worker")
    func http2() throws {
        let hosts = ["a.test", "b.test", "a.test", "b.test", "a.test"]
        var arguments = ["-sS", "--http2", "-D", "-", "--cacert", config.developmentCA]
        for host in times.keys { arguments += ["--resolve", "\(host):\(server.httpsPort):127.0.0.1"] }
        for host in hosts { arguments += ["-o", "/dev/null", "https://\(host):\(server.httpsPort)\(Self.path)"] }
        let out = try Tool.run("curl", arguments).text
        #expect(Self.dates(out) == expected(hosts), "\(out)")
    }
}
