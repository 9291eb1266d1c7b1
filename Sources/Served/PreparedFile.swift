public import HTTPCore
import Hashing
import Synchronization

/// How files are served: the header values that are policy rather than content.
public struct ServingOptions: Sendable, Hashable {
    /// `Cache-Control` of every served file. Short by default so that a fixed file reaches Apple's
    /// CDN and devices within minutes.
    public var cacheControl: String
    /// `application/json` for the association files; `text/html; charset=utf-8` for a page.
    public var contentType = ServingOptions.json
    /// The same URL answers differently by User-Agent (a page beside platform redirects): say
    /// so, so that a shared cache keeps one answer per User-Agent (RFC 9110 §12.5.5).
    public var varyUserAgent = false

    public static let defaultCacheControl = "max-age=300"
    public static let json = "application/json"
    public static let html = "text/html; charset=utf-8"

    public init(cacheControl: String = ServingOptions.defaultCacheControl) {
        self.cacheControl = cacheControl
    }

    /// Why a Cache-Control value from site.yaml, aasad.yaml, a flag or an environment variable
    /// cannot be sent, or nil when it can: the one check every source goes through, on bytes
    /// (`HTTPField.valueProblem`), so that no configured text can split a response head.
    public static func problem(cacheControl text: String) -> String? {
        if text.isEmpty { return "must not be empty, e.g. max-age=300" }
        return HTTPField.valueProblem(text.utf8).map(\.description)
    }
}

/// What depends only on a file's bytes: the body, its gzip form and their ETags. Sites whose
/// files have the same bytes share one (at 100,000 sites most files are copies of a few), and
/// the compression runs once per distinct file.
///
/// The gzip form is made after the first request that accepts gzip, on a background thread
/// (`Gzip.background`), never at load and never on a serving thread: a start at 100,000 sites
/// spent a fifth of its time compressing files most of which no client asks for before they
/// change, and a crafted file of 128 KB took over a second to compress at the best level. Until
/// it is made, such clients get the file as it is (its responses carry `Vary: Accept-Encoding`
/// from the start, so a cache keeps both).
public final class PreparedContent: Sendable {
    /// The file, byte for byte.
    public let body: [UInt8]
    /// Strong ETag of the identity body: a SHA-256 prefix, quoted.
    public let etag: String
    /// Whether responses vary by Accept-Encoding: the file is large enough to be offered gzipped
    /// (decided at load, without compressing).
    public let mayCompress: Bool
    /// SHA-256 of the body, hex: the key under which it is shared.
    public let digest: String
    private let compressed = AtomicLazyReference<Compressed>()
    /// Set by the first request for the gzip form, so that it is queued once.
    private let compressionQueued = Atomic<Bool>(false)

    /// Files smaller than this are never offered compressed: gzip's header and trailer (18
    /// bytes) and the `Vary` they need eat what it saves.
    public static let minimumCompressedSize = 256

    /// The gzip form once made: nil when it is not smaller than the file.
    public final class Compressed: Sendable {
        public let body: [UInt8]?
        /// The gzip body's ETag (`gzipETag`), made once per content.
        public let etag: String
        init(_ body: [UInt8]?, etag: String) {
            self.body = body
            self.etag = etag
        }
    }

    /// `sha256` is the body's hash when the caller has it already, `digest` that hash as
    /// `Hex.string` writes it when the caller has that too.
    public init(body: [UInt8], sha256: [UInt8]? = nil, digest: String? = nil) {
        self.body = body
        let digest = digest ?? Hex.string(sha256 ?? Digest.sha256(body))
        assert(sha256.map { Hex.string($0) == digest } ?? true, "a digest given for other bytes than its hash")
        self.digest = digest
        // The first 32 hex digits, taken as bytes (`prefix` on the string walks it by Characters).
        etag = "\"" + String(decoding: digest.utf8.prefix(32), as: UTF8.self) + "\""
        mayCompress = body.count >= Self.minimumCompressedSize
    }

    /// Strong ETag of the gzip body (a different representation needs a different strong ETag);
    /// nil when the file is too small to be offered compressed. Made when asked (the gzip form
    /// keeps it), not kept per file.
    public var gzipETag: String? { mayCompress ? etag.dropLast() + "-gz\"" : nil }

