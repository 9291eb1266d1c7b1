import Glibc

// Request bytes compared with a constant, once or more per request: through memcmp. The generic
// `elementsEqual` walks both sides through iterators, byte by byte (about 800 instructions to
// route one AASA path, measured with callgrind).

extension UnsafeRawBufferPointer {
    /// Whether these bytes are exactly `other`'s.
    public func equals(_ other: [UInt8]) -> Bool {
        guard count == other.count else { return false }
        guard let start = baseAddress, count > 0 else { return true }
        return other.withUnsafeBytes { memcmp(start, $0.baseAddress!, count) == 0 }
    }

    /// Whether these bytes are exactly `other`'s (an ASCII constant such as a field name).
    public func equals(_ other: StaticString) -> Bool {
        guard count == other.utf8CodeUnitCount else { return false }
        guard let start = baseAddress, count > 0 else { return true }
        return memcmp(start, other.utf8Start, count) == 0
    }

    /// Whether these bytes begin with `prefix`.
    public func starts(with prefix: [UInt8]) -> Bool {
        count >= prefix.count && UnsafeRawBufferPointer(rebasing: self[..<prefix.count]).equals(prefix)
    }
}
