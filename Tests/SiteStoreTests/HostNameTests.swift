import Testing

@testable import SiteStore

@Suite("Host names: the config directory's naming rules")
struct HostNameTests {
    @Test(
        "names are lower-cased and a trailing dot dropped",
        arguments: [
            ("Links.Example.COM", "links.example.com"), ("example.com.", "example.com"), ("*.users.example.com", "*.users.example.com"),
            ("localhost", "localhost"), ("xn--bcher-kva.example", "xn--bcher-kva.example"),
        ])
    func normalises(_ raw: String, _ expected: String) throws {
        #expect(try HostName(parsing: raw).name == expected)
    }

    @Test(
        "Unicode names are refused with their xn-- form",
        arguments: [
            ("bücher.example", "xn--bcher-kva.example"),
            ("München.de", "xn--mnchen-3ya.de"),
            ("中国.example", "xn--fiqs8s.example"),
            ("例え.テスト", "xn--r8jz45g.xn--zckzah"),
        ])
    func refusesUnicode(_ raw: String, _ aLabel: String) {
        #expect(throws: HostName.Problem.unicode(suggested: aLabel)) { try HostName(parsing: raw) }
    }

    @Test("the refusal message names the xn-- form")
    func messageNamesALabel() {
        #expect(HostName.Problem.unicode(suggested: "xn--bcher-kva.example").description.contains("xn--bcher-kva.example"))
    }

    @Test(
        "malformed names are refused",
        arguments: [
            "", "a..b", ".a.b", "a_b.com", "-a.com", "a-.com", "a.*.com", "*a.com", "*.com", "a.com:443", "a b.com",
            String(repeating: "a", count: 64) + ".com",
        ])
    func refusesMalformed(_ raw: String) {
        #expect(throws: HostName.Problem.self) { try HostName(parsing: raw) }
    }

    /// The one-pass check for names already in normal form must agree with the full parse: it
    /// may only accept what the full parse accepts unchanged, and it should accept every such
    /// name but wildcards (else start-up takes the slow path for nothing).
    @Test("the fast path for plain names agrees with the full parse")
    func fastPathAgrees() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("abz09-.*A:_é".unicodeScalars)
        var cases = ["a", "a.b", "a-b.c", "-", ".", "a.", "a-", "a.-b", "a-.b", String(repeating: "a", count: 63) + ".b"]
        cases.append(String(repeating: "a", count: 64) + ".b")
        cases.append([String](repeating: String(repeating: "a", count: 63), count: 4).joined(separator: "."))
        cases.append(([String](repeating: String(repeating: "a", count: 63), count: 3) + ["b"]).joined(separator: "."))
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...12, using: &generator)
            var text = String.UnicodeScalarView()
            for _ in 0..<length { text.append(alphabet.randomElement(using: &generator)!) }
            cases.append(String(text))
        }
        for raw in cases {
            let plain = HostName.isPlain(raw.utf8)
            let full = try? HostName.normalise(raw)
            if plain { #expect(full == raw, "fast path accepted \(raw.debugDescription)") }
            if full == raw && !raw.contains("*") { #expect(plain, "fast path missed \(raw.debugDescription)") }
        }
    }

    @Test("a label of 63 characters is accepted, 64 is refused")
    func labelBound() throws {
        _ = try HostName(parsing: String(repeating: "a", count: HostName.maximumLabelLength) + ".com")
        #expect(throws: HostName.Problem.self) {
            try HostName(parsing: String(repeating: "a", count: HostName.maximumLabelLength + 1) + ".com")
        }
    }

    @Test("a name of 253 characters is accepted, 254 is refused")
    func nameBound() throws {
        let label = String(repeating: "a", count: 63)
        let at = [label, label, label, String(repeating: "b", count: 61)].joined(separator: ".")
        #expect(at.count == HostName.maximumLength)
        _ = try HostName(parsing: at)
        #expect(throws: HostName.Problem.tooLong(254)) { try HostName(parsing: "c" + at) }
    }

    @Test("a wildcard covers names below its suffix at any depth, never the suffix itself")
    func wildcardCoverage() throws {
        let w = try HostName(parsing: "*.example.com")
        #expect(w.covers("a.example.com"))
        #expect(w.covers("emily.users.example.com"))
        #expect(!w.covers("example.com"))
        #expect(!w.covers("badexample.com"))
    }

    @Test(
        "Punycode matches RFC 3492's samples",
        arguments: [
            ("bücher", "bcher-kva"), ("münchen", "mnchen-3ya"), ("中国", "fiqs8s"), ("ü", "tda"),
            ("他们为什么不说中文", "ihqwcrb4cv8a8dqg056pqjye"),
        ])
    func punycode(_ label: String, _ encoded: String) {
        #expect(Punycode.encode(label) == encoded)
    }
}

@Suite("gzip of served files")
struct GzipTests {
    @Test("the bounded search costs AASA files almost nothing against zlib's level 9")
    func boundedSearch() throws {
        var text = #"{"applinks":{"details":["#
        for i in 0..<400 {
            text += #"{"appIDs":["ABCDE\#(10_000 + i).com.example.app\#(i % 7)"],"#
            text += #""components":[{"/":"/p\#(i)/*","comment":"section \#(i * 31)"}]},"#
        }
        let input = Array((text.dropLast() + "]}}").utf8)
        let bounded = try #require(Gzip.compress(input))
        let full = try #require(Gzip.compress(input, maxChain: 4_096))
        #expect(Gzip.decompress(bounded, limit: input.count) == input)
        #expect(Double(bounded.count) <= Double(full.count) * 1.02, "\(bounded.count) bytes against \(full.count)")
    }

    @Test("compressing then decompressing gives the bytes back", arguments: [0, 1, 100, 131_072])
    func roundTrip(_ size: Int) throws {
        let input = (0..<size).map { UInt8(truncatingIfNeeded: $0 * 7 % 13) }
        let compressed = try #require(Gzip.compress(input))
        #expect(compressed.starts(with: [0x1F, 0x8B]))  // the gzip magic
        #expect(Gzip.decompress(compressed) == input)
    }

    @Test("a buffer that is not gzip does not decompress")
    func notGzip() {
        #expect(Gzip.decompress(Array("plain text".utf8)) == nil)
    }
}
