import CAASANghttp2
public import HTTPCore

// Longer than 400 lines on purpose: the session and the nghttp2 callbacks at its end share its
// private state (the held bytes, both budgets, the streams), which stays private to be counted in
// one place; the request type it fills comes first.

/// One request read from an HTTP/2 stream: the fields serving needs, copied out of nghttp2's
/// buffers (they are valid only during a callback) into one buffer per request.
public struct HTTP2Request: Sendable {
    public var stream: Int32
    public var method: Method = .other
    /// The kept field values, back to back; the ranges below index into it. One allocation per
    /// request instead of one per field, and it holds each kept field once: a value that
    /// replaces or extends another is written over it, never beside it.
    private var kept: [UInt8] = []
    /// Where `:path` (query included), `:authority` (else `host`), `if-none-match`,
    /// `if-modified-since` and `user-agent` are in `kept`.
    private var targetRange: Range<Int> = 0..<0
    private var authorityRange: Range<Int>?
    private var ifNoneMatchRange: Range<Int>?
    private var ifModifiedSinceRange: Range<Int>?
    private var userAgentRange: Range<Int>?
    /// Where the path ends in the target: at `?`, or at the end.
    public private(set) var pathEnd = 0
    public var acceptsGzip = false
    /// The client sent a body (DATA), or said it will (a `content-length` other than 0): nothing
    /// served takes one.
    public var hasBody = false
    /// Header bytes received, for the bound.
    var fieldBytes = 0

    init(stream: Int32) { self.stream = stream }

    /// `:path` as sent, query included (for the access log).
    public var target: ArraySlice<UInt8> { kept[targetRange] }
    /// `:path` up to `?`.
    public var path: ArraySlice<UInt8> { kept[targetRange.lowerBound..<targetRange.lowerBound + pathEnd] }
    /// `:authority`, else `host`.
    public var authority: ArraySlice<UInt8>? { authorityRange.map { kept[$0] } }
    /// Every `if-none-match` field of the request, joined with ", " (RFC 9110 §5.3).
    public var ifNoneMatch: ArraySlice<UInt8>? { ifNoneMatchRange.map { kept[$0] } }
    public var ifModifiedSince: ArraySlice<UInt8>? { ifModifiedSinceRange.map { kept[$0] } }
    public var userAgent: ArraySlice<UInt8>? { userAgentRange.map { kept[$0] } }

    /// The request's fields as raw bytes, valid during `body`: target, path, authority,
    /// if-none-match, if-modified-since, user-agent.
    public func withFields<R>(
        _ body: (
            _ target: UnsafeRawBufferPointer, _ path: UnsafeRawBufferPointer, _ authority: UnsafeRawBufferPointer?,
            _ ifNoneMatch: UnsafeRawBufferPointer?, _ ifModifiedSince: UnsafeRawBufferPointer?, _ userAgent: UnsafeRawBufferPointer?
        ) -> R
    ) -> R {
        kept.withUnsafeBytes { all in
            func slice(_ range: Range<Int>?) -> UnsafeRawBufferPointer? { range.map { UnsafeRawBufferPointer(rebasing: all[$0]) } }
            let target = UnsafeRawBufferPointer(rebasing: all[targetRange])
            return body(
                target, UnsafeRawBufferPointer(rebasing: target[..<pathEnd]), slice(authorityRange), slice(ifNoneMatchRange),
                slice(ifModifiedSinceRange), slice(userAgentRange))
        }
    }

    /// Bytes this request holds: its kept buffer's allocation as asked for (the elements and the
    /// array's header), or nothing before the first value is kept. The capacity asked for, not
    /// the one the array reports: that one is what the allocator's block turned out to hold,
    /// which depends on which free block it reused (up to `allocationSlack` more), so two equal
    /// requests could count differently and the budgets' arithmetic would follow the heap's history.
    var heldBytes: Int { reserved == 0 ? 0 : reserved + Self.storageHeader }
    /// The capacity `kept` was last sized to (`store`).
    private var reserved = 0

    /// Bytes in front of an array's elements (its count and capacity, and the object header, on
    /// a 64-bit platform).
    static let storageHeader = 32
    /// What the allocator may add to a block beyond the size asked for: glibc rounds a chunk up
    /// to 16 bytes, and Swift takes the rounding as capacity. Counted before an allocation, so
    /// that what the block turns out to hold never passes the budget.
    static let allocationSlack = 16
    /// Room for a usual request's kept values (a path, a host, a User-Agent) in one allocation.
    static let initialCapacity = 256

    /// Why a field ends its stream.
    enum Refusal: Equatable {
        /// The header list passed `limit` (SETTINGS_MAX_HEADER_LIST_SIZE).
        case tooLarge
        /// Keeping the value would pass the bytes the session may still hold (`room`).
        case overBudget
        /// A second `user-agent` or `if-modified-since`: a field defined as one value, which a
        /// sender must not repeat (RFC 9110 §5.3; nginx answers 400 to the same), or a malformed
        /// `:path`.
        case malformed
    }

    /// Takes one field of the request's header block. nil when taken; otherwise why the stream
    /// must be refused. `room`: the bytes the request's buffer may still grow by, less what it grew.
    mutating func take(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, limit: Int, room: inout Int) -> Refusal? {
        fieldBytes += name.count + value.count + 32  // RFC 9113 §6.5.2 counts 32 per field
        guard fieldBytes <= limit else { return .tooLarge }
        // Matched as bytes, by length first: no String and no generic comparison per field.
        switch name.count {
        case 4 where UnsafeRawBufferPointer(name).equals("host"):
            // nghttp2 refuses a second `host` itself; `:authority` wins over it (RFC 9113 §8.3.1).
            if authorityRange == nil { return keep(value, as: .authority, room: &room) }
        case 5 where UnsafeRawBufferPointer(name).equals(":path"):
            // A request target never holds a fragment (RFC 9110 §7.1): malformed, the stream is
            // refused, as HTTP/1.1 answers it 400 (RFC 9113 §8.1.1). nghttp2 refuses a second
            // `:path` itself (RFC 9113 §8.3).
            guard !value.contains(35) else { return .malformed }
            guard let range = store(value, replacing: targetRange.isEmpty ? nil : targetRange, room: &room) else { return .overBudget }
            targetRange = range
            pathEnd = value.firstIndex(of: 63) ?? value.count
        case 7 where UnsafeRawBufferPointer(name).equals(":method"):
            method = Method(UnsafeRawBufferPointer(value))
        case 10 where UnsafeRawBufferPointer(name).equals(":authority"):
            return keep(value, as: .authority, room: &room)
        case 10 where UnsafeRawBufferPointer(name).equals("user-agent"):
            guard userAgentRange == nil else { return .malformed }
            return keep(value, as: .userAgent, room: &room)
        case 13 where UnsafeRawBufferPointer(name).equals("if-none-match"):
            // A list (RFC 9110 §13.1.2): lines are joined into one value, within the budget.
            return keep(value, as: .ifNoneMatch, joining: ifNoneMatchRange != nil, room: &room)
        case 14 where UnsafeRawBufferPointer(name).equals("content-length"):
            // A GET or HEAD is answered when its header block ends (`HTTP2Session.frameReceived`),
            // before any DATA: the length announces the body it would refuse. nghttp2 has checked
            // the value is digits (RFC 9113 §8.1.1) and checks the DATA against it.
            if value.contains(where: { $0 != 48 }) { hasBody = true }
        case 15 where UnsafeRawBufferPointer(name).equals("accept-encoding"):
            acceptsGzip = HTTPFields.acceptsGzip(UnsafeRawBufferPointer(value))
        case 17 where UnsafeRawBufferPointer(name).equals("if-modified-since"):
            guard ifModifiedSinceRange == nil else { return .malformed }
            return keep(value, as: .ifModifiedSince, room: &room)
        default: break
        }
        return nil
    }

