import CAASANghttp2
import Glibc
import Synchronization

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
/// session; past `maximumMappings` live mappings, or when a mapping fails, a block comes from
/// the heap.
///
/// A session made with a `SharedFrameBuffer` (the worker's) takes that one instead: no page of
/// its own at all, and no mapping.
enum SessionMemory {
    /// The size of nghttp2's outbound frame buffer, the one block a session allocates at this
    /// size while it is being made: NGHTTP2_FRAMEBUF_CHUNKLEN, a frame header, the largest
    /// frame payload and a pad length byte (lib/nghttp2_session.h, lib/nghttp2_session.c
    /// `nghttp2_session_new`).
    static let frameBufferSize = 16_384 + 9 + 1

    /// Blocks at least this large are mapped: the frame buffer (16,394 bytes) and anything of
    /// that order (large header blocks being decoded), never the small per-stream records.
    static let mappedThreshold = 12 * 1024

    /// Once a session is made, blocks at least this large are mapped too. What nghttp2
    /// allocates this large after it made the session is a client's: the strings of large
    /// header fields (a 3,950-byte value is a block of 3.5 KB) and the entries of its HPACK
    /// table, freed when the field has been handed over or evicted. From the heap, a burst of
    /// them (every connection of a client indexing a large value before it acknowledges our
    /// 0-byte table) left RSS at its peak with the blocks free: 7 KB a connection. Mapped,
    /// their pages go back to the system when freed. Nothing of that size is allocated by
    /// nghttp2 for a usual request (its fields are short), so serving costs no mapping; the
    /// session's own blocks made with it (its 2,928-byte state, its 4 KB stream map) stay on
    /// the heap.
    static let clientBlockThreshold = 2 * 1024

    /// The size from which a block for the session at `user` is mapped.
    static func threshold(for user: UnsafeMutableRawPointer?) -> Int {
        guard let user, !HTTP2Session.of(user).isBeingMade else { return mappedThreshold }
        return clientBlockThreshold
    }

    /// Bytes in front of every block: its size and, for a mapped block, the mapping's length.
    /// 16 keeps the block aligned as malloc's own (max_align_t).
    static let headerSize = 16

    fileprivate struct Header {
        var size: Int
        /// The mapping's whole length, 0 for a heap block, `shared` for a `SharedFrameBuffer`.
        var mapped: Int
    }

    /// `Header.mapped` of a shared frame buffer: never freed by a session.
    fileprivate static let shared = -1

    /// A block for the session at `user` (nghttp2's `mem_user_data`, the `HTTP2Session`): its
    /// shared frame buffer when that is what nghttp2 asks for.
    static func allocate(_ size: Int, zeroed: Bool, for user: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
        guard size >= clientBlockThreshold else { return heapBlock(size, zeroed: zeroed) }
        if size == frameBufferSize, let user, let shared = HTTP2Session.of(user).claimSharedFrameBuffer() {
            if zeroed { shared.initializeMemory(as: UInt8.self, repeating: 0, count: size) }
            return shared
        }
        return allocate(size, zeroed: zeroed, mappedFrom: threshold(for: user))
    }

    /// Mappings this allocator holds at once, process-wide; past it, blocks come from the heap.
    /// The kernel allows a process `vm.max_map_count` regions (65,530 by default), thread stacks,
    /// libraries and malloc's own arenas included. Neighbouring mappings merge into one region,
    /// but freeing every other one leaves each a region of its own (2,000 adjacent 4 KB mappings
    /// were 3 regions in /proc/self/maps; with every other unmapped, 1,000). A client holds such
    /// blocks in its HPACK table until it acknowledges our table size: nghttp2 allocates twice a
    /// Huffman-coded string's length, so an entry of 455 table bytes (19-bit codes) holds a 2 KB
    /// block, 9 in a 4 KB table. Without a cap, some 7,300 such connections, with as many closed
    /// between them, would take every region: mmap then fails across the process (thread
    /// stacks, posix_spawn for hooks, malloc's arenas), and a munmap that must split a region
    /// fails, keeping its pages. A quarter of the default leaves the rest to the process; a
    /// block past it costs heap, not a region.
    static let maximumMappings = 16_384

    /// The live mappings of every session, counted against `maximumMappings`.
    static let mappings = MappingCount(limit: maximumMappings)

    static func allocate(
        _ size: Int, zeroed: Bool, mappedFrom threshold: Int = mappedThreshold, count: MappingCount = SessionMemory.mappings
    ) -> UnsafeMutableRawPointer? {
        let (total, overflow) = size.addingReportingOverflow(headerSize)
        guard !overflow else { return nil }
        var base: UnsafeMutableRawPointer?
        var mapped = 0
        if size >= threshold && count.take() {
            let p = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
            if let p, p != UnsafeMutableRawPointer(bitPattern: -1) {  // MAP_FAILED
                base = p  // anonymous mappings are zero-filled
                mapped = total
            } else {
                count.give()
            }
        }
        if base == nil { base = zeroed ? calloc(1, total) : malloc(total) }
        guard let base else { return nil }
        base.storeBytes(of: Header(size: size, mapped: mapped), as: Header.self)
        return base + headerSize
    }

