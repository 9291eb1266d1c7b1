import Foundation
import Synchronization
import TestSupport
import Testing

@testable import Daemon
@testable import aasad

/// serve's text log of hostile site.yaml lines and directory names is tested in-process
/// (Tests/DaemonServeTests/EscapingServeTests.swift).
@Suite("Text output escapes control and bidi characters: validate, match, check, sites and the text log")
final class EscapingTests {
    let directory: TemporaryDirectory
    var config: String { directory.path("config") }

    /// A site directory named with an OSC sequence (retitles a terminal), CR LF and a forged
    /// report line: Linux file names may hold any byte but '/' and NUL.
    static let evilDirectory = "evil\u{1B}]0;pwned\u{07}\r\nerror forged.test"
    static let aasa = Array(
        #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#.utf8)
    /// An app ID holding a bidi override (raw, as a file may hold it) and an ESC (JSON-escaped).
    static let bidiAASA = Array(
        "{\"applinks\": {\"details\": [{\"appIDs\": [\"ABCDE12345.com.\u{202E}elpmaxe\\u001b[2J\"], \"components\": [{\"/\": \"/*\"}]}]}}"
            .utf8)

    init() throws {
        directory = try TemporaryDirectory(prefix: "aasad-escaping")
        try directory.write("config/sites/a.test/apple-app-site-association", Self.aasa)
        try directory.write("config/sites/\(Self.evilDirectory)/apple-app-site-association", Self.aasa)
        // The bad line holds ESC and CR bytes and a forged line.
        try directory.write("config/sites/esc.test/apple-app-site-association", Self.aasa)
        try directory.write(
            "config/sites/esc.test/site.yaml", Array("aliases: [x.test\u{1B}[31m\r\nerror: forged: x\n".utf8))
        // A key that YAML's escapes make into a forged line.
        try directory.write("config/sites/key.test/apple-app-site-association", Self.aasa)
        try directory.write("config/sites/key.test/site.yaml", Array("\"k\\r\\nerror: forged key\\e[2J\": 1\n".utf8))
        try directory.write("config/sites/bidi.test/apple-app-site-association", Self.bidiAASA)
    }

    @Test("validate: a site directory's name, a site.yaml line with ESC and CR, a key with CR LF and a bidi app ID come out escaped")
    func validate() throws {
        let out = try Tool.run(AASAD.binary.path, ["validate", config])
        #expect(out.status == 1)
        expectClean(out.text)
        #expect(!splitLines(out.text).contains { $0.hasPrefix("error: forged") }, "\(out.text)")
        for expected in [
            #"sites/evil\x1B]0;pwned\x07\x0D\x0Aerror forged.test: not a valid site name: the label "evil\x1B]0;pwned\x07\x0D\x0Aerror forged" contains '\x1B'"#,
            #"sites/esc.test/site.yaml: not valid YAML: line 1, column 17: control characters are not allowed (U+001B), in "aliases: [x.test\x1B[31m""#,
            #"unknown key "k\x0D\x0Aerror: forged key\x1B[2J""#,
            #"(found '\u{202E}')"#,
        ] {
            #expect(out.text.contains(expected), "missing: \(expected)\n\(out.text)")
        }
        // One line per finding: every line is a finding or the summary.
        for line in splitLines(out.text).dropLast() {
            #expect(line.hasPrefix("error: ") || line.hasPrefix("warning: ") || line.contains(" checked"), "\(line.debugDescription)")
        }
    }

    @Test("sites: the tab-separated line of a site with a hostile name keeps its columns; problems stay on their line")
    func sites() throws {
        let out = try Tool.run(AASAD.binary.path, ["sites", "--config", config])
        expectClean(out.text, tabs: true)
        #expect(out.text.contains(#"evil\x1B]0;pwned\x07\x0D\x0Aerror forged.test"#), "\(out.text)")
        #expect(!splitLines(out.text).contains { $0.hasPrefix("error: forged") || $0.hasPrefix("error forged") }, "\(out.text)")
        for line in splitLines(out.text) where !line.isEmpty && !line.hasPrefix(" ") && !line.hasPrefix("error: ") {
            #expect(line.split(separator: "\t", omittingEmptySubsequences: false).count >= 3, "\(line.debugDescription)")
        }
    }

    @Test("match: the URL argument, the rule and an invalid file's findings are escaped")
    func match() throws {
        let file = directory.path("config/sites/a.test/apple-app-site-association")
        let url = "https://a.test/buy/\u{1B}[2J\r\n  opens FORGED \u{202E}x"
        let out = try Tool.run(AASAD.binary.path, ["match", "--file", file, url])
        expectClean(out.text)
        #expect(out.text.contains(#"https://a.test/buy/\x1B[2J\x0D\x0A  opens FORGED \u{202E}x"#), "\(out.text)")
        #expect(!splitLines(out.text).contains { $0.hasPrefix("  opens FORGED") })
        // --expect names an app no URL opens: the line on standard error quotes the URL escaped.
        let unmet = try Tool.run(AASAD.binary.path, ["match", "--file", file, "--expect", "none", url])
        #expect(unmet.status == 1)
        expectClean(unmet.stderr)
        // An invalid file's findings (the bidi app ID) under the URL.
        let bidi = directory.path("config/sites/bidi.test/apple-app-site-association")
        let invalid = try Tool.run(AASAD.binary.path, ["match", "--file", bidi, "https://bidi.test/x"])
        #expect(invalid.status == 1)
        expectClean(invalid.text)
        #expect(invalid.text.contains(#"(found '\u{202E}')"#), "\(invalid.text)")
        // A usage error quotes the argument escaped.
        let usage = try Tool.run(AASAD.binary.path, ["match", "--file", file, "--expect", "ABCDE12345.com.\u{1B}[2J", url])
        #expect(usage.status == 64)
        expectClean(usage.stderr)
        #expect(usage.stderr.contains(#"(found '\x1B')"#), "\(usage.stderr)")
    }

    @Test("check: a hostile server's header bytes (OSC, bidi, C1, not UTF-8) and its file's app ID are shown escaped")
    func check() throws {
        let server = try FakeOriginCDN()
        try server.origin("hostile.test", Self.bidiAASA)
        let out = try AASAD.run(server.arguments(["hostile.test"]) + ["--app", "ABCDE12345.com.example.app"])
        #expect(out.status == 1)
        expectClean(out.stdout)
        #expect(out.stdout.contains(#"application/json\x1B]0;pwned\x07\u{202E}\x9B2J\xFF"#), "\(out.stdout)")
        #expect(out.stdout.contains(#"(found '\u{202E}')"#), "\(out.stdout)")
        let host = try Tool.run(AASAD.binary.path, ["check", "evil.test\u{1B}[2J"])
        #expect(host.status == 64)
        expectClean(host.stderr)
    }

    @Test(
        "the text log's stream escapes everything before the event's final line feed, and keeps that one",
        arguments: [
            ("2026 info aasad: [SiteStore] plain\n", "2026 info aasad: [SiteStore] plain\n"),
            ("a\r\nb\n", "a\\x0D\\x0Ab\n"),
            ("ends in CR\r\n", "ends in CR\\x0D\n"),
            ("two\n\n", "two\\x0A\n"),
            ("no line feed", "no line feed"),
            ("key=\u{1B}[2J \u{202E}\n", "key=\\x1B[2J \\u{202E}\n"),
            ("bücher 🙂\n", "bücher 🙂\n"),
        ] as [(String, String)])
    func logStream(_ written: String, _ shown: String) {
        #expect(EscapingStandardError.line(written) == Array(shown.utf8))
    }

    /// A pipe of one page (F_SETPIPE_SZ, fcntl(2)) whose write end is non-blocking, as a standard
    /// error a lagging reader shares may be.
    private static func smallNonBlockingPipe() throws -> (read: Int32, write: Int32) {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let setPipeSize: Int32 = 1031  // F_SETPIPE_SZ, not exported by Glibc's Swift overlay
        try #require(fcntl(ends[1], setPipeSize, 4096) == 4096)
        try #require(fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK) == 0)
        return (ends[0], ends[1])
    }

    /// Reads `fd` until end of file.
    private static func readAll(_ fd: Int32) -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return out }
            out += buffer[0..<n]
        }
    }

    @Test("the text log's stream: a line larger than a full non-blocking pipe arrives whole once the reader reads")
    func logStreamWaitsForRoom() throws {
        let (readEnd, writeEnd) = try Self.smallNonBlockingPipe()
        defer { close(readEnd) }
        let line = Array(repeating: UInt8(ascii: "x"), count: 3 * 4096 + 17) + [0x0A]
        let cut = Outcome()
        let writer = Thread {
            cut.value.withLock { $0 = EscapingStandardError.writeLine(line, to: writeEnd, afterCut: false, waitMilliseconds: 60_000) }
            close(writeEnd)
        }
        writer.start()
        let got = Self.readAll(readEnd)
        let whole = got == line
        #expect(whole, "\(got.count) bytes of \(line.count) arrived")
        #expect(cut.value.withLock { $0 } == false)
    }

    @Test("the text log's stream: a line nobody reads is cut after the wait, and the next one starts on its own line")
    func logStreamCutsAfterWait() throws {
        let (readEnd, writeEnd) = try Self.smallNonBlockingPipe()
        defer { close(readEnd) }
        let line = Array(repeating: UInt8(ascii: "x"), count: 2 * 4096) + [0x0A]
        #expect(EscapingStandardError.writeLine(line, to: writeEnd, afterCut: false, waitMilliseconds: 20))
        var page = [UInt8](repeating: 0, count: 4096)
        #expect(read(readEnd, &page, page.count) == 4096)
        #expect(!EscapingStandardError.writeLine(Array("next\n".utf8), to: writeEnd, afterCut: true, waitMilliseconds: 20))
        close(writeEnd)
        #expect(Self.readAll(readEnd) == Array("\nnext\n".utf8))
    }

    @Test("the text log's stream: a closed descriptor loses the line and never stops the process")
    func logStreamClosedDescriptor() throws {
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        close(ends[0])
        // The reader went away: EPIPE (SIGPIPE is ignored, as the server ignores it).
        #expect(!EscapingStandardError.writeLine(Array("lost\n".utf8), to: ends[1], afterCut: false, waitMilliseconds: 20))
        close(ends[1])
    }

    @Test(
        "serve: a reader of standard error that went away never stops the server, in either log format",
        arguments: ["text", "json"])
    func logReaderGone(format: String) throws {
        signal(SIGPIPE, SIG_IGN)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        // Not inherited by another test's child: the server's copy alone holds the write end.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let config = try TestConfig()
        try config.write("config/sites/a.test/apple-app-site-association", Self.aasa)
        let server = try RunningServer(
            config: config, extra: ["--log-format", format], standardError: FileHandle(fileDescriptor: ends[1], closeOnDealloc: true))
        // No reader left: each log line now fails with EPIPE.
        close(ends[0])
        // A site with a broken site.yaml (an error logged), then one that is served after it.
        try config.write("config/sites/broken.test/apple-app-site-association", Self.aasa)
        try config.write("config/sites/broken.test/site.yaml", Array("aliases: [\n".utf8))
        try config.write("config/sites/after.test/apple-app-site-association", Self.aasa)
        #expect(eventually { (try? server.https("after.test", "/.well-known/apple-app-site-association"))?.status == 200 })
        #expect(server.process.isRunning)
        #expect(server.stop() == 0)
    }

    @Test("JSON output: DEL, C1 controls, line separators and bidi characters as \\u escapes, the same values once parsed")
    func jsonOutput() throws {
        let compact = JSONOutput.compact(["k": "a\u{202E}b\u{85}c\u{2028}d\u{1B}é🙂\u{7F}"])
        #expect(String(decoding: compact, as: UTF8.self) == #"{"k":"a\u202Eb\u0085c\u2028d\u001bé🙂\u007F"}"#)
        #expect(String(decoding: JSONOutput.compact(["k": "DEL\u{7F}"]), as: UTF8.self) == #"{"k":"DEL\u007F"}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(compact)) as? [String: String]
        #expect(parsed == ["k": "a\u{202E}b\u{85}c\u{2028}d\u{1B}é🙂\u{7F}"])
        // A site directory whose name holds a bidi override and NEL, through validate --format json.
        try directory.write("config/sites/rtl\u{202E}\u{85}.test/apple-app-site-association", Self.aasa)
        let out = try Tool.run(AASAD.binary.path, ["validate", "--format", "json", config])
        expectClean(out.text)
        #expect(out.text.contains(#"rtl\u202E\u0085.test"#), "\(out.text)")
    }
}

/// What a thread returned, read once it has ended.
private final class Outcome: Sendable {
    let value = Mutex<Bool?>(nil)
}