    /// The gzip form if it has been made; nil while it has not (or the file is too small).
    /// Never compresses: the first call queues the compression on `Gzip.background`.
    public var gzipIfMade: Compressed? {
        guard mayCompress else { return nil }
        if let done = compressed.load() { return done }
        if compressionQueued.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            Gzip.background.async { _ = self.compressNow() }
        }
        return nil
    }

    /// Compresses now on the calling thread, unless done already (the background worker, and
    /// tests that need the form at once). Nil when the file is too small or gzip is no smaller.
    @discardableResult
    public func compressNow() -> [UInt8]? {
        guard mayCompress, let gzipETag else { return nil }
        if let done = compressed.load() { return done.body }
        let made = Compressed(Gzip.compress(body).flatMap { $0.count < body.count ? $0 : nil }, etag: gzipETag)
        return compressed.storeIfNil(made).body
    }
}

/// A served file: its content (shared with every site serving the same bytes), the shared fixed
/// part of its heads (`FileHeadParts`, one per distinct serving options) and its Last-Modified.
/// Its responses' heads are composed from these when answering (`head`; docs/architecture.md,
/// "Prepared responses"): a site holds references and a number, no field list of its own.
/// Its `FileHeadSource` part holds the shared parts, the content's length and ETag (the ETag's
/// String shares the content's storage) and the Last-Modified.
public final class PreparedFile: FileHeadSource, @unchecked Sendable {
    public let content: PreparedContent

    /// The options the heads are made with, read back from the shared parts (a field added to
    /// `ServingOptions` must be read back here too, or `ContentCache` prepares every file again).
    public var options: ServingOptions {
        var options = ServingOptions(cacheControl: parts.cacheControl)
        options.contentType = parts.contentType
        options.varyUserAgent = varyUserAgent
        return options
    }

    /// Whether the heads say `Vary: User-Agent` (the options asked for it).
    private var varyUserAgent: Bool { parts.vary.map { $0.hasSuffix("User-Agent") } ?? false }

    /// The head of a 200 (`gzip`: of the gzip form) or a 304 of this file.
    public func head(_ form: FileHead.Form, gzip: GzipForm? = nil) -> FileHead {
        guard let gzip else { return FileHead(source: self, form: form) }
        return FileHead(source: gzip, form: form == .ok ? .gzip : form)
    }

    /// The fields of a 200 response, all but `Date` and `Connection` (tests, diagnostics: a
    /// response composes them, `head`).
    public var headers: PreparedFields { head(.ok).prepared }
    /// The same for a 304.
    public var notModifiedHeaders: PreparedFields { head(.notModified).prepared }

    /// The gzip representation of the file: its body and ETag are the content's (made once per
    /// content); kept per file once made, so that a file's form is one object.
    public final class GzipForm: FileHeadSource, @unchecked Sendable {
        public let body: [UInt8]

        init(body: [UInt8], etag: String, parts: FileHeadParts, lastModified: Int64) {
            self.body = body
            super.init(parts: parts, contentLength: body.count, etag: etag, lastModified: lastModified)
        }

        /// The fields of its 200 and its 304 (tests, diagnostics).
        public var headers: PreparedFields { FileHead(source: self, form: .gzip).prepared }
        public var notModifiedHeaders: PreparedFields { FileHead(source: self, form: .notModified).prepared }
    }

    /// A box for "made, and there is none" (the file does not get smaller).
    private final class GzipBox: Sendable {
        let form: GzipForm?
        init(_ form: GzipForm?) { self.form = form }
    }
    private let gzipBox = AtomicLazyReference<GzipBox>()

    public var body: [UInt8] { content.body }

    /// What a client that accepts gzip is sent, or nil when it gets the file as it is: too small,
    /// gzip is not smaller, or the gzip form is not made yet (asking queues it, see
    /// `PreparedContent`). Never compresses on the calling thread; the form is built once the
    /// content's gzip body exists, and kept.
    public var gzip: GzipForm? {
        if let box = gzipBox.load() { return box.form }
        guard let made = content.gzipIfMade else { return nil }
        let form = made.body.map { GzipForm(body: $0, etag: made.etag, parts: parts, lastModified: lastModified) }
        return gzipBox.storeIfNil(GzipBox(form)).form
    }

