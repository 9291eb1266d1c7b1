import Foundation
import TestSupport
import Testing

@testable import HTTPCore

/// A request's path and query inserted into a redirect target: hostile paths first,
/// then a seeded property test over random bytes. The same checks run in the `fields` fuzz target
/// (Fuzz/FuzzFields.swift) and in its corpus replay (FieldsFuzzReplayTests).
@Suite("RedirectTarget: a request path into a redirect target")
struct RedirectTargetTests {
    static let host = "www.example.com"

    static func encode(_ path: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        path.withUnsafeBytes { RedirectTarget.appendPath($0, to: &out) }
        return out
    }

    static func encode(_ path: String) -> String { String(decoding: encode(Array(path.utf8)), as: UTF8.self) }

    /// The redirect target a site with `https://www.example.com{path}` sends, parsed.
    static func target(_ output: [UInt8]) -> URLComponents? {
        URLComponents(string: "https://\(host)" + String(decoding: output, as: UTF8.self))
    }

    @Test(
        "hostile paths: each is encoded exactly, and the target's host stays the site's",
        arguments: [
            // Another host through the authority: "//" and "\" (which browsers read as "/").
            ("//evil.example", "//evil.example"),
            ("/\\evil.example", "/%5Cevil.example"),
            ("\\", "/%5C"),
            ("\\\\evil.example", "/%5C%5Cevil.example"),
            ("/\\/evil.example", "/%5C/evil.example"),
            // Header injection: raw CR LF is encoded; the client's own escapes stay the same three bytes.
            ("/a\r\nLocation: https://evil.example", "/a%0D%0ALocation:%20https://evil.example"),
            ("/%0d%0aSet-Cookie:%20x=1", "/%0d%0aSet-Cookie:%20x=1"),
            ("/%0D%0A", "/%0D%0A"),
            ("/%2F%5C%2e", "/%2F%5C%2e"),
            // A fragment, quotes and angle brackets, space, the other bytes a URL may not hold.
            ("/a#b", "/a%23b"),
            ("/\"<>", "/%22%3C%3E"),
            ("/a b", "/a%20b"),
            ("/\t", "/%09"),
            ("/{}|^`[]", "/%7B%7D%7C%5E%60%5B%5D"),
            ("/a\u{0}b", "/a%00b"),
            ("/\u{7F}", "/%7F"),
            ("/caf\u{E9}", "/caf%C3%A9"),
            // HTTP/2's "*", an empty path, and paths without their leading "/".
            ("*", "/*"),
            ("", "/"),
            ("evil.example/x", "/evil.example/x"),
            ("@evil.example", "/@evil.example"),
            ("https://evil.example/", "/https://evil.example/"),
            // What a path and query may hold is kept as sent (RFC 3986 §3.3, §3.4).
            ("/buy/42?src=mail&x=%2F", "/buy/42?src=mail&x=%2F"),
            ("/a:b@c!$&'()*+,;=-._~?/?", "/a:b@c!$&'()*+,;=-._~?/?"),
            ("/../..", "/../.."),
            // A "%" that starts no escape is itself encoded: the target stays a valid URI.
            ("/%", "/%25"),
            ("/%4", "/%254"),
            ("/%zz", "/%25zz"),
            ("/%4g", "/%254g"),
            ("/%%41", "/%25%41"),
            ("/100%", "/100%25"),
            ("%", "/%25"),
        ])
    func hostile(_ path: String, _ expected: String) throws {
        #expect(Self.encode(path) == expected)
        let target = try #require(Self.target(Array(expected.utf8)))
        #expect(Self.strictURL("https://\(Self.host)" + expected)?.host == Self.host)
        #expect(target.host == Self.host)
        #expect(target.fragment == nil)
        #expect(target.user == nil && target.password == nil && target.port == nil)
    }

    @Test("why a bare % is encoded: strict parsing refuses it; Foundation's lenient parsing rewrites it to %25 (RFC 3986 §2.1)")
    func bareEscapeIsNoURI() {
        #expect(Self.strictURL("https://\(Self.host)/%zz") == nil)
        #expect(Self.strictURL("https://\(Self.host)/100%") == nil)
        #expect(Self.strictURL("https://\(Self.host)/100%25")?.host == Self.host)
        #expect(URL(string: "https://\(Self.host)/100%")?.absoluteString == "https://\(Self.host)/100%25")
    }

    /// RFC 3986 parsing without Foundation's repairs (which would accept nearly any string).
    static func strictURL(_ text: String) -> URL? { URL(string: text, encodingInvalidCharacters: false) }

