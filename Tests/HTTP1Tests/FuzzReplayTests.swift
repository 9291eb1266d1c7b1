import Foundation
import HTTPCore
import TestSupport
import Testing

@testable import HTTP1

/// Replays the HTTP/1 fuzzing corpus and saved failures (scripts/fuzz.sh) with the fuzz target's
/// checks, so a fixed crash stays fixed.
@Suite("HTTP/1 fuzz corpus replay")
struct HTTP1FuzzReplayTests {
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
                // What the server does next with the fields (a date that trapped in a conversion was found here).
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                func field(_ range: Range<Int>?) -> UnsafeRawBufferPointer? { range.map { UnsafeRawBufferPointer(rebasing: rest[$0]) } }
                if let host = field(head.host) { #expect(!HTTPFields.normalizeHost(host).utf8.contains { $0 >= 65 && $0 <= 90 }) }
                let notModified = HTTPFields.notModified(
                    etag: "\"abc\"", lastModified: 0, ifNoneMatch: field(head.ifNoneMatch), ifModifiedSince: field(head.ifModifiedSince))
                if head.ifNoneMatch == nil && notModified { #expect(field(head.ifModifiedSince).flatMap { HTTPDate.parse($0) } != nil) }
                offset += head.length
                parser.reset()
            }
        }
        checkEverySplit(input)
    }

    /// Inputs up to this size are also checked as two reads split at every point (a fresh
    /// parser per point: quadratic in the size). Above it the quadratic check would take minutes
    /// in a debug build for the corpus' inputs near the 16 KB head limit; they are still fed one
    /// byte more per read, which stops at every point.
    static let twoReadCheckLimit = 2_048

    /// The same answer however the first request's bytes arrive, at every split point:
    /// - one parser fed the input one byte more per read (each read holding all the bytes so far,
    ///   as the server's buffer does): incomplete until the answer is decided, then the whole
    ///   input's answer;
    /// - up to `twoReadCheckLimit` bytes, a fresh parser per point fed the prefix, then the whole:
    ///   the prefix may already be complete (the same request) or refused (the whole is refused
    ///   too); otherwise the second read gives the whole input's answer.
    static func checkEverySplit(_ input: [UInt8]) {
        input.withUnsafeBytes { bytes in
            var whole = HTTP1Parser()
            let expected = whole.parse(bytes)
            var growing = HTTP1Parser()
            var decided = false
            for count in 1...max(bytes.count, 1) where !decided && count <= bytes.count {
                let answer = growing.parse(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
                decided = agrees(answer, expected, count == bytes.count, "fed one byte more per read, at \(count) of \(bytes.count)")
            }
            guard bytes.count > 1, bytes.count <= twoReadCheckLimit else { return }
            for point in 1..<bytes.count {
                var split = HTTP1Parser()
                let first = split.parse(UnsafeRawBufferPointer(rebasing: bytes[..<point]))
                if !agrees(first, expected, false, "two reads split at \(point) of \(bytes.count)") {
                    _ = agrees(split.parse(bytes), expected, true, "two reads split at \(point) of \(bytes.count), second read")
                }
            }
        }
    }

    /// Whether `answer`, from a prefix (or all of the input when `last`), decides the request the
    /// way the whole input does; records an issue when it contradicts it. Incomplete decides
    /// nothing, and is wrong only for the whole input.
    static func agrees(_ answer: HTTP1Parser.Result, _ expected: HTTP1Parser.Result, _ last: Bool, _ context: String) -> Bool {
        switch answer {
        case .incomplete:
            if last { #expect(answer == expected, "\(context): whole input gives \(expected)") }
            return last
        case .complete:
            #expect(answer == expected, "\(context): \(answer), whole input gives \(expected)")
        case .failed:
            if case .failed = expected {} else { Issue.record("\(context): \(answer), whole input gives \(expected)") }
        }
        return true
    }

    @Test("the corpus is present and every input keeps the parser's invariants")
    func corpus() {
        let inputs = FuzzCorpus.inputs("http1-corpus").map(\.bytes)
        #expect(inputs.count > 50)
        inputs.forEach(Self.exercise)
    }

    @Test("every saved failure stays fixed")
    func failures() {
        let inputs = FuzzCorpus.failCases("http1-fail-cases").map(\.bytes)
        inputs.forEach(Self.exercise)
    }
}
