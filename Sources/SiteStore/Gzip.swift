import CAASAZlib

/// gzip (RFC 1952) of a whole buffer: compressed once per file at load time, at the best level.
public enum Gzip {
    /// 15 window bits + 16: a gzip header and trailer instead of zlib's.
    private static let gzipWindowBits: Int32 = 15 + 16

    public static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard CAASAZlib_deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, gzipWindowBits, 9, Z_DEFAULT_STRATEGY) == Z_OK else {
            return nil
        }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, UInt(input.count)))
        return run(&stream, input, capacity: bound) { deflate(&$0, Z_FINISH) }
    }

    /// Decompresses a gzip buffer of at most `limit` bytes (tests check that what is served
    /// decompresses to the file).
    public static func decompress(_ input: [UInt8], limit: Int = 1 << 20) -> [UInt8]? {
        var stream = z_stream()
        guard CAASAZlib_inflateInit2(&stream, gzipWindowBits) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        return run(&stream, input, capacity: limit) { inflate(&$0, Z_FINISH) }
    }

    /// Feeds all of `input` through one zlib call into a buffer of `capacity` bytes; nil unless the
    /// stream ended within it.
    private static func run(_ stream: inout z_stream, _ input: [UInt8], capacity: Int, _ step: (inout z_stream) -> Int32) -> [UInt8]? {
        var output = [UInt8](repeating: 0, count: capacity)
        var mutableInput = input
        let status = mutableInput.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                return step(&stream)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        // A copy of exactly the output: the buffer was sized for the worst case (deflateBound is
        // larger than the input), and a prepared file keeps its gzip body for as long as it is
        // served (removeLast would keep the whole capacity).
        return Array(output[..<Int(stream.total_out)])
    }
}
