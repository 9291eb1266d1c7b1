import CAASANghttp2
import Glibc

/// The allocator every HTTP/2 session is made with (`nghttp2_session_server_new3`): the C heap,
/// except that large blocks get an anonymous mapping of their own, so that only the pages
/// nghttp2 actually writes are resident.
///
/// Why: a session allocates its outbound frame buffer (`aob.framebuf`) at creation, one chunk
/// of 16,394 bytes that it keeps for the session's life, and writes each frame from its start.
/// From the heap those 16 KB are resident at once (heap pages are reused, already touched), and
/// were most of what an idle HTTP/2 connection cost (41 KB, against 15 KB for HTTP/1.1, with
/// 5,000 idle connections). In a mapping of its own, a connection whose frames stay under 4 KB
/// (the association files are a few KB) keeps one page. Costs one mmap and one munmap per
/// session; a failed mapping (`vm.max_map_count`) falls back to the heap.
enum SessionMemory {
    /// Blocks at least this large are mapped: the frame buffer (16,394 bytes) and anything of
    /// that order (large header blocks being decoded), never the small per-stream records.
    static let mappedThreshold = 12 * 1024

    /// Bytes in front of every block: its size and, for a mapped block, the mapping's length.
    /// 16 keeps the block aligned as malloc's own (max_align_t).
    static let headerSize = 16

    private struct Header {
        var size: Int
        /// The mapping's whole length, or 0 for a heap block.
        var mapped: Int
    }

    static func allocate(_ size: Int, zeroed: Bool) -> UnsafeMutableRawPointer? {
        let (total, overflow) = size.addingReportingOverflow(headerSize)
        guard !overflow else { return nil }
        var base: UnsafeMutableRawPointer?
        var mapped = 0
        if size >= mappedThreshold {
            let p = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            if let p, p != UnsafeMutableRawPointer(bitPattern: -1) {  // MAP_FAILED
                base = p  // anonymous mappings are zero-filled
                mapped = total
            }
        }
        if base == nil { base = zeroed ? calloc(1, total) : malloc(total) }
        guard let base else { return nil }
        base.storeBytes(of: Header(size: size, mapped: mapped), as: Header.self)
        return base + headerSize
    }

    static func release(_ block: UnsafeMutableRawPointer?) {
        guard let block else { return }
        let base = block - headerSize
        let header = base.load(as: Header.self)
        if header.mapped > 0 {
            munmap(base, header.mapped)
        } else {
            free(base)
        }
    }

    static func resize(_ block: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let block else { return allocate(size, zeroed: false) }
        let old = (block - headerSize).load(as: Header.self)
        if old.mapped == 0 && size < mappedThreshold {
            let (total, overflow) = size.addingReportingOverflow(headerSize)
            guard !overflow, let base = realloc(block - headerSize, total) else { return nil }
            base.storeBytes(of: Header(size: size, mapped: 0), as: Header.self)
            return base + headerSize
        }
        // Into or out of a mapping: a new block and a copy (rare: nghttp2 grows its frame
        // buffer from nothing once, and its header tables in small steps).
        guard let fresh = allocate(size, zeroed: false) else { return nil }
        fresh.copyMemory(from: block, byteCount: min(old.size, size))
        release(block)
        return fresh
    }

    /// nghttp2's allocator table; nghttp2 copies it into each session.
    static var table: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: nil,
            malloc: { size, _ in SessionMemory.allocate(size, zeroed: false) },
            free: { block, _ in SessionMemory.release(block) },
            calloc: { count, size, _ in
                let (total, overflow) = count.multipliedReportingOverflow(by: size)
                return overflow ? nil : SessionMemory.allocate(total, zeroed: true)
            },
            realloc: { block, size, _ in SessionMemory.resize(block, size) })
    }
}
