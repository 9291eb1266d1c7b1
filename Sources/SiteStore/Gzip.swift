import CAASAZlib

/// gzip (RFC 1952) of a whole buffer at the best compression: run once per file at load time.
public enum Gzip {
    public static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // 15 window bits + 16: a gzip header and trailer instead of zlib's.
        guard CAASAZlib_deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) == Z_OK else {
            return nil
        }
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, UInt(input.count)))
        var output = [UInt8](repeating: 0, count: bound)
        var mutableInput = input
        let status = mutableInput.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(output.count - Int(stream.total_out))
        return output
    }

    /// Decompresses a gzip buffer (tests check that what is served decompresses to the file).
    public static func decompress(_ input: [UInt8], limit: Int = 1 << 20) -> [UInt8]? {
        var stream = z_stream()
        guard CAASAZlib_inflateInit2(&stream, 15 + 16) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: limit)
        var mutableInput = input
        let status = mutableInput.withUnsafeMutableBufferPointer { inBuf in
            output.withUnsafeMutableBufferPointer { outBuf in
                stream.next_in = inBuf.baseAddress
                stream.avail_in = UInt32(inBuf.count)
                stream.next_out = outBuf.baseAddress
                stream.avail_out = UInt32(outBuf.count)
                return inflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        output.removeLast(output.count - Int(stream.total_out))
        return output
    }
}
