@testable import HTTP2

/// Feeding a session bytes and draining what it writes, as the raw-frame suites do.
enum SessionIO {
    static func receive(_ session: HTTP2Session, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { session.receive($0, now: 0) }
    }

    static func output(_ session: HTTP2Session) -> [UInt8] {
        var out: [UInt8] = []
        for _ in 0..<100 where session.wantsWrite { session.produce(into: &out, limit: 1 << 20) }
        return out
    }
}
