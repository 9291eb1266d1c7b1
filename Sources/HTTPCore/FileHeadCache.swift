/// The last served file's head as written, one per worker (Sources/HTTPServer/ConnectionMachine.swift
/// `ConnectionContext`): a client fetching the same file again, as a CDN or a benchmark does, gets
/// the bytes written for the response before rather than its length's digits, ETag and
/// Last-Modified date formatted again (docs/benchmarks.md, "Response heads composed when
/// answering, not kept per site"). A file keeps nothing more for it.
///
/// Keyed by the head's source itself, held: a `FileHeadSource`'s values never change, so the same
/// object (and form) is the same head, and holding it means its address cannot be another
/// file's meanwhile. Two files with equal length, ETag or parts are still two keys, and so are a
/// file and its replacement after a reload. What it holds is the last file served (until another
/// is, or the worker takes a new snapshot: `forget`) and the bytes of one head in each framing.
public struct FileHeadCache {
    /// The source whose head is kept, held so that its identity (`http1Key`, compared without
    /// a retain) stays its own.
    private var http1Source: FileHeadSource?
    private var http1Key: ObjectIdentifier?
    private var http1Form = FileHead.Form.ok
    /// `http1Source`'s lines (`FileHead.writeHTTP1`).
    private var http1: [UInt8] = []

    private var http2Source: FileHeadSource?
    private var http2Key: ObjectIdentifier?
    private var http2Form = FileHead.Form.ok
    /// `http2Source`'s values (`FileHead.writeHTTP2Values`), in the first `http2Ends.end` bytes.
    package private(set) var http2: [UInt8] = []
    package private(set) var http2Ends = (length: 0, etag: 0, end: 0)

    public init() {}

    /// Lets go of the sources kept (the worker took a new snapshot: a file it replaced or removed
    /// must not stay alive here until another file is served); the buffers' room is kept.
    public mutating func forget() {
        http1Source = nil
        http1Key = nil
        http2Source = nil
        http2Key = nil
    }

    /// Appends `head`'s HTTP/1.1 lines: the bytes kept when `head` is the last one's source and
    /// form, else written (and kept).
    public mutating func writeHTTP1(_ head: FileHead, into out: inout [UInt8]) {
        if ObjectIdentifier(head.source) != http1Key || head.form != http1Form { keepHTTP1(head) }
        http1.withUnsafeBufferPointer { out.append(contentsOf: $0) }
    }

    /// Out of line: inlined, the compiler retained the source before the comparison, on the
    /// path that keeps nothing too.
    @inline(never)
    private mutating func keepHTTP1(_ head: FileHead) {
        http1.removeAll(keepingCapacity: true)
        head.writeHTTP1(into: &http1)
        http1Source = head.source
        http1Key = ObjectIdentifier(head.source)
        http1Form = head.form
    }

    /// Makes `http2` hold `head`'s HTTP/2 values (where each ends in `http2Ends`): kept when
    /// `head` is the last one's source and form, else written. Not generic, so that the HTTP/2
    /// module calls it specialized (`FileHead.writeHTTP2Values`).
    package mutating func holdHTTP2Values(_ head: FileHead) {
        if ObjectIdentifier(head.source) != http2Key || head.form != http2Form { keepHTTP2(head) }
    }

    /// Out of line, as `keepHTTP1`.
    @inline(never)
    private mutating func keepHTTP2(_ head: FileHead) {
        let capacity = head.http2ValuesCapacity
        if http2.count < capacity { http2 = [UInt8](repeating: 0, count: max(capacity, 2 * http2.count)) }
        http2Ends = http2.withUnsafeMutableBufferPointer { head.writeHTTP2Values(to: $0.baseAddress!) }
        http2Source = head.source
        http2Key = ObjectIdentifier(head.source)
        http2Form = head.form
    }
}
