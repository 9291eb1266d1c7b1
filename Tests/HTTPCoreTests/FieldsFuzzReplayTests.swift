import Foundation
import TestSupport
import Testing

@testable import HTTPCore

/// Replays the field-value fuzzing corpus and saved failures (scripts/fuzz.sh fields) with the fuzz
/// target's checks (Fuzz/FuzzFields.swift), so a fixed trap stays fixed.
@Suite("Field values fuzz corpus replay")
struct FieldsFuzzReplayTests {
    /// The fuzz target's checks, as expectations.
    static func exercise(_ input: [UInt8]) {
        input.withUnsafeBytes { bytes in
            if let date = HTTPDate.parse(bytes, now: 1_767_225_600) {
                #expect(date >= -62_167_219_200 && date <= 253_402_300_800, "\(input)")
                if date >= 0 && date <= 253_402_300_799 { #expect(HTTPDate.parse(Array(HTTPDate.format(date).utf8)) == date) }
            }
            if let stamp = HTTPDate.rfc3339(bytes) {
                #expect(stamp >= -62_167_219_200 - 86_400 && stamp <= 253_402_300_799 + 86_400, "\(input)")
                if stamp >= 0 && stamp <= 253_402_300_799 { #expect(HTTPDate.rfc3339(Array(HTTPDate.iso8601(stamp).utf8)) == stamp) }
            }
            let etag = "\"abc\""
            let matched = HTTPFields.matches(ifNoneMatch: bytes, etag: etag)
            if matched {
                let longer = input + Array(", \"zzz\"".utf8)
                #expect(longer.withUnsafeBytes { HTTPFields.matches(ifNoneMatch: $0, etag: etag) }, "\(input)")
            }
            #expect(HTTPFields.notModified(etag: etag, lastModified: 784_111_777, ifNoneMatch: bytes, ifModifiedSince: nil) == matched)
            #expect(
                HTTPFields.notModified(etag: etag, lastModified: 784_111_777, ifNoneMatch: nil, ifModifiedSince: bytes)
                    == (HTTPDate.parse(bytes).map { 784_111_777 <= $0 } ?? false))
            let host = HTTPFields.normalizeHost(bytes)
            #expect(!host.utf8.contains { $0 >= 65 && $0 <= 90 })
            #expect(host.utf8.count <= 3 * bytes.count)
            if bytes.first != 91 { #expect(!host.utf8.contains(58)) }
            // A link domain's fallback: the input as a request path, and as a User-Agent.
            let target = RedirectTargetTests.encode(input)
            #expect(RedirectTargetTests.problem(input: input, output: target) == nil, "\(input)")
            // A route's capture: encoded as {path} is, and never out of its segment.
            var encoded: [UInt8] = []
            RedirectTarget.appendEncoded(bytes, to: &encoded)
            #expect(encoded == (input.first == 0x2F ? target : Array(target.dropFirst())), "\(input)")
            var segment: [UInt8] = []
            input.filter { $0 != 0x2F && $0 != 0x3F && $0 != 0x23 }.withUnsafeBytes { RedirectTarget.appendEncoded($0, to: &segment) }
            #expect(!segment.contains(0x2F) && !segment.contains(0x3F) && !segment.contains(0x23), "\(input)")
            let platform = ClientPlatform.of(userAgent: bytes)
            #expect(ClientPlatformTests.platform(bytes: input + Array(" ;".utf8)) == platform, "\(input)")
            #expect(ClientPlatformTests.platform(bytes: Array("Windows Phone ".utf8) + input) == .web, "\(input)")
            #expect(ClientPlatformTests.platform(bytes: Array("(iPhone; ".utf8) + input) != .android, "\(input)")
        }
    }

    @Test("the corpus is present and every input keeps the field functions' contracts")
    func corpus() {
        let inputs = FuzzCorpus.inputs("fields-corpus").map(\.bytes)
        #expect(inputs.count >= 10)
        inputs.forEach(Self.exercise)
    }

    @Test("the corpus holds the fallback seeds: a hostile path and User-Agents of each platform")
    func fallbackSeeds() throws {
        func seed(_ name: String) throws -> [UInt8] { try #require(FuzzCorpus.inputs("fields-corpus").first { $0.name == name }?.bytes) }
        #expect(RedirectTargetTests.encode(try seed("seed-path-hostile")).starts(with: Array("/%5C".utf8)))
        #expect(ClientPlatformTests.platform(bytes: try seed("seed-agent-iphone")) == .ios)
        #expect(ClientPlatformTests.platform(bytes: try seed("seed-agent-crios-desktop")) == .ios)
        #expect(ClientPlatformTests.platform(bytes: try seed("seed-agent-android")) == .android)
        #expect(ClientPlatformTests.platform(bytes: try seed("seed-agent-like-android")) == .web)
        #expect(ClientPlatformTests.platform(bytes: try seed("seed-agent-windows-phone")) == .web)
    }

    @Test("every saved failure stays fixed (the dates that trapped in a conversion are refused)")
    func failures() {
        let inputs = FuzzCorpus.failCases("fields-fail-cases").map(\.bytes)
        inputs.forEach(Self.exercise)
        for input in inputs where input.starts(with: Array("Sun".utf8)) { #expect(HTTPDate.parse(input) == nil, "\(input)") }
    }

    @Test("RFC 3339 timestamps: the forms ACME servers send, and what is refused")
    func rfc3339() {
        #expect(HTTPDate.rfc3339(Array("2025-01-02T04:00:00Z".utf8)) == 1_735_790_400)
        #expect(HTTPDate.rfc3339(Array("2025-01-02t04:00:00.123456789z".utf8)) == 1_735_790_400)
        #expect(HTTPDate.rfc3339(Array("2025-01-02T06:30:00+02:30".utf8)) == 1_735_790_400)
        #expect(HTTPDate.rfc3339(Array("2025-01-01T23:00:00-05:00".utf8)) == 1_735_790_400)
        for bad in [
            "2025-01-02T04:00:00", "2025-01-02 04:00:00Z", "2025-13-02T04:00:00Z", "2025-02-30T04:00:00Z", "2025-01-02T24:00:00Z",
            "2025-01-02T04:60:00Z", "2025-01-02T04:00:00.Z", "2025-01-02T04:00:00.1234567890Z", "2025-01-02T04:00:00+2:00",
            "2025-01-02T04:00:00+24:00", "99999-01-02T04:00:00Z", "2025-01-02T04:00:00Zjunk", "-025-01-02T04:00:00Z", "",
        ] {
            #expect(HTTPDate.rfc3339(Array(bad.utf8)) == nil, "\(bad)")
        }
    }
}