    @Test("bytes at and above 0x80 are encoded one by one, never read as UTF-8")
    func highBytes() {
        #expect(Self.encode([0x2F, 0x80, 0xFF, 0xC3, 0x28]) == Array("/%80%FF%C3(".utf8))
    }

    @Test("appending adds to what the caller wrote, and nothing before it changes")
    func appends() {
        var out = Array("https://www.example.com".utf8)
        Array("x y".utf8).withUnsafeBytes { RedirectTarget.appendPath($0, to: &out) }
        #expect(String(decoding: out, as: UTF8.self) == "https://www.example.com/x%20y")
    }

    @Test("isKept is the RFC 3986 set for a path and query, plus %")
    func keptSet() {
        for byte in 0...255 { #expect(RedirectTarget.isKept(UInt8(byte)) == Self.uriBytes.contains(UInt8(byte)), "\(byte)") }
    }

    /// What RFC 3986 allows in a path and query (§3.3, §3.4: unreserved, sub-delims, `:`, `@`, `/`,
    /// `?`) and `%`, written out apart from the encoder's own table.
    static let uriBytes = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?%".utf8)

    @Test("random bytes: exact, reversible, idempotent, and the target's host is the site's")
    func randomBytes() throws {
        var generator = SplitMix64(seed: 0x1212_2026)
        // Bytes that matter most to the encoder, drawn half the time; any byte the other half.
        let special = Array("%/\\?#@:.0aAfFgG ".utf8) + [0x00, 0x0D, 0x0A, 0x7F, 0x80, 0xFF]
        for _ in 0..<20_000 {
            let count = Int(generator.next() % 65)
            let input: [UInt8] = (0..<count).map { _ in
                let r = generator.next()
                return r & 1 == 0 ? special[Int((r >> 1) % UInt64(special.count))] : UInt8(truncatingIfNeeded: r >> 8)
            }
            let output = Self.encode(input)
            if let problem = Self.problem(input: input, output: output) {
                Issue.record("\(problem): \(input) -> \(String(decoding: output, as: UTF8.self))")
                return
            }
            let target = try #require(Self.target(output), "\(input)")
            #expect(target.host == Self.host, "\(input)")
            #expect(Self.strictURL("https://\(Self.host)" + String(decoding: output, as: UTF8.self))?.host == Self.host, "\(input)")
        }
    }

    /// Why `output` is not exactly the encoding of `input`, or nil. Shared in spirit with
    /// checkRedirectTarget in Fuzz/FuzzFields.swift (which cannot import test code).
    static func problem(input: [UInt8], output: [UInt8]) -> String? {
        guard output.first == UInt8(ascii: "/") else { return "no leading /" }
        if let byte = output.first(where: { !RedirectTarget.isKept($0) || !uriBytes.contains($0) }) { return "byte \(byte) is not kept" }
        // Undo the encoder step by step: each kept byte (and each escape the client sent) is there
        // as sent, each other byte is the %XX the encoder added, in upper case.
        var at = input.first == UInt8(ascii: "/") ? 0 : 1
        for (index, byte) in input.enumerated() {
            if RedirectTarget.isKept(byte) && (byte != UInt8(ascii: "%") || startsEscape(input, index)) {
                guard at < output.count, output[at] == byte else { return "input byte \(index) not kept as sent" }
                at += 1
            } else {
                let digits = Array("0123456789ABCDEF".utf8)
                guard at + 3 <= output.count, output[at] == UInt8(ascii: "%"), output[at + 1] == digits[Int(byte >> 4)],
                    output[at + 2] == digits[Int(byte & 15)]
                else { return "input byte \(index) not encoded as %XX" }
                at += 3
            }
        }
        guard at == output.count else { return "bytes after the last input byte" }
        // Independently: nothing gained or lost once both are percent-decoded, and encoding is idempotent.
        let slash: [UInt8] = input.first == UInt8(ascii: "/") ? [] : [UInt8(ascii: "/")]
        guard percentDecoded(output) == slash + percentDecoded(input) else { return "decoding differs" }
        guard encode(output) == output else { return "not idempotent" }
        return nil
    }

    static func startsEscape(_ bytes: [UInt8], _ index: Int) -> Bool {
        index + 2 < bytes.count && isHexDigit(bytes[index + 1]) && isHexDigit(bytes[index + 2])
    }

    static func isHexDigit(_ c: UInt8) -> Bool { (48...57).contains(c) || (65...70).contains(c) || (97...102).contains(c) }

    /// RFC 3986 §2.1 decoding: each `%` and two hex digits is one byte; anything else as it is.
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), startsEscape(bytes, index),
                let value = UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)
            {
                out.append(value)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }
}