    /// The kept fields other than the target.
    private enum Field { case authority, userAgent, ifNoneMatch, ifModifiedSince }

    /// `store` for `field` (a switch rather than a key path: this runs for most fields of every
    /// request).
    private mutating func keep(_ value: UnsafeBufferPointer<UInt8>, as field: Field, joining: Bool = false, room: inout Int) -> Refusal? {
        let old: Range<Int>?
        switch field {
        case .authority: old = authorityRange
        case .userAgent: old = userAgentRange
        case .ifNoneMatch: old = ifNoneMatchRange
        case .ifModifiedSince: old = ifModifiedSinceRange
        }
        guard let range = store(value, replacing: old, joining: joining, room: &room) else { return .overBudget }
        switch field {
        case .authority: authorityRange = range
        case .userAgent: userAgentRange = range
        case .ifNoneMatch: ifNoneMatchRange = range
        case .ifModifiedSince: ifModifiedSinceRange = range
        }
        return nil
    }

    /// Keeps `value` in place of the field at `range` (nil: a new field), or after it with ", "
    /// when `joining`; returns where the field now is, or nil when the buffer would have to grow
    /// by more than `room` (nothing is changed then); what it grew by is taken from `room`.
    private mutating func store(_ value: UnsafeBufferPointer<UInt8>, replacing range: Range<Int>?, joining: Bool = false, room: inout Int)
        -> Range<Int>?
    {
        let old = range ?? kept.endIndex..<kept.endIndex
        let added = joining ? value.count + 2 : value.count
        let length = joining ? old.count + added : value.count
        let (needed, overflow) = (kept.count - old.count).addingReportingOverflow(length)
        guard !overflow else { return nil }
        if needed > kept.capacity {
            // Sized exactly (rounded to the allocator's 16 bytes), not doubled: the room is what
            // the budget allows, and a doubled buffer would hold up to twice what it needs.
            let capacity = (max(needed, Self.initialCapacity) + 15) & ~15
            let before = heldBytes
            guard capacity + Self.storageHeader + Self.allocationSlack - before <= room else { return nil }
            kept.reserveCapacity(capacity)
            reserved = capacity
            room -= heldBytes - before
        }
        if range == nil {
            kept.append(contentsOf: value)  // the usual case: a field's first value
        } else if joining {
            kept.insert(contentsOf: [44, 32] + Array(value), at: old.upperBound)
        } else {
            kept.replaceSubrange(old, with: value)
        }
        // Values after the one rewritten move by the change in its length (an appended one has
        // none after it).
        let shift = length - old.count
        if range != nil && shift != 0 {
            func move(_ r: inout Range<Int>?) {
                if let s = r, s.lowerBound >= old.upperBound, s != old { r = s.lowerBound + shift..<s.upperBound + shift }
            }
            var target: Range<Int>? = targetRange
            move(&target)
            targetRange = target ?? 0..<0
            move(&authorityRange)
            move(&ifNoneMatchRange)
            move(&ifModifiedSinceRange)
            move(&userAgentRange)
        }
        return old.lowerBound..<old.lowerBound + length
    }
}

