import TestSupport
import Testing

@testable import HTTPCore

/// The Last-Modified of a served file is written into each response (`HTTPDate.write`), by
/// arithmetic rather than gmtime_r: it must be what gmtime_r gave, for every time.
@Suite("HTTP dates written into a response")
struct FileHeadTests {
    static func written(_ seconds: Int64) -> String {
        var out: [UInt8] = [0x41]
        HTTPDate.write(seconds, into: &out)
        return String(decoding: out.dropFirst(), as: UTF8.self)
    }

    @Test("the same text as gmtime_r: the awkward times, every day's first and last second to 2100, and spread to 9999")
    func sameAsGmtime() {
        var times = ReferenceHeads.times
        for day in Int64(0)..<Int64(47_482) { times += [day * 86_400, day * 86_400 + 86_399] }
        var generator = SplitMix64(seed: 32)
        for _ in 0..<100_000 { times.append(Int64.random(in: HTTPDate.fixedRange, using: &generator)) }
        let differing = times.filter { Self.written($0) != ReferenceHeads.date($0) || HTTPDate.format($0) != ReferenceHeads.date($0) }
        #expect(differing.isEmpty, "\(differing.prefix(5).map { ($0, Self.written($0), ReferenceHeads.date($0)) })")
    }

    @Test("inside the fixed range a date is 29 bytes; outside it, what gmtime_r made of it")
    func lengths() {
        #expect(Self.written(HTTPDate.fixedRange.lowerBound).utf8.count == HTTPDate.fixedLength)
        #expect(Self.written(HTTPDate.fixedRange.upperBound) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(Self.written(HTTPDate.fixedRange.upperBound + 1) == "Sat, 01 Jan 10000 00:00:00 GMT")
        #expect(Self.written(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        #expect(Self.written(Int64.max) == ReferenceHeads.date(Int64.max))
    }

    @Test("a length is written in decimal")
    func decimal() {
        for value in [0, 1, 9, 10, 255, 256, 65_536, Int.max] {
            var out: [UInt8] = [0x2D]
            FileHead.writeDecimal(value, into: &out)
            #expect(String(decoding: out, as: UTF8.self) == "-\(value)")
        }
    }
}