    /// The gzip form, compressing on the calling thread if it is not made yet: for tests and
    /// tools, never for a serving thread.
    public func gzipNow() -> GzipForm? {
        content.compressNow()
        return gzip
    }

    /// A header value a head would not be built from (the settings' checks should have refused
    /// it; this is the last line of defence, and an error rather than a trap).
    public struct InvalidField: Error, Sendable, Equatable, CustomStringConvertible {
        public var name: String
        public var problem: String
        public var description: String { "\(name): \(problem)" }
    }

    /// Throws when an option cannot be sent as a header value.
    public static func check(_ options: ServingOptions) throws(InvalidField) {
        if let problem = ServingOptions.problem(cacheControl: options.cacheControl) {
            throw InvalidField(name: "Cache-Control", problem: problem)
        }
    }

    /// The same file over another content object of the same bytes (one body shared by the sites
    /// that serve it).
    package init(_ file: PreparedFile, sharing content: PreparedContent) {
        precondition(content.digest == file.content.digest, "a prepared file shares only a content of its own bytes")
        self.content = content
        super.init(parts: file.parts, contentLength: content.body.count, etag: content.etag, lastModified: file.lastModified)
    }

    public convenience init(body: [UInt8], modified: Int64, options: ServingOptions) throws(InvalidField) {
        try self.init(content: PreparedContent(body: body), modified: modified, options: options)
    }

    /// Options are checked (`check`) when their shared parts are made, once per distinct value
    /// rather than once per file: no head is made from parts whose options were not checked.
    public init(content: PreparedContent, modified: Int64, options: ServingOptions) throws(InvalidField) {
        let parts = try SharedHeadParts.parts(options, mayCompress: content.mayCompress)
        self.content = content
        super.init(parts: parts, contentLength: content.body.count, etag: content.etag, lastModified: modified)
    }
}

/// One `FileHeadParts` per distinct (options, whether the file may be compressed), shared by every
/// file prepared with them. Held weakly: parts no file uses any more are dropped (a tenant who
/// cycles through Cache-Control values leaves no trail), the table pruned when it doubles.
enum SharedHeadParts {
    /// Every input of the parts' bytes: the options whole (a field added to them keys here too).
    private struct Key: Hashable {
        var options: ServingOptions
        var mayCompress: Bool
    }

    private final class Weak: Sendable {
        weak let parts: FileHeadParts?
        init(_ parts: FileHeadParts) { self.parts = parts }
    }

    private static let table = Mutex<(entries: [Key: Weak], pruneAt: Int)>(([:], 64))

    /// The parts for `options`, checked (`PreparedFile.check`) before they are made: parts in the
    /// table hold options that passed, and an option that cannot be sent makes none.
    static func parts(_ options: ServingOptions, mayCompress: Bool) throws(PreparedFile.InvalidField) -> FileHeadParts {
        let key = Key(options: options, mayCompress: mayCompress)
        // Strings are equal by canonical equivalence, not bytes: parts found for an equal value
        // are taken only for the same bytes (a value the check passed is ASCII, equal only to
        // itself), else the value is checked.
        if let parts = table.withLock({ $0.entries[key]?.parts }),
            parts.cacheControl.utf8.elementsEqual(options.cacheControl.utf8)
        {
            return parts
        }
        try PreparedFile.check(options)
        return table.withLock { table in
            if let parts = table.entries[key]?.parts { return parts }
            // Vary by Accept-Encoding for every file large enough to be offered gzipped (decided
            // at load, before any compression: the identity answer served while the gzip form is
            // made varies too), and by User-Agent when the answer depends on it.
            let varied = (mayCompress ? ["Accept-Encoding"] : []) + (options.varyUserAgent ? ["User-Agent"] : [])
            let parts = FileHeadParts(
                contentType: options.contentType, cacheControl: options.cacheControl,
                vary: varied.isEmpty ? nil : varied.joined(separator: ", "))
            table.entries[key] = Weak(parts)
            if table.entries.count >= table.pruneAt {
                table.entries = table.entries.filter { $0.value.parts != nil }
                table.pruneAt = max(64, table.entries.count * 2)
            }
            return parts
        }
    }

    /// Entries held, live or not (for tests).
    static var count: Int { table.withLock { $0.entries.count } }
}