/// An HTTP/2 server session over libnghttp2's memory API: the worker feeds it the bytes it read,
/// takes the complete requests, submits responses, and writes what the session produces. No
/// thread, no socket of its own.
public final class HTTP2Session {
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). An AASA client
    /// needs one or two; h2o and nginx default to 100 and 128.
    public static let maximumConcurrentStreams: UInt32 = 100
    /// Largest header list accepted per request (SETTINGS_MAX_HEADER_LIST_SIZE, and enforced):
    /// the same 16 KB as an HTTP/1.1 head.
    public static let maximumHeaderListSize = 16_384
    /// The HPACK dynamic table the client's encoder may fill in our decoder: the protocol's
    /// default of 4,096 bytes (RFC 9113 §6.5.2), never advertised, as h2o and nginx do. A smaller
    /// advertised size (512 and 0 were tried) obliges the client's encoder to begin its first
    /// header block after our SETTINGS with a dynamic table size update (RFC 7541 §4.2), and
    /// nghttp2 ends the connection with COMPRESSION_ERROR when it does not: h2spec's client never
    /// sends one and failed 45 of 146 cases on it (docs/reliability.md, "HTTP/2 conformance"), and
    /// a client that fails that way cannot fetch the AASA file at all. The cost is up to 4 KB a
    /// client may keep indexed per connection, what nginx keeps too (docs/benchmarks.md).
    public static let headerTableSize: UInt32 = 4_096
    /// CONTINUATION frames per header block (CVE-2024-27316/28182: a flood of them).
    public static let maximumContinuations = 8
    /// SETTINGS frames accepted per SETTINGS frame batch, and queued outbound ACKs (PING and
    /// SETTINGS floods): nghttp2 closes the connection beyond these.
    public static let maximumSettings = 32
    public static let maximumOutboundAcks = 1_000
    /// Rapid reset (CVE-2023-44487): streams a client may reset within `resetWindow`
    /// milliseconds before the connection is closed with ENHANCE_YOUR_CALM.
    public static let maximumResetsPerWindow = 200
    public static let resetWindow: Int64 = 1_000
    /// Bytes the fields of all of a session's incomplete requests may hold together (each
    /// request's kept buffer, as allocated). Without it, 100 streams of 16 KB header lists, each
    /// a few bytes on the wire with HPACK's indexing, held 1.6 MB per connection. 64 KB is four
    /// full 16 KB header lists, or over 200 usual requests (a path, a host and a User-Agent in
    /// 256 bytes) waiting for their END_STREAM. A stream whose field would pass it is refused
    /// (REFUSED_STREAM) and what it held is freed.
    public static let maximumHeldBytes = 65_536

    private var session: OpaquePointer?
    // The state below is touched by every nghttp2 callback (ten or more per request). A session
    // belongs to one worker thread, nghttp2 calls back only from inside `receive` and `produce`,
    // and no access to these properties is held across a call into nghttp2 (respond's `nva` is
    // passed to nghttp2_submit_response, which calls nothing back). Dynamic exclusivity checks
    // therefore find nothing here, and cost about 3,500 instructions per request (callgrind).
    /// The request whose header block is being read (a header block arrives in one piece, RFC
    /// 9113 §4.3): the usual request never touches `streams`.
    @exclusivity(unchecked) private var current: HTTP2Request?
    /// `current`'s stream, 0 when there is none (0 is never a request's stream): the callbacks
    /// ask which stream is current for every field, and reading it through the optional copied
    /// the whole request out of it, with a retain and a release of its buffer (ten times a
    /// request, `scripts/callgrind-requests.sh`).
    @exclusivity(unchecked) private var currentStream: Int32 = 0
    /// Requests begun and not ended, other than `current` (a request body, or streams
    /// interleaved by a client).
    @exclusivity(unchecked) private var streams: [Int32: HTTP2Request] = [:]
    @exclusivity(unchecked) private var ready: [HTTP2Request] = []
    /// The batch being answered (`ready`'s storage swapped out, so neither reallocates).
    @exclusivity(unchecked) private var answering: [HTTP2Request] = []
    /// A response whose body is being sent: the body and how much of it went out, and what its
    /// HEADERS frame points into (nghttp2 takes those fields uncopied, `respond`).
    private struct Outgoing {
        var stream: Int32
        var body: [UInt8]
        var offset: Int
        /// Kept until the body's last byte is out: nghttp2 encodes a stream's HEADERS before it
        /// asks for its first DATA, so the field bytes it was pointed at live long enough.
        /// nghttp2.h (`nghttp2_submit_response`) asks that uncopied fields be kept until
        /// `nghttp2_on_frame_send_callback` or `nghttp2_on_frame_not_send_callback` would be
        /// called; the entry goes sooner only when the stream closes (`streamClosed`), and then
        /// nghttp2 never reads them: a frame queued for a closed stream is dropped unencoded
        /// (lib/nghttp2_session.c: `nghttp2_session_close_stream` leaves a queued item to "be
        /// deleted when it is popped", where `session_prep_frame` fails with
        /// NGHTTP2_ERR_STREAM_CLOSED from `session_predicate_for_stream_send` and
        /// `nghttp2_session_mem_send_internal` frees the item; a HEADERS frame already encoded
        /// points at nothing of ours).
        var head: ResponseHead
        var date: [UInt8]
    }

    /// Response bodies being sent, read by the data provider until the stream closes. A list:
    /// a client has at most `maximumConcurrentStreams` open, usually a few.
    @exclusivity(unchecked) private var bodies: [Outgoing] = []
    /// The name-value list handed to nghttp2 per response, kept between responses.
    @exclusivity(unchecked) private var nva: [nghttp2_nv] = []
    /// The prepared fields `nva` was last filled from, with which flags and after how many
    /// leading entries (`respond`): the next response of the same file rewrites only `:status`
    /// and `date`.
    @exclusivity(unchecked) private var nvaFields: PreparedFields?
    /// Or the shared parts and form of the served file's head it was last filled for, and how
    /// many fields that head has (`respond`).
    @exclusivity(unchecked) private var nvaParts: FileHeadParts?
    @exclusivity(unchecked) private var nvaForm = FileHead.Form.ok
    @exclusivity(unchecked) private var nvaFileCount = 0
    @exclusivity(unchecked) private var nvaFlags: UInt8 = 0
    @exclusivity(unchecked) private var nvaHead = 0
    /// The output buffer while `produce` runs, where a DATA frame's body is written straight
    /// from the response's bytes (`sendBody`), and the limit it was given.
    @exclusivity(unchecked) private var sink: UnsafeMutablePointer<[UInt8]>?
    @exclusivity(unchecked) private var sinkLimit = 0
    @exclusivity(unchecked) private var resets: [Int64] = []
    /// Where the client's frames begin and end in what it sends (`receive`).
    @exclusivity(unchecked) private var inbound = InboundFrames()
    /// Which of the client's recent streams it opened and ended (`check`).
    @exclusivity(unchecked) private var history = StreamHistory()
    @exclusivity(unchecked) private var now: Int64 = 0
    /// Bytes the incomplete requests (`current` and `streams`) hold, at most `maximumHeldBytes`.
    @exclusivity(unchecked) private var held = 0
    /// The part of `held` counted in `budget` (settled after each read and write).
    @exclusivity(unchecked) private var reported = 0
    /// Whether `current` is a request whose header block and stream both end in the frame that
    /// began it: it is answered within this read, so only the session's own bound applies to it.
    @exclusivity(unchecked) private var currentCompletes = false
    /// The process-wide budget for incomplete requests, shared with every other session.
    private let budget: RequestBudget?
    /// Why the session ended, for debug logs.
    public private(set) var failure: String?

    /// The buffer nghttp2 writes this session's frames into, shared with the other sessions of
    /// the thread that made it (nil: a block of the session's own).
    private let frameBuffer: SharedFrameBuffer?
    /// True while nghttp2 makes the session: its frame buffer is allocated then, and only then.
    private(set) var isBeingMade = false

    /// nghttp2 asks for a block the size of its frame buffer: the shared one if the session is
    /// being made and has one, once. Any later block of that size (a frame continued past the
    /// first buffer, or a header value of just that length) is the session's own.
    func claimSharedFrameBuffer() -> UnsafeMutableRawPointer? {
        guard isBeingMade, !writesSharedFrameBuffer, let frameBuffer else { return nil }
        writesSharedFrameBuffer = true
        return frameBuffer.block
    }

    /// Whether nghttp2 took the shared frame buffer (for tests).
    private(set) var writesSharedFrameBuffer = false

    /// A session whose incomplete requests count against `budget` (none: only its own bound),
    /// writing its frames into `frameBuffer` (see `SharedFrameBuffer`: only for a session used on
    /// the thread that owns it).
    public init(budget: RequestBudget? = nil, frameBuffer: SharedFrameBuffer? = nil) {
        self.budget = budget
        self.frameBuffer = frameBuffer
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrameReceived)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_send_data_callback(callbacks, onSendData)
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        nghttp2_option_set_max_continuations(option, Self.maximumContinuations)
        nghttp2_option_set_max_settings(option, Self.maximumSettings)
        nghttp2_option_set_max_outbound_ack(option, Self.maximumOutboundAcks)
        var s: OpaquePointer?
        var memory = SessionMemory.table(for: Unmanaged.passUnretained(self).toOpaque())
        isBeingMade = true
        nghttp2_session_server_new3(&s, callbacks, Unmanaged.passUnretained(self).toOpaque(), option, &memory)
        isBeingMade = false
        nghttp2_option_del(option)
        nghttp2_session_callbacks_del(callbacks)
        session = s
        var settings = [
            nghttp2_settings_entry(settings_id: CAASANghttp2_SETTINGS_MAX_CONCURRENT_STREAMS, value: Self.maximumConcurrentStreams),
            nghttp2_settings_entry(settings_id: CAASANghttp2_SETTINGS_MAX_HEADER_LIST_SIZE, value: UInt32(Self.maximumHeaderListSize)),
            // RFC 9218 §2.1: the server ignores RFC 7540 priorities (a few small files need no
            // scheduling), so nghttp2 keeps no dependency tree and no closed streams for it. With
            // them, nghttp2 keeps up to `maximumConcurrentStreams` closed streams a connection:
            // an attacking connection whose 100 streams were reset held 53.0 KB of RSS instead of
            // 28.2 (`scripts/bench-h2-memory.sh`). What it checked with them (frames on streams
            // the client ended, PRIORITY frames RFC 9113 calls errors) the session checks itself
            // in a few bytes (`check`; docs/reliability.md, "HTTP/2 conformance").
            nghttp2_settings_entry(settings_id: CAASANghttp2_SETTINGS_NO_RFC7540_PRIORITIES, value: 1),
        ]
        nghttp2_submit_settings(session, 0, &settings, settings.count)
    }

    deinit {
        nghttp2_session_del(session)
        budget?.add(-reported)
    }

    /// Feeds bytes read from the connection. False when the session must end (a protocol error
    /// or abuse); what it produces next (GOAWAY) should still be written.
    ///
    /// The bytes go to nghttp2 in one piece, unless a frame must be looked at first (`check`):
    /// DATA, HEADERS on a stream already opened, PRIORITY. Those are split off just before their
    /// last header byte (or dependency byte), so that nghttp2 has read every frame before them
    /// and has not acted on them yet. A request on a new stream, the usual frame, splits nothing.
    public func receive(_ bytes: UnsafeRawBufferPointer, now: Int64) -> Bool {
        self.now = now
        var fed = 0
        var from = 0
        var n = 0
        while n >= 0, failure == nil, let (at, checkpoint) = inbound.next(in: bytes, from: from) {
            from = at + 1
            if case .frame(type: CAASANghttp2_HEADERS, let stream) = checkpoint, stream > history.highest {
                history.open(stream)
                continue
            }
            n = feed(UnsafeRawBufferPointer(rebasing: bytes[fed..<at]))
            fed = at
            if n >= 0 { check(checkpoint) }
        }
        if n >= 0 && failure == nil { n = feed(UnsafeRawBufferPointer(rebasing: bytes[fed...])) }
        if currentCompletes && currentStream != 0 { waitsAcrossReads() }
        settle()
        if n < 0 {
            failure = "nghttp2: \(String(validatingCString: nghttp2_strerror(Int32(truncatingIfNeeded: n))) ?? "\(n)")"
            return false
        }
        return failure == nil
    }

    /// Hands `bytes` to nghttp2: what it returns (negative: the session failed).
    private func feed(_ bytes: UnsafeRawBufferPointer) -> Int {
        guard !bytes.isEmpty else { return 0 }
        return nghttp2_session_mem_recv(session, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), bytes.count)
    }

    /// Looks at a frame nghttp2 is about to act on, with every frame before it read, and ends the
    /// session where RFC 9113 makes the frame an error that nghttp2 would not see, keeping no
    /// closed streams (`StreamHistory`). Each is a connection error, so that a client sending such
    /// frames gets one GOAWAY, not an answer per frame (RFC 9113 §5.4.1 lets an endpoint treat a
    /// stream error as a connection error); nghttp2 itself did the same with closed streams kept.
    private func check(_ checkpoint: InboundFrames.Checkpoint) {
        // nghttp2 is already ending the session (its own error stands) or no longer reads.
        guard nghttp2_session_want_read(session) != 0 else { return }
        switch checkpoint {
        case .frame(let type, let stream):
            let name = type == CAASANghttp2_HEADERS ? "HEADERS" : "DATA"
            if history.wasEnded(stream) {
                // §5.1: after the client's END_STREAM (half-closed (remote), then closed) or its
                // RST_STREAM, DATA and HEADERS are STREAM_CLOSED errors.
                end(CAASANghttp2_STREAM_CLOSED, "\(name) on stream \(stream), which the client had ended (RFC 9113 §5.1)")
            } else if history.wasOpened(stream) == false {
                // §5.1.1: a new stream's identifier is above every one the client opened; a lower
                // one it never opened was closed when a higher one was (§5.1, idle).
                let code = type == CAASANghttp2_HEADERS ? CAASANghttp2_PROTOCOL_ERROR : CAASANghttp2_STREAM_CLOSED
                end(code, "\(name) on stream \(stream), below the highest opened (\(history.highest)) and never opened (RFC 9113 §5.1.1)")
            }
        case .priority(let stream, let dependsOn):
            // nghttp2 skips PRIORITY frames unread while RFC 7540 priorities are off (RFC 9218
            // §2.1), but RFC 9113 still makes these two errors; a stream error for the second is
            // made a connection error, as nghttp2 and h2o do.
            if stream == 0 {
                end(CAASANghttp2_PROTOCOL_ERROR, "PRIORITY on stream 0 (RFC 9113 §6.3)")
            } else if dependsOn == stream {
                end(CAASANghttp2_PROTOCOL_ERROR, "PRIORITY making stream \(stream) depend on itself (RFC 9113 §5.3.1)")
            }
        }
    }

    /// Brings the process-wide budget in line with what this session holds: once per read or
    /// write, so that a request answered within the read that brought it costs no atomic
    /// operation.
    private func settle() {
        guard let budget, held != reported else { return }
        budget.add(held - reported)
        reported = held
    }

    /// Bytes the fields of this session's incomplete requests hold (at most `maximumHeldBytes`).
    public var heldBytes: Int { held }

    /// Bytes in the HPACK dynamic table of the session's decoder, as RFC 7541 §4.1 counts them
    /// (for tests).
    var decoderTableBytes: Int { nghttp2_session_get_hd_inflate_dynamic_table_size(session) }

    /// Whether `heldBytes` is what the incomplete requests hold, and within the bound. Checked by
    /// the HTTP/2 fuzz target and its replay tests.
    var heldBytesAreCounted: Bool {
        let sum = (current?.heldBytes ?? 0) + streams.values.reduce(0) { $0 + $1.heldBytes }
        return sum == held && held <= Self.maximumHeldBytes
    }

    /// Calls `body` with each request complete since the last call, in the order they completed.
    /// A request whose stream the client already reset (HEADERS with END_STREAM, then
    /// RST_STREAM, in one read) is skipped: nothing can be sent on a closed stream (RFC 9113
    /// §5.1). `body` may respond.
    public func answer(_ body: (HTTP2Request) -> Void) {
        swap(&ready, &answering)
        // Each request lent to `body` in place: a `for` loop copied each out of the array, with a
        // retain and a release of its buffer. The pointer is into `answering`'s storage, which
        // nothing may replace meanwhile: `releaseIdleStorage` leaves it while `isAnswering`.
        isAnswering = true
        defer { isAnswering = false }
        answering.withUnsafeBufferPointer { requests in
            for i in requests.indices where CAASANghttp2_stream_is_open(session, requests[i].stream) != 0 { body(requests[i]) }
        }
        answering.removeAll(keepingCapacity: true)
    }

    /// True while `answer` lends `answering`'s requests to its caller.
    @exclusivity(unchecked) private var isAnswering = false

    /// The requests complete since the last call (for tests).
    func takeRequests() -> [HTTP2Request] {
        var requests: [HTTP2Request] = []
        answer { requests.append($0) }
        return requests
    }

    /// Drops the storage of the session's own tables once they are empty and larger than a
    /// usual client needs, and reset times older than the reset window. For a connection going
    /// idle: a client that once had 100 streams open (or reset 200) must not leave their tables'
    /// capacity (kilobytes) behind on a connection it then holds open for the idle timeout.
    /// Tables within `keptCapacity` stay: a busy connection goes idle after every batch of
    /// streams, and growing them again each time cost 2.7 % more instructions per request.
    public func releaseIdleStorage() {
        // Called from `answer`'s body (no path does today), dropping `answering` would free the
        // buffer `answer` is reading; and a connection answering requests is not idle.
        guard !isAnswering else { return }
        if streams.isEmpty && streams.capacity > Self.keptCapacity { streams = [:] }
        if bodies.isEmpty && bodies.capacity > Self.keptCapacity { bodies = [] }
        if ready.isEmpty && ready.capacity > Self.keptCapacity { ready = [] }
        if answering.capacity > Self.keptCapacity { answering = [] }
        if nva.capacity > Self.keptCapacity {
            nva = []
            nvaFields = nil
            nvaParts = nil
        }
        if answeredPending.isEmpty && answeredPending.capacity > Self.keptCapacity { answeredPending = [] }
        if !resets.isEmpty { resets.removeAll { now - $0 > Self.resetWindow } }
        if resets.isEmpty && resets.capacity > 0 { resets = [] }
    }

    /// Entries each table keeps room for across idle periods: above the streams h2load's `-m10`
    /// or a browser's page keeps in flight, far below the 100 streams a client may open.
    static let keptCapacity = 16

    /// Elements the session's own tables have room for (for tests).
    var tableCapacity: Int {
        streams.capacity + bodies.capacity + resets.capacity + ready.capacity + answering.capacity + nva.capacity
    }

    /// Submits a response: `status`, the prepared fields (their HTTP/2 list, already lower case),
    /// `date` (the `date` field's value), `location` when the response has one built for this
    /// request, and a body unless `sendsBody` is false (HEAD, 304).
    public func respond(
        stream: Int32, status: Status, fields: PreparedFields, date: [UInt8], location: [UInt8]? = nil, body: [UInt8], sendsBody: Bool
    ) {
        respond(stream: stream, status: status, head: .prepared(fields), date: date, location: location, body: body, sendsBody: sendsBody)
    }

    /// The same with a cache of its own, made per call: a served file's values are written for
    /// it. For tests; `package`, so that the server (which passes its worker's) cannot pick it
    /// by leaving the cache out.
    package func respond(
        stream: Int32, status: Status, head: ResponseHead, date: [UInt8], location: [UInt8]? = nil, body: [UInt8], sendsBody: Bool
    ) {
        var heads = FileHeadCache()
        respond(stream: stream, status: status, head: head, date: date, location: location, body: body, sendsBody: sendsBody, heads: &heads)
    }

    /// Submits a response whose fields are prepared, or a served file's composed here
    /// (`FileHead`, `appendHTTP2`) with the values `heads`, the worker's, holds for it.
    /// A stream nghttp2 no longer has open gets nothing: its body would be kept for a data
    /// provider nghttp2 never calls.
    public func respond(
        stream: Int32, status: Status, head: ResponseHead, date: [UInt8], location: [UInt8]? = nil, body: [UInt8], sendsBody: Bool,
        heads: inout FileHeadCache
    ) {
        guard CAASANghttp2_stream_is_open(session, stream) != 0 else { return }
        let hasBody = sendsBody && !body.isEmpty
        // With a body, the response's entry in `bodies` keeps the prepared fields (or a file's
        // shared parts) and the date alive until nghttp2 has encoded them (`Outgoing.head`), so
        // nghttp2 takes them uncopied (NGHTTP2_NV_FLAG_NO_COPY_NAME and _VALUE; the names are
        // lower case already): it copied and lower-cased every name and value of every response.
        // Without a body (HEAD, 304, a redirect) nothing would keep them, and nghttp2 copies them.
        // `:status` points into `Status.codes`, which lives as long as the process; a `location`
        // is always copied, and so are the values a file's head writes per response.
        if hasBody { bodies.append(Outgoing(stream: stream, body: body, offset: 0, head: head, date: date)) }
        let flags = hasBody ? CAASANghttp2_NV_FLAG_NO_COPY : CAASANghttp2_NV_FLAG_NONE
        // `:status`, then `date` unless it is empty, then the fields.
        let lead = date.isEmpty ? 1 : 2
        func submit() -> Int32 {
            if hasBody {
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: bodyReader)
                return nghttp2_submit_response(session, stream, &nva, nva.count, &provider)
            }
            return nghttp2_submit_response(session, stream, &nva, nva.count, nil)
        }
        func submitWithLocation() -> Int32 {
            guard let location else { return submit() }
            return location.withUnsafeBufferPointer { value in
                nva.append(Self.field(Self.locationName, value, CAASANghttp2_NV_FLAG_NONE))
                return submit()
            }
        }
        let result: Int32 = status.code.withUnsafeBufferPointer { code in
            date.withUnsafeBufferPointer { date in
                guard let file = head.file else {
                    let fields = head.prepared ?? .none
                    return fields.http2Bytes.withUnsafeBufferPointer { prepared in
                        if fields === nvaFields && flags == nvaFlags && lead == nvaHead {
                            // The same fields as the last response (a client fetching the same
                            // answer again): only the status and the date are written again, and
                            // a location the last response had is dropped.
                            nva.removeSubrange((lead + fields.http2Spans.count)...)
                        } else {
                            nva.removeAll(keepingCapacity: true)
                            nva.append(contentsOf: repeatElement(Self.field(Self.statusName, code, flags), count: lead))
                            for span in fields.http2Spans {
                                nva.append(
                                    nghttp2_nv(
                                        name: UnsafeMutablePointer(mutating: prepared.baseAddress! + span.name),
                                        value: UnsafeMutablePointer(mutating: prepared.baseAddress! + span.value),
                                        namelen: span.nameLength, valuelen: span.valueLength, flags: flags))
                            }
                            nvaFields = fields
                            nvaParts = nil
                            nvaFlags = flags
                            nvaHead = lead
                        }
                        nva[0] = Self.field(Self.statusName, code, flags)
                        if lead == 2 { nva[1] = Self.field(Self.dateName, date, flags) }
                        return submitWithLocation()
                    }
                }
                // A served file's head: the values written for it (length, ETag, Last-Modified)
                // are the worker's cache's; nghttp2 copies them before `submit` returns.
                // A head of the same parts and form as the last response's (a client fetching
                // the file again, or another file with the same options): the list is kept, and
                // only the status, the date and the three written values are pointed again.
                let reuse = file.parts === nvaParts && file.form == nvaForm && flags == nvaFlags && lead == nvaHead
                nvaFields = nil
                return heads.withHTTP2Values(file) { written, ends in
                    if reuse {
                        nva.removeSubrange((lead + nvaFileCount)...)
                        nva[0] = Self.field(Self.statusName, code, flags)
                        if lead == 2 { nva[1] = Self.field(Self.dateName, date, flags) }
                        file.repointHTTP2(written: written, ends: ends, after: lead, in: &nva)
                    } else {
                        nva.removeAll(keepingCapacity: true)
                        nva.append(Self.field(Self.statusName, code, flags))
                        if lead == 2 { nva.append(Self.field(Self.dateName, date, flags)) }
                        file.parts.values.withUnsafeBufferPointer { values in
                            file.appendHTTP2(values: values, written: written, ends: ends, hasBody: hasBody, to: &nva)
                        }
                        nvaParts = file.parts
                        nvaForm = file.form
                        nvaFlags = flags
                        nvaHead = lead
                        nvaFileCount = nva.count - lead
                    }
                    return submitWithLocation()
                }
            }
        }
        // Refused (the stream already has a response): the body just added is not wanted, and
        // nghttp2 queued nothing that points at its fields.
        if result != 0 && hasBody { bodies.removeLast() }
    }

    private static func field(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>, _ flags: UInt8) -> nghttp2_nv {
        nghttp2_nv(
            name: UnsafeMutablePointer(mutating: name.utf8Start),
            value: UnsafeMutablePointer(mutating: value.baseAddress ?? name.utf8Start),
            namelen: name.utf8CodeUnitCount, valuelen: value.count, flags: flags)
    }

    private func dropBody(_ stream: Int32) {
        if let i = bodies.firstIndex(where: { $0.stream == stream }) { bodies.remove(at: i) }
    }

    /// Appends frames to send to `out`, up to about `limit` bytes (the rest waits for the socket).
    public func produce(into out: inout [UInt8], limit: Int) {
        // Sending a RST_STREAM closes its stream, which may release what it held.
        defer { settle() }
        withUnsafeMutablePointer(to: &out) { out in
            // DATA frames are written by `sendBody`, inside nghttp2_session_mem_send.
            sink = out
            sinkLimit = limit
            defer { sink = nil }
            while out.pointee.count < limit {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                if n <= 0 {
                    if n < 0 { failure = "nghttp2 send: \(n)" }
                    // Responses of GETs answered early have gone out: resets to send, maybe.
                    if n == 0 && !answeredPending.isEmpty && settleAnswered() { continue }
                    return
                }
                out.pointee.append(contentsOf: UnsafeBufferPointer(start: data, count: n))
            }
        }
    }

    /// False once the session is finished in both directions: close the connection.
    public var isAlive: Bool {
        failure == nil && (nghttp2_session_want_read(session) != 0 || nghttp2_session_want_write(session) != 0)
    }

    /// Streams open on this session.
    public var activeStreams: Int { streams.count + bodies.count + (currentStream == 0 ? 0 : 1) }

    /// Streams the session keeps state for (a request being read, a body being sent, a GET
    /// answered early): each must be a stream nghttp2 has open, or its entry would never be
    /// removed. Checked by the
    /// HTTP/2 fuzz target and its replay tests.
    var heldStreamsAreOpen: Bool {
        streams.keys.allSatisfy { CAASANghttp2_stream_is_open(session, $0) != 0 }
            && bodies.allSatisfy { CAASANghttp2_stream_is_open(session, $0.stream) != 0 }
            && current.map { CAASANghttp2_stream_is_open(session, $0.stream) != 0 } ?? true
            && currentStream == (current?.stream ?? 0)
            && answeredOpen.count <= Self.maximumAnsweredOpenStreams
            && answeredOpen.allSatisfy { CAASANghttp2_stream_is_half_closed_local(session, $0) != 0 }
            && answeredPending.allSatisfy { CAASANghttp2_stream_is_open(session, $0) != 0 }
    }

    /// Whether a request's header block has begun and its stream has not ended (the client still
    /// owes END_STREAM): such a stream holds state, so the connection runs on the request
    /// timeout, not the idle one.
    public var hasIncompleteRequests: Bool { currentStream != 0 || !streams.isEmpty }

    /// Whether frames are waiting to be produced.
    public var wantsWrite: Bool { nghttp2_session_want_write(session) != 0 }

    /// The first step of a graceful end (RFC 9113 §6.8): GOAWAY with the largest stream id, so
    /// that the client opens no new stream but streams it sent before seeing it are still
    /// served. `goAway` follows once they have had time to arrive.
    public func shutdownNotice() {
        guard !noticeSent && !goingAway else { return }
        noticeSent = true
        nghttp2_submit_shutdown_notice(session)
    }

    /// Whether `shutdownNotice` was sent.
    private var noticeSent = false

    /// Ends gracefully: GOAWAY with the last stream seen; streams in flight finish.
    public func goAway() {
        goingAway = true
        nghttp2_submit_goaway(session, 0, nghttp2_session_get_last_proc_stream_id(session), CAASANghttp2_NO_ERROR, nil, 0)
    }

    /// Whether `goAway` was called.
    public private(set) var goingAway = false

    /// Ends the session now with ENHANCE_YOUR_CALM (abuse).
    private func calm(_ reason: String) { end(CAASANghttp2_ENHANCE_YOUR_CALM, reason) }

    /// Ends the session now: GOAWAY with `code`, nothing more read.
    private func end(_ code: UInt32, _ reason: String) {
        failure = reason
        nghttp2_session_terminate_session(session, code)
    }

    // MARK: - Callback bodies

    private static let statusName: StaticString = ":status"
    private static let dateName: StaticString = "date"
    private static let locationName: StaticString = "location"

    /// A request's header block begins. `completes`: its END_STREAM and END_HEADERS are on this
    /// frame. With the process-wide budget spent, a stream that would wait for more is refused
    /// here, before anything is kept for it.
    fileprivate func beginHeaders(_ stream: Int32, completes: Bool) {
        // A block that was to end its stream and did not (nghttp2 found it malformed and resets
        // the stream once it writes) waits like any other incomplete request: without this it
        // kept what it was let hold outside the process budget, one such block after another.
        if currentCompletes && currentStream != 0 { waitsAcrossReads() }
        if let previous = current.take() { streams[previous.stream] = previous }
        currentStream = 0
        if !completes, let budget, budget.inUse + (held - reported) >= budget.limit {
            refuse(stream, CAASANghttp2_REFUSED_STREAM)
            return
        }
        current = HTTP2Request(stream: stream)
        currentStream = stream
        currentCompletes = completes
    }

    /// `current` began in a frame that ends its stream, but the frame did not all arrive in this
    /// read (nghttp2 decodes a header block as its bytes come, and a client may send a frame a
    /// few bytes at a time): it waits for the client like any other incomplete request, so the
    /// process-wide budget applies to it from now on, and it is refused if that is already
    /// spent. Without this, every open connection could hold one such request (up to a full
    /// header list) whatever the budget, renewed before each request timeout.
    private func waitsAcrossReads() {
        currentCompletes = false
        guard let budget, currentStream != 0, budget.inUse + (held - reported) > budget.limit, let request = current.take() else { return }
        currentStream = 0
        held -= request.heldBytes
        refuse(request.stream, CAASANghttp2_REFUSED_STREAM)
    }

    /// Bytes a request of the session may still grow by: the session's bound, and for a request
    /// that waits for more, the process-wide budget less what this session has not reported yet.
    private func room(completes: Bool) -> Int {
        var room = Self.maximumHeldBytes - held
        if !completes, let budget { room = min(room, budget.limit - budget.inUse - (held - reported)) }
        return room
    }

    /// Takes a field of a request's header block; a field that ends the stream frees what the
    /// request held at once.
    fileprivate func header(_ stream: Int32, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) {
        if currentStream == stream {
            // `take` spends from the room what its buffer grew by (rarely: 256 bytes hold a
            // usual request), so held bytes are counted without reading capacities per field.
            let room = room(completes: currentCompletes)
            var left = room
            let refusal = current!.take(name, value, limit: Self.maximumHeaderListSize, room: &left)
            held += room - left
            guard let refusal else { return }
            held -= current.take()!.heldBytes
            currentStream = 0
            refuse(stream, refusal)
            return
        }
        guard streams[stream] != nil else { return }  // refused, or not a request
        let room = room(completes: false)
        var left = room
        let refusal = streams[stream]!.take(name, value, limit: Self.maximumHeaderListSize, room: &left)
        held += room - left
        guard let refusal else { return }
        held -= streams[stream]!.heldBytes
        streams[stream] = nil
        refuse(stream, refusal)
    }

    /// Resets a stream whose field was refused: REFUSED_STREAM when the budget ran out (RFC 9113
    /// §8.7: nothing was processed, the client may retry it, later or elsewhere), PROTOCOL_ERROR
    /// for a malformed request (§8.1.1), INTERNAL_ERROR for a header list over the advertised
    /// SETTINGS_MAX_HEADER_LIST_SIZE (what nghttp2 sends for a refused header block).
    private func refuse(_ stream: Int32, _ refusal: HTTP2Request.Refusal) {
        switch refusal {
        case .overBudget: refuse(stream, CAASANghttp2_REFUSED_STREAM)
        case .malformed: refuse(stream, CAASANghttp2_PROTOCOL_ERROR)
        case .tooLarge: refuse(stream, CAASANghttp2_INTERNAL_ERROR)
        }
    }

    /// Queues RST_STREAM with `code`. The rest of the header block is still decoded (HPACK's
    /// table depends on it) but kept nowhere: no request is left for the stream.
    private func refuse(_ stream: Int32, _ code: UInt32) {
        refusedStreams += 1
        nghttp2_submit_rst_stream(session, 0, stream, code)
    }

    /// Requests whose stream ended (END_STREAM), since the session began: the connection's
    /// request timeout starts again only when this moves.
    public private(set) var completedRequests = 0

    /// Streams refused by the budgets or as malformed, since the session began (for tests).
    public private(set) var refusedStreams = 0

    fileprivate func frameReceived(type: UInt8, flags: UInt8, stream: Int32) {
        if type == CAASANghttp2_RST_STREAM {
            history.end(stream)  // nothing but PRIORITY may follow it on the stream (RFC 9113 §5.1)
            resets.append(now)
            resets.removeAll { now - $0 > Self.resetWindow }
            if resets.count > Self.maximumResetsPerWindow { calm("rapid reset: \(resets.count) streams reset within a second") }
            return
        }
        guard type == CAASANghttp2_HEADERS || type == CAASANghttp2_DATA else { return }
        // Accepted END_STREAM: nothing more but WINDOW_UPDATE, PRIORITY or RST_STREAM may come on
        // the stream (RFC 9113 §5.1, `check`).
        if flags & CAASANghttp2_FLAG_END_STREAM != 0 { history.end(stream) }
        guard flags & CAASANghttp2_FLAG_END_STREAM != 0 else {
            // A GET or HEAD whose header block has ended (nghttp2 reports HEADERS once its
            // CONTINUATIONs are in) is answered now, END_STREAM or not: its answer depends on
            // nothing a body could add (a body announced by `content-length` is refused as it
            // would be at its end), and a server may answer before the request is complete
            // (RFC 9113 §8.1), then reset the rest of it with NO_ERROR (`settleAnswered`). So a
            // stream that never ends holds none of our state, as nginx's do; only other methods
            // wait for END_STREAM, within the budgets.
            guard type == CAASANghttp2_HEADERS, currentStream == stream, let method = current?.method, method == .get || method == .head,
                let request = current.take()
            else { return }
            currentStream = 0
            held -= request.heldBytes
            ready.append(request)
            completedRequests &+= 1
            answeredEarly &+= 1
            answeredPending.append(stream)
            return
        }
        if currentStream == stream, let request = current.take() {
            currentStream = 0
            held -= request.heldBytes
            ready.append(request)
            completedRequests &+= 1
        } else if let request = streams.removeValue(forKey: stream) {
            held -= request.heldBytes
            ready.append(request)
            completedRequests &+= 1
        }
    }

    /// Requests answered when their header block ended, before their END_STREAM, since the
    /// session began (for tests).
    public private(set) var answeredEarly = 0

    /// Streams answered at their header block's end, response sent, that the client has not
    /// ended, oldest first: each stays half-closed (local), so that what the client still sends
    /// on it is handled as RFC 9113 §5.1 says (a WINDOW_UPDATE of 0 is a stream error, h2spec
    /// 6.9), until `maximumAnsweredOpenStreams` are.
    @exclusivity(unchecked) private var answeredOpen: [Int32] = []

    /// Streams answered before their END_STREAM that a session keeps open for the client to end.
    /// Past it the oldest is reset with NO_ERROR (RFC 9113 §8.1: the client may stop sending the
    /// request) and nghttp2 frees it: each open stream costs about 250 bytes of nghttp2 state,
    /// 25 KB a connection for 100 streams never ended (`scripts/bench-h2-memory.sh`: 56.3 KB a
    /// connection with none reset, 31.3 with every one, 33.3 with 8 kept). 4 covers a client
    /// that ends each request in a frame of its own a few requests behind (and a conformance
    /// test's one stream); a stream reset sooner loses nothing, its response is whole.
    public static let maximumAnsweredOpenStreams = 4

    /// GETs answered at their header block's end whose response may still be going out: once
    /// it has (the stream is half-closed (local)), each moves to `answeredOpen`. Open streams
    /// only, so at most `maximumConcurrentStreams`.
    @exclusivity(unchecked) private var answeredPending: [Int32] = []

    /// Moves the streams of `answeredPending` whose response has gone out to `answeredOpen`, and
    /// resets the oldest past `maximumAnsweredOpenStreams` with NO_ERROR. Looked at when the
    /// session has nothing more to send, rather than in a callback for every frame sent, which
    /// cost every HTTP/2 request 1.8 % more instructions (`scripts/callgrind-requests.sh`).
    /// True when it queued a reset.
    private func settleAnswered() -> Bool {
        answeredPending.removeAll { stream in
            guard CAASANghttp2_stream_is_open(session, stream) != 0 else { return true }
            guard CAASANghttp2_stream_is_half_closed_local(session, stream) != 0 else { return false }  // still sending
            answeredOpen.append(stream)
            return true
        }
        guard answeredOpen.count > Self.maximumAnsweredOpenStreams else { return false }
        while answeredOpen.count > Self.maximumAnsweredOpenStreams {
            nghttp2_submit_rst_stream(session, 0, answeredOpen.removeFirst(), CAASANghttp2_NO_ERROR)
        }
        return true
    }

    /// Streams answered before their END_STREAM that are still open (for tests).
    var answeredOpenStreams: Int { answeredOpen.count }

    fileprivate func dataChunk(_ stream: Int32) {
        if currentStream == stream { current!.hasBody = true } else { streams[stream]?.hasBody = true }
    }

    /// nghttp2 closed `stream`: what the session kept for it goes, a response's uncopied fields
    /// included (`Outgoing.fields`: nghttp2 drops whatever it still had queued for the stream).
    fileprivate func streamClosed(_ stream: Int32) {
        if currentStream == stream, let request = current.take() {
            currentStream = 0
            held -= request.heldBytes
        }
        if !streams.isEmpty, let request = streams.removeValue(forKey: stream) { held -= request.heldBytes }
        if !bodies.isEmpty { dropBody(stream) }
        if !answeredOpen.isEmpty, let i = answeredOpen.firstIndex(of: stream) { answeredOpen.remove(at: i) }
        if !answeredPending.isEmpty, let i = answeredPending.firstIndex(of: stream) { answeredPending.remove(at: i) }
    }

    /// nghttp2 asks for the next DATA frame's length: the body's bytes are written by
    /// `sendBody`, straight into the output (NGHTTP2_DATA_FLAG_NO_COPY), instead of copied into
    /// nghttp2's frame buffer first and from there into the output.
    fileprivate func readBody(_ stream: Int32, _ length: Int, _ flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let i = bodies.firstIndex(where: { $0.stream == stream }) else {
            flags.pointee |= CAASANghttp2_DATA_FLAG_EOF
            return 0
        }
        let n = min(length, bodies[i].body.count - bodies[i].offset)
        flags.pointee |= CAASANghttp2_DATA_FLAG_NO_COPY
        if bodies[i].offset + n >= bodies[i].body.count { flags.pointee |= CAASANghttp2_DATA_FLAG_EOF }
        return n
    }

    /// Writes a DATA frame whose length `readBody` gave: its 9-byte header, as nghttp2 made it,
    /// then `length` bytes of the body (and the padding nghttp2 asked for, none unless a padding
    /// callback is set). nghttp2 calls it only from inside `produce`.
    ///
    /// The frame is always written whole, and once the output reaches `produce`'s limit nghttp2
    /// is told to return (NGHTTP2_ERR_PAUSE: the frame counts as sent), so the output passes the
    /// limit by one frame at most, as a frame nghttp2 copied out did. Never WOULDBLOCK, which
    /// would leave the frame's header in nghttp2's frame buffer until the next `produce`: that
    /// buffer is shared by the worker's sessions (`SharedFrameBuffer`), and another session's
    /// frame would be written over it meanwhile (the HTTP/2 fuzz target's shared-buffer check
    /// found it: Fuzz/http2-fail-cases).
    fileprivate func sendBody(_ stream: Int32, header: UnsafePointer<UInt8>, length: Int, padding: Int) -> Int32 {
        guard let out = sink,
            let i = bodies.firstIndex(where: { $0.stream == stream }), length <= bodies[i].body.count - bodies[i].offset
        else {
            // Never: nghttp2 asks only within `produce`, for a length `readBody` gave. The stream
            // is reset.
            return Int32(CAASANghttp2_ERR_TEMPORAL_CALLBACK_FAILURE)
        }
        let offset = bodies[i].offset
        out.pointee.append(contentsOf: UnsafeBufferPointer(start: header, count: InboundFrames.headerLength))
        if padding > 0 { out.pointee.append(UInt8(truncatingIfNeeded: padding - 1)) }
        bodies[i].body.withUnsafeBufferPointer {
            out.pointee.append(contentsOf: UnsafeBufferPointer(rebasing: $0[offset..<offset + length]))
        }
        if padding > 1 { out.pointee.append(contentsOf: repeatElement(0, count: padding - 1)) }
        if offset + length >= bodies[i].body.count {
            bodies.remove(at: i)
        } else {
            bodies[i].offset = offset + length
        }
        return out.pointee.count < sinkLimit ? 0 : Int32(CAASANghttp2_ERR_PAUSE)
    }

    static func of(_ userData: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(userData!).takeUnretainedValue()
    }

    /// Runs `body` with the session at nghttp2's `user_data`, borrowed: nghttp2 calls back only
    /// from inside a call the session made, which holds it. `of` took a retain and a release in
    /// every callback, five or more a request (`scripts/callgrind-requests.sh`).
    @inline(__always)
    static func with<R>(_ userData: UnsafeMutableRawPointer?, _ body: (HTTP2Session) -> R) -> R {
        Unmanaged<HTTP2Session>.fromOpaque(userData!)._withUnsafeGuaranteedRef(body)
    }
}

