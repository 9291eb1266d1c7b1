import CAASAZlib
import Dispatch

/// gzip (RFC 1952) of a whole buffer: compressed once per served file, on `background`, after the
/// first request that accepts it (`PreparedContent.gzipIfMade`).
public enum Gzip {
    /// Where files are compressed: one serial queue (one thread at a time), so that compression
    /// never runs on a serving thread and a burst of first requests for many files takes at most
    /// one core. Its utility class runs at a lower priority where libdispatch maps it (nice 2 on
    /// this Linux build, seen in /proc); the bound that always holds is the single thread.
    static let background = DispatchQueue(label: "aasad.gzip", qos: .utility)

    /// zlib's best level, with its search bounded: level 9 follows hash chains up to 4,096 long,
    /// and a crafted file of 128 KB made of short repeats took over a second. Chains of 128 (level
    /// 6's) keep the worst case to milliseconds; on AASA files the output stays within a few bytes
    /// of level 9's (GzipTests).
    static let tuning = (goodLength: Int32(32), maxLazy: Int32(258), niceLength: Int32(258), maxChain: Int32(128))

    /// 15 window bits + 16: a gzip header and trailer instead of zlib's (inflate takes any
    /// window up to 32 KB with it).
    private static let gzipWindowBits: Int32 = 15 + 16

    /// The window and hash sizes fit the input: a window as large as the whole file finds every
    /// match a 32 KB one would, and zlib allocates and clears its tables by these sizes. For a
    /// 2.4 KB AASA file that is 16 KB of tables instead of 640 KB and a fifth of the time, for
    /// output of nearly the same size (the smaller hash table finds slightly different matches;
    /// zlib also needs 262 bytes of lookahead inside the window, so a file within that of the
    /// window's size may lose a few matches at its end).
    public static func compress(_ input: [UInt8], maxChain: Int32? = nil) -> [UInt8]? {
        var stream = z_stream()
        let windowBits = Self.windowBits(for: input.count)
        // memLevel sets the hash table (2^(memLevel+7) entries) and the pending buffer; 9 for the
        // full window, as before, and smaller with the window.
        let memoryLevel = max(1, min(9, windowBits - 6))
        guard CAASAZlib_deflateInit2(&stream, Z_BEST_COMPRESSION, Z_DEFLATED, windowBits + 16, memoryLevel, Z_DEFAULT_STRATEGY) == Z_OK
        else {
            return nil
        }
        defer { deflateEnd(&stream) }
        let chain = maxChain ?? tuning.maxChain
        guard deflateTune(&stream, tuning.goodLength, tuning.maxLazy, tuning.niceLength, chain) == Z_OK else { return nil }
        let bound = Int(deflateBound(&stream, UInt(input.count)))
        return run(&stream, input, capacity: bound) { deflate(&$0, Z_FINISH) }
    }

    /// The smallest window (2^9 to 2^15 bytes, zlib's range) that holds `count` bytes.
    static func windowBits(for count: Int) -> Int32 {
        var bits: Int32 = 9
        while bits < 15 && (1 << bits) < count { bits += 1 }
        return bits
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
