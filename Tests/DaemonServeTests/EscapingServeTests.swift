import DaemonTesting
import Foundation
import TestSupport
import Testing

/// serve's text log, from a daemon in-process logging through the binary's escaping stream
/// (`EscapingStandardError` in Sources/Daemon/LiveLogging.swift): whatever site.yaml and the
/// directory names hold, one line per event, nothing a terminal would act on.
@Suite("aasad serve: the text log escapes control and bidi characters")
final class EscapingServeTests {
    /// A site directory named with an OSC sequence (retitles a terminal), CR LF and a forged
    /// event line: Linux file names may hold any byte but '/' and NUL.
    static let evilDirectory = "evil\u{1B}]0;pwned\u{07}\r\nerror forged.test"
    static let aasa = Array(#"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/*"}]}]}}"#.utf8)

    @Test("serve's text log: one line per event, whatever site.yaml and the directory names hold")
    func serveLog() throws {
        let forged = "1999-01-01T00:00:00+0000 error aasad: FORGED"
        let config = try TestConfig()
        try config.write("config/sites/syntax.test/apple-app-site-association", Self.aasa)
        try config.write("config/sites/syntax.test/site.yaml", Array("page: x\n\(forged)-SYNTAX: x\n".utf8))
        try config.write("config/sites/crlf.test/apple-app-site-association", Self.aasa)
        try config.write("config/sites/crlf.test/site.yaml", Array("\"k\\r\\n\(forged)-KEY\": 1\n".utf8))
        try config.write("config/sites/esc.test/apple-app-site-association", Self.aasa)
        try config.write("config/sites/esc.test/site.yaml", Array("aliases: [x.test\u{1B}[31m\r\n\(forged)-ESC: x\n".utf8))
        try config.write("config/sites/\(Self.evilDirectory)/apple-app-site-association", Self.aasa)
        let server = try TestDaemon(config: config)
        #expect(server.waitForLog("FORGED-SYNTAX"))
        #expect(server.waitForLog("FORGED-KEY"))
        #expect(server.waitForLog("evil"))
        #expect(server.waitForLog("U+001B"))
        #expect(server.stop())
        let log = server.log()
        expectClean(log)
        let event = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (trace|debug|info|notice|warning|error|critical) \S+:/
        for line in splitLines(log).dropLast() {
            #expect(line.prefixMatch(of: event) != nil, "not an event line: \(line.debugDescription)")
            #expect(!line.hasPrefix("1999-"), "a forged event: \(line.debugDescription)")
        }
        #expect(log.contains(#"k\x0D\x0A1999-01-01T00:00:00+0000 error aasad: FORGED-KEY"#), "\(log)")
        #expect(log.contains(#"in "1999-01-01T00:00:00+0000 error aasad: FORGED-SYNTAX: x""#), "\(log)")
        #expect(log.contains(#"control characters are not allowed (U+001B), in "aliases: [x.test\x1B[31m""#), "\(log)")
        #expect(log.contains(#"sites/evil\x1B]0;pwned\x07\x0D\x0Aerror forged.test"#), "\(log)")
    }
}
