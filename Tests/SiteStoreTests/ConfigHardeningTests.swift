import AASA
import Foundation
import HTTPCore
import Logging
import Testing

@testable import SiteStore

private let good = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a/*"}]}]}}"#
private let good2 = #"{"applinks": {"apps": [], "details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/b/*"}]}]}}"#

@Suite("Config hardening: site.yaml header values and Last-Modified")
struct SiteStoreHardeningTests {
    /// Values a header must never carry, as YAML double-quoted text (YAML's escapes make the bytes).
    static let badValues: [(yaml: String, byte: String)] = [
        (#""max-age=60\r\nX-Injected: yes""#, "0x0D"),
        (#""max-age=60\nX-Injected: yes""#, "0x0A"),
        (#""max-age=60\rX-Injected: yes""#, "0x0D"),
        (#""max-age=60\0""#, "0x00"),
        (#""max-age=60\x7F""#, "0x7F"),
        (#""max-age=60 \u00e9""#, "0xC3"),
        (#""\tmax-age=60""#, "whitespace"),
        (#""max-age=60 ""#, "whitespace"),
    ]

    @Test("site.yaml: cache-control is refused unless every byte is tab or visible ASCII, naming the byte and the line")
    func siteYAMLValues() {
        for (yaml, byte) in Self.badValues {
            let (settings, problems) = SiteSettings.parse("aliases: []\ncache-control: \(yaml)\n", file: "sites/a.test/site.yaml")
            #expect(settings.cacheControl == nil, "accepted \(yaml)")
            #expect(problems.count == 1, "\(yaml): \(problems)")
            let message = problems.first?.message ?? ""
            #expect(message.contains("cache-control") && message.contains(byte) && message.contains("line 2"), "\(yaml): \(message)")
        }
        let long = String(repeating: "a", count: 4097)
        #expect(SiteSettings.parse("cache-control: \(long)\n", file: "f").1.first?.message.contains("longer") == true)
        for ok in ["max-age=60", "public, max-age=60", #""max-age=60,\tmust-revalidate""#, "no-cache=\"Set-Cookie\""] {
            let (settings, problems) = SiteSettings.parse("cache-control: \(ok)\n", file: "f")
            #expect(problems.isEmpty && settings.cacheControl != nil, "\(ok): \(problems)")
        }
    }

    @Test("site.yaml: an alias with CR/LF or other bytes outside the host grammar is refused")
    func aliasBytes() {
        for alias in [#""a.test\r\nX-Injected: yes""#, #""a.test\u0000""#, #""a test""#, #""a.test\r""#] {
            let (settings, problems) = SiteSettings.parse("aliases: [\(alias)]\n", file: "f")
            #expect(settings.aliases.isEmpty && problems.count == 1, "\(alias): \(problems)")
            // The message holds no raw control byte (it goes to a log line as it is).
            #expect(problems.allSatisfy { !$0.message.utf8.contains { $0 < 0x20 } }, "\(problems)")
        }
    }

    @Test("a bad cache-control in site.yaml keeps the last good settings, and no served head carries the injected line")
    func registryKeepsLastGoodSettings() throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/site.yaml", "cache-control: max-age=60\n")
        let r = c.registry()
        r.reloadAll()
        try c.write("sites/a.test/site.yaml", #"cache-control: "max-age=60\r\nX-Injected: yes"\#n"#)
        try c.write("sites/a.test/apple-app-site-association", good2)
        let file = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.aasa)
        #expect(String(decoding: file.body, as: UTF8.self) == good2)
        let head = String(decoding: file.headers.http1, as: UTF8.self)
        #expect(head.contains("Cache-Control: max-age=60\r\n"), "\(head)")
        #expect(!head.contains("X-Injected"))
        let status = try #require(r.statuses.first)
        #expect(status.state == .servingLastGood)
        #expect(status.errors.contains { $0.contains("sites/a.test/site.yaml") && $0.contains("0x0D") }, "\(status.errors)")
    }

    @Test("Last-Modified moves forward with every new content, even when the mtime stays or goes back")
    func lastModifiedMonotonic() throws {
        let c = try TempConfig()
        let path = c.root + "/sites/a.test/apple-app-site-association"
        let then = Date(timeIntervalSince1970: 1_600_000_000)
        try c.write("sites/a.test/apple-app-site-association", good)
        try FileManager.default.setAttributes([.modificationDate: then], ofItemAtPath: path)
        let r = c.registry()
        let first = try #require(r.reloadAll().site(forHost: "a.test")?.aasa)
        try c.write("sites/a.test/apple-app-site-association", good2)
        try FileManager.default.setAttributes([.modificationDate: then], ofItemAtPath: path)
        let second = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.aasa)
        #expect(second.lastModified > first.lastModified)
        try c.write("sites/a.test/apple-app-site-association", good)
        try FileManager.default.setAttributes([.modificationDate: then.addingTimeInterval(-86_400)], ofItemAtPath: path)
        let third = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.aasa)
        #expect(third.lastModified > second.lastModified)
        // The same content again (a touch, a chmod): the same Last-Modified.
        try FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: path)
        let fourth = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.aasa)
        #expect(fourth.lastModified == third.lastModified)
    }

    /// A tenant who sets its file's mtime far ahead (tmpfs and btrfs take up to Int64.max; ext4
    /// and XFS cap the year) gets now as Last-Modified, and its next edits move it on by a second
    /// each: no overflow stops the server (RFC 9110 §8.8.2.1: a future time is replaced by now).
    @Test("a file time set far ahead is served as now, and edits after it move on without overflowing")
    func futureFileTime() throws {
        let shm = "/dev/shm/"
        let parent = access(shm, W_OK) == 0 ? shm : NSTemporaryDirectory()
        let c = try TempConfig(parent: parent)
        let path = c.root + "/sites/a.test/apple-app-site-association"
        try c.write("sites/a.test/apple-app-site-association", good)
        func setTime(_ seconds: Int) throws {
            var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
            guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
        // The largest time the filesystem takes: Int.max on tmpfs, a year ahead anywhere.
        func setFarAhead() throws {
            if (try? setTime(Int.max)) == nil { try setTime(Int(Date().timeIntervalSince1970) + 365 * 86_400) }
        }
        try setFarAhead()
        let r = c.registry()
        let first = try #require(r.reloadAll().site(forHost: "a.test")?.aasa)
        #expect(first.lastModified <= Int64(Date().timeIntervalSince1970) + 1)
        var last = first.lastModified
        for (round, body) in [good2, good, good2].enumerated() {
            try c.write("sites/a.test/apple-app-site-association", body)
            try setFarAhead()
            let next = try #require(r.reload(["a.test"]).site(forHost: "a.test")?.aasa)
            #expect(next.lastModified > last && next.lastModified <= Int64(Date().timeIntervalSince1970) + 1 + Int64(round) + 1)
            last = next.lastModified
        }
    }

    /// Something that is there but cannot be read as a file, without dropping privileges: a
    /// directory (EISDIR) or a FIFO (refused by readFile instead of blocking the reloader).
    static let unreadableKinds = ["directory", "fifo"]

    private func makeUnreadable(_ path: String, as kind: String) throws {
        try FileManager.default.removeItem(atPath: path)
        if kind == "directory" {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        } else {
            #expect(mkfifo(path, 0o644) == 0)
        }
    }

    @Test("a served file that is there but cannot be read keeps its last good version", arguments: unreadableKinds)
    func unreadableFileKeepsLastGood(_ kind: String) throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        let r = c.registry()
        r.reloadAll()
        try makeUnreadable(c.root + "/sites/a.test/apple-app-site-association", as: kind)
        let s = r.reload(["a.test"])
        #expect(s.site(forHost: "a.test")?.aasa.map { String(decoding: $0.body, as: UTF8.self) } == good)
        let status = try #require(r.statuses.first)
        #expect(status.state == .servingLastGood)
        #expect(status.errors.contains { $0.contains("sites/a.test/apple-app-site-association: cannot read the file") }, "\(status.errors)")
        // Deleted (ENOENT): gone.
        try FileManager.default.removeItem(atPath: c.root + "/sites/a.test/apple-app-site-association")
        try c.write("sites/a.test/assetlinks.json", "[]")
        #expect(r.reload(["a.test"]).site(forHost: "a.test")?.aasa == nil)
    }

    @Test("a key.pem that cannot be read keeps the site's and the default certificate", arguments: unreadableKinds)
    func unreadableKeyKeepsCertificate(_ kind: String) throws {
        let c = try TempConfig()
        try c.write("sites/a.test/apple-app-site-association", good)
        try c.write("sites/a.test/tls/cert.pem", "site chain")
        try c.write("sites/a.test/tls/key.pem", "site key")
        try c.write("tls/cert.pem", "default chain")
        try c.write("tls/key.pem", "default key")
        let r = c.registry()
        let before = r.reloadAll()
        #expect(before.site(forHost: "a.test")?.certificate?.keyPEM == Array("site key".utf8))
        try makeUnreadable(c.root + "/sites/a.test/tls/key.pem", as: kind)
        try makeUnreadable(c.root + "/tls/key.pem", as: kind)
        let after = r.reloadAll()
        #expect(after.site(forHost: "a.test")?.certificate?.keyPEM == Array("site key".utf8))
        #expect(after.defaultCertificate?.keyPEM == Array("default key".utf8))
        #expect(r.statuses.first?.state == .servingLastGood)
    }
}

@Suite("Header field values as bytes (RFC 9110 §5.5)")
struct HTTPFieldValueTests {
    @Test("CR, LF, CR LF (one grapheme), NUL, DEL and bytes over 0x7F are refused, each named with its position")
    func refused() {
        let cases: [(String, HTTPField.ValueProblem)] = [
            ("max-age=60\rX", .byte(0x0D, offset: 10)),
            ("max-age=60\nX", .byte(0x0A, offset: 10)),
            ("max-age=60\r\nX-Injected: yes", .byte(0x0D, offset: 10)),
            ("a\u{0}b", .byte(0x00, offset: 1)),
            ("a\u{7F}", .byte(0x7F, offset: 1)),
            ("caf\u{e9}", .byte(0xC3, offset: 3)),
            ("a\u{1F}", .byte(0x1F, offset: 1)),
        ]
        for (text, problem) in cases {
            #expect(HTTPField.valueProblem(text.utf8) == problem, "\(text.debugDescription)")
            #expect(!HTTPField.isValidValue(text.utf8))
        }
        // "\r\n" is one Character: a Character comparison with "\r" or "\n" does not see it.
        #expect(!"a\r\nb".contains(where: { $0 == "\r" || $0 == "\n" }))
        #expect(HTTPField.valueProblem([0x80]) == .byte(0x80, offset: 0))
        #expect(HTTPField.valueProblem([0xFF]) == .byte(0xFF, offset: 0))
        #expect("\(HTTPField.ValueProblem.byte(0x0D, offset: 10))".hasPrefix("byte 11 is 0x0D (CR)"))
    }

    @Test("tab and spaces inside are fine; leading or trailing whitespace and over-long values are not")
    func accepted() {
        #expect(HTTPField.isValidValue("max-age=60,\tmust-revalidate".utf8))
        #expect(HTTPField.isValidValue("public, max-age=60, s-maxage=\"3600\"".utf8))
        #expect(HTTPField.isValidValue("".utf8))
        #expect(HTTPField.isValidValue((0x21...0x7E).map { UInt8($0) }))
        #expect(HTTPField.valueProblem(" max-age=60".utf8) == .surroundingWhitespace)
        #expect(HTTPField.valueProblem("max-age=60\t".utf8) == .surroundingWhitespace)
        #expect(HTTPField.isValidValue([UInt8](repeating: 0x61, count: HTTPField.maximumValueLength)))
        #expect(HTTPField.valueProblem([UInt8](repeating: 0x61, count: HTTPField.maximumValueLength + 1)) == .tooLong(4097))
    }

    @Test("a PreparedFile is never built from an invalid value: an error, not a trap")
    func preparedFileRefuses() throws {
        #expect(throws: PreparedFile.InvalidField.self) {
            try PreparedFile(body: Array("{}".utf8), modified: 0, options: ServingOptions(cacheControl: "max-age=60\r\nX-Injected: yes"))
        }
        let file = try PreparedFile(body: Array("{}".utf8), modified: 0, options: ServingOptions(cacheControl: "max-age=60"))
        #expect(String(decoding: file.headers.http1, as: UTF8.self).contains("Cache-Control: max-age=60\r\n"))
    }
}
