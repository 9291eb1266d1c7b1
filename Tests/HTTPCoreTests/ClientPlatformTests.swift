import Foundation
import TestSupport
import Testing

@testable import HTTPCore

/// Which fallback target a browser gets: real User-Agent strings from
/// Fixtures/user-agents.tsv, each with its source, and the rules' edges one by one.
@Suite("ClientPlatform: the fallback platform from a User-Agent")
struct ClientPlatformTests {
    /// One line of the fixture.
    struct Case: CustomStringConvertible, Sendable {
        var expected: ClientPlatform
        var label: String
        var agent: String
        var line: Int
        var description: String { "line \(line): \(label)" }
    }

    /// Fixtures/user-agents.tsv beside this file: `platform<TAB>label<TAB>User-Agent`, `#` comments.
    static let cases: [Case] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/user-agents.tsv")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        var cases: [Case] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false)
            let platform = fields.count == 3 ? ClientPlatform.allCases.first { $0.label == fields[0] } : nil
            // A malformed line becomes a case that cannot pass, so a typo is reported, not skipped.
            cases.append(
                Case(
                    expected: platform ?? .web, label: platform == nil ? "malformed: \(line)" : String(fields[1]),
                    agent: fields.count == 3 ? String(fields[2]) : "\u{0}malformed", line: index + 1))
        }
        return cases
    }()

    static func platform(_ agent: String) -> ClientPlatform { platform(bytes: Array(agent.utf8)) }

    static func platform(bytes: [UInt8]) -> ClientPlatform { bytes.withUnsafeBytes { ClientPlatform.of(userAgent: $0) } }

    @Test("the fixture is present, well formed, and covers every platform with real strings")
    func fixture() {
        #expect(Self.cases.count >= 90)
        #expect(!Self.cases.contains { $0.label.hasPrefix("malformed") })
        for platform in ClientPlatform.allCases {
            #expect(Self.cases.filter { $0.expected == platform }.count >= 15, "\(platform.label)")
        }
    }

    @Test("every real User-Agent gets the platform its device runs", arguments: cases)
    func realAgents(_ item: Case) {
        #expect(Self.platform(item.agent) == item.expected, "\(item.agent)")
    }

    @Test("no User-Agent, or an empty one, is web")
    func absent() {
        #expect(ClientPlatform.of(userAgent: nil) == .web)
        #expect(Self.platform("") == .web)
    }

    @Test("tokens are matched as browsers write them: case-sensitive, at a word's start")
    func tokens() {
        // Inside a longer word the token is not a device name.
        #expect(Self.platform("TripAdvisoriPad/1.0") == .web)
        #expect(Self.platform("MyAndroidApp/2") == .web)
        #expect(Self.platform("x9iPhone") == .web)
        // Browsers write these tokens in one case only; anything else names no device.
        #expect(Self.platform("okhttp/4.12.0 (android)") == .web)
        #expect(Self.platform("IPHONE") == .web)
        #expect(Self.platform("crios/1") == .web)
        // After punctuation, at the very start, or right at the end, the token counts.
        #expect(Self.platform("iPad") == .ios)
        #expect(Self.platform("x/iPhone") == .ios)
        #expect(Self.platform("(Android") == .android)
        #expect(Self.platform("Android") == .android)
        // A token may be cut short by the end of the value: no read past it, no match.
        #expect(Self.platform("iPho") == .web)
        #expect(Self.platform("Andr") == .web)
        #expect(Self.platform("Windows Phon") == .web)
    }

    @Test("Windows Phone decides before every other token, wherever it stands")
    func windowsPhoneFirst() {
        #expect(Self.platform("Mozilla/5.0 (iPhone; Android 9; Windows Phone 10.0)") == .web)
        #expect(Self.platform("Windows Phone") == .web)
    }

    @Test("an iOS token decides before Android: iOS browsers never claim Android")
    func iosBeforeAndroid() {
        #expect(Self.platform("Android 14; iPhone") == .ios)
        #expect(Self.platform("Android 14 CriOS/120") == .ios)
    }

    @Test("a token right after \"like \" is a compatibility claim, not the device")
    func likeIsAClaim() {
        #expect(Self.platform("Mozilla/5.0 (Foo like iPhone)") == .web)
        #expect(Self.platform("like Android 9") == .web)
        #expect(Self.platform("like iPad") == .web)
        // Only the word "like" and one space: longer words, other spacing, or a second mention count.
        #expect(Self.platform("Unlike iPhone") == .ios)
        #expect(Self.platform("(alike Android") == .android)
        #expect(Self.platform("likeiPhone") == .web, "no space: inside a word")
        #expect(Self.platform("like  iPhone") == .ios, "two spaces: not the phrase")
        #expect(Self.platform("like iPhone; iPhone") == .ios, "a later plain mention counts")
        #expect(Self.platform("like Android; Android 14") == .android)
    }

    @Test("the iOS browsers' own tokens mean iOS even in a Mac User-Agent (desktop mode)")
    func iosBrowserTokens() {
        let mac = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko)"
        #expect(Self.platform(mac + " Version/18.6 Safari/605.1.15") == .web)
        #expect(Self.platform(mac + " CriOS/141 Version/18.6 Safari/605.1.15") == .ios)
        #expect(Self.platform(mac + " EdgiOS/141 Version/18.6 Safari/605.1.15") == .ios)
        #expect(Self.platform(mac + " FxiOS/143.0 Version/18.6 Safari/605.1.15") == .ios)
    }

    @Test("labels are the fixed metric label set")
    func labels() {
        #expect(ClientPlatform.allCases.map(\.label) == ["web", "ios", "android"])
    }

    @Test("any bytes, including invalid UTF-8 and controls, give a platform without trapping")
    func anyBytes() {
        var generator = SplitMix64(seed: 0x5EED_0012)
        let alphabet = Array("iPhonedAroidWwsCOSFxEgl k(;/)".utf8) + [0x00, 0x0A, 0x80, 0xFF]
        for _ in 0..<5_000 {
            let count = Int(generator.next() % 48)
            let bytes = (0..<count).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
            let platform = bytes.withUnsafeBytes { ClientPlatform.of(userAgent: $0) }
            // A suffix without letters cannot start or finish a token: the answer stays.
            let longer = (bytes + Array(" ;".utf8)).withUnsafeBytes { ClientPlatform.of(userAgent: $0) }
            #expect(platform == longer, "\(bytes)")
        }
    }
}