    /// A block from the heap with its header: what nghttp2 asks for per stream and per frame
    /// (about five a request), kept apart from the mapping path, whose shared count (a global
    /// reached through its lazy initialiser, and retained) cost every block a `swift_once`, a
    /// retain and a release (`scripts/callgrind-requests.sh`). `size` is below
    /// `clientBlockThreshold`, so the total cannot overflow.
    @inline(__always)
    private static func heapBlock(_ size: Int, zeroed: Bool) -> UnsafeMutableRawPointer? {
        let total = size + headerSize
        guard let base = zeroed ? calloc(1, total) : malloc(total) else { return nil }
        base.storeBytes(of: Header(size: size, mapped: 0), as: Header.self)
        return base + headerSize
    }

    /// Whether `block` is a mapping of its own (for tests).
    static func isMapped(_ block: UnsafeMutableRawPointer) -> Bool { (block - headerSize).load(as: Header.self).mapped > 0 }

    /// Frees `block`; a mapping is given back to `count` (nil: the process-wide one, looked up
    /// only for a mapped block, see `heapBlock`).
    static func release(_ block: UnsafeMutableRawPointer?, count: MappingCount? = nil) {
        guard let block else { return }
        let base = block - headerSize
        let header = base.load(as: Header.self)
        if header.mapped == 0 {
            free(base)
            return
        }
        if header.mapped == shared { return }  // the worker's, which outlives its sessions
        // munmap fails (ENOMEM) only when it must split a region and the process has none
        // left: the pages at least go back to the system; the region stays, and counted.
        if munmap(base, header.mapped) == 0 {
            (count ?? mappings).give()
        } else {
            _ = madvise(base, header.mapped, MADV_DONTNEED)
        }
    }

    static func resize(_ block: UnsafeMutableRawPointer?, _ size: Int, for user: UnsafeMutableRawPointer? = nil) -> UnsafeMutableRawPointer?
    {
        // nghttp2 makes its frame buffer with a realloc of nothing (`nghttp2_buf_reserve`).
        guard let block else { return allocate(size, zeroed: false, for: user) }
        let old = (block - headerSize).load(as: Header.self)
        if old.mapped == 0 && (size < clientBlockThreshold || size < threshold(for: user)) {
            let (total, overflow) = size.addingReportingOverflow(headerSize)
            guard !overflow, let base = realloc(block - headerSize, total) else { return nil }
            base.storeBytes(of: Header(size: size, mapped: 0), as: Header.self)
            return base + headerSize
        }
        // Into or out of a mapping: a new block and a copy (rare: nghttp2 grows its frame
        // buffer from nothing once, and its header tables in small steps).
        guard let fresh = allocate(size, zeroed: false, mappedFrom: threshold(for: user)) else { return nil }
        fresh.copyMemory(from: block, byteCount: min(old.size, size))
        release(block)
        return fresh
    }

    /// nghttp2's allocator table for the session at `user`; nghttp2 copies it into the session.
    static func table(for user: UnsafeMutableRawPointer) -> nghttp2_mem {
        nghttp2_mem(
            mem_user_data: user,
            malloc: { size, user in SessionMemory.allocate(size, zeroed: false, for: user) },
            free: { block, _ in SessionMemory.release(block) },
            calloc: { count, size, user in
                let (total, overflow) = count.multipliedReportingOverflow(by: size)
                return overflow ? nil : SessionMemory.allocate(total, zeroed: true, for: user)
            },
            realloc: { block, size, user in SessionMemory.resize(block, size, for: user) })
    }
}

/// One outbound frame buffer for all the HTTP/2 sessions that one thread drives (a worker's),
/// in place of one per session.
///
/// Why it can be shared: nghttp2 writes a frame into its frame buffer and hands it out within
/// one `nghttp2_session_mem_send` call, and the bytes are dead once the next call begins (its
/// documentation: the pointer is valid until the next call); `HTTP2Session.produce` copies them
/// out at once. A frame too large for one buffer continues in blocks nghttp2 allocates later,
/// which are the session's own. Nothing else in a session lives in it (its positions are in a
/// small block of their own). So sessions that never run at the same time, as those of one
/// thread never do, can take turns in one buffer. Each session held a page of its own
/// (4 KB of RSS for every idle HTTP/2 connection, the buffer's first page, written by every
/// SETTINGS frame), and one mmap and munmap.
///
/// Only a session used on the thread that owns the buffer may be given it: two threads writing
/// frames into it at once would mix them.
public final class SharedFrameBuffer {
    /// The block and its header (`SessionMemory.Header`, marked shared).
    private let base: UnsafeMutableRawPointer

    public init() {
        base = .allocate(byteCount: SessionMemory.headerSize + SessionMemory.frameBufferSize, alignment: 16)
        base.storeBytes(
            of: SessionMemory.Header(size: SessionMemory.frameBufferSize, mapped: SessionMemory.shared), as: SessionMemory.Header.self)
    }

    deinit { base.deallocate() }

    /// Where nghttp2 writes frames.
    var block: UnsafeMutableRawPointer { base + SessionMemory.headerSize }
}

/// Live mappings counted against a limit, from any thread (the sessions of every worker).
final class MappingCount: Sendable {
    let limit: Int
    private let live = Atomic<Int>(0)

    init(limit: Int) { self.limit = limit }

    /// Counts one more mapping if the limit allows it.
    func take() -> Bool {
        if live.add(1, ordering: .relaxed).newValue <= limit { return true }
        live.subtract(1, ordering: .relaxed)
        return false
    }

    /// A mapping taken is gone.
    func give() { live.subtract(1, ordering: .relaxed) }

    /// Mappings held now (for tests).
    var count: Int { live.load(ordering: .relaxed) }
}
