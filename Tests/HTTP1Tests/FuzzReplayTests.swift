import Foundation
import HTTPCore
import Testing

@testable import HTTP1

/// Replays the HTTP/1 fuzzing corpus and saved failures (scripts/fuzz.sh) with the fuzz target's
/// checks, so a fixed crash stays fixed.
@Suite("HTTP/1 fuzz corpus replay")
struct HTTP1FuzzReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ folder: String) -> [[UInt8]] {
        let dir = fuzz.appendingPathComponent(folder)
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        return names.compactMap { try? Data(contentsOf: dir.appendingPathComponent($0)) }.map { [UInt8]($0) }
    }

    /// The fuzz target's checks: fields inside their request, and the same answer however the
    /// bytes are split.
    static func exercise(_ input: [UInt8]) {
        input.withUnsafeBytes { bytes in
            var parser = HTTP1Parser()
            var offset = 0
            while offset < bytes.count {
                guard case .complete(let head) = parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...])) else { break }
                #expect(head.length > 0 && head.length <= bytes.count - offset)
                #expect(head.path.upperBound <= head.length && (head.host?.upperBound ?? 0) <= head.length)
                // What the server does next with the fields (issue 10: the date trap was here).
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                func field(_ range: Range<Int>?) -> UnsafeRawBufferPointer? { range.map { UnsafeRawBufferPointer(rebasing: rest[$0]) } }
                if let host = field(head.host) { #expect(!HTTPFields.normalizeHost(host).utf8.contains { $0 >= 65 && $0 <= 90 }) }
                let notModified = HTTPFields.notModified(
                    etag: "\"abc\"", lastModified: 0, ifNoneMatch: field(head.ifNoneMatch), ifModifiedSince: field(head.ifModifiedSince))
                if head.ifNoneMatch == nil && notModified { #expect(field(head.ifModifiedSince).flatMap { HTTPDate.parse($0) } != nil) }
                offset += head.length
                parser.reset()
            }
            if bytes.count > 1 {
                var whole = HTTP1Parser()
                var split = HTTP1Parser()
                let first = split.parse(UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]))
                let expected = whole.parse(bytes)
                if case .incomplete = first { #expect(split.parse(bytes) == expected) }
            }
        }
    }

    @Test("the corpus is present and every input keeps the parser's invariants")
    func corpus() {
        let inputs = Self.inputs("http1-corpus")
        #expect(inputs.count > 50)
        inputs.forEach(Self.exercise)
    }

    @Test("every saved failure stays fixed")
    func failures() {
        let inputs = Self.inputs("http1-fail-cases")
        #expect(!inputs.isEmpty)
        inputs.forEach(Self.exercise)
    }
}