// MARK: - C callbacks (no context capture: the session arrives as user_data)

private let onBeginHeaders: nghttp2_on_begin_headers_callback = { _, frame, user in
    guard let frame, CAASANghttp2_frame_type(frame) == CAASANghttp2_HEADERS,
        CAASANghttp2_frame_headers_category(frame) == CAASANghttp2_HCAT_REQUEST
    else { return 0 }
    // END_HEADERS | END_STREAM: the request is whole within this frame.
    let completes = CAASANghttp2_frame_flags(frame) & 0x5 == 0x5
    HTTP2Session.with(user) { $0.beginHeaders(CAASANghttp2_frame_stream_id(frame), completes: completes) }
    return 0
}

private let onHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, user in
    guard let frame, let name, let value else { return 0 }
    // A refused field resets just its stream (RST_STREAM, queued by the session), not the
    // connection.
    HTTP2Session.with(user) {
        $0.header(
            CAASANghttp2_frame_stream_id(frame), UnsafeBufferPointer(start: name, count: nameLength),
            UnsafeBufferPointer(start: value, count: valueLength))
    }
    return 0
}

private let onFrameReceived: nghttp2_on_frame_recv_callback = { _, frame, user in
    guard let frame else { return 0 }
    let type = CAASANghttp2_frame_type(frame)
    HTTP2Session.with(user) {
        $0.frameReceived(type: type, flags: CAASANghttp2_frame_flags(frame), stream: CAASANghttp2_frame_stream_id(frame))
    }
    return 0
}

private let onDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, stream, _, _, user in
    HTTP2Session.with(user) { $0.dataChunk(stream) }
    return 0
}

private let onStreamClose: nghttp2_on_stream_close_callback = { _, stream, _, user in
    HTTP2Session.with(user) { $0.streamClosed(stream) }
    return 0
}

private let bodyReader: nghttp2_data_source_read_callback = { _, stream, _, length, flags, _, user in
    guard let flags else { return 0 }
    return HTTP2Session.with(user) { $0.readBody(stream, length, flags) }
}

private let onSendData: nghttp2_send_data_callback = { _, frame, header, length, _, user in
    guard let frame, let header else { return Int32(CAASANghttp2_ERR_CALLBACK_FAILURE) }
    return HTTP2Session.with(user) {
        $0.sendBody(
            CAASANghttp2_frame_stream_id(frame), header: header, length: length, padding: CAASANghttp2_frame_padding(frame))
    }
}
