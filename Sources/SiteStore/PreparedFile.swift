public import HTTPCore
import Synchronization

/// How files are served: the header values that are policy rather than content.
public struct ServingOptions: Sendable, Equatable {
    /// `Cache-Control` of every served file. Short by default so that a fixed file reaches Apple's
    /// CDN and devices within minutes (DESIGN.md).
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
/// files have the same bytes share one (issue 4: identical files share one prepared body), and
/// the compression runs once per distinct file.
///
/// The gzip form is made on first use (the first request that accepts gzip), not at load: a
/// start at 100,000 sites spent a fifth of its time compressing files most of which no client
/// asks for before they change, and each kept its compressed copy.
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

    /// Files smaller than this are never offered compressed: gzip's header and trailer (18
    /// bytes) and the `Vary` they need eat what it saves.
    public static let minimumCompressedSize = 256

    /// The gzip form once made: nil when it is not smaller than the file.
    final class Compressed: Sendable {
        let body: [UInt8]?
        init(_ body: [UInt8]?) { self.body = body }
    }

    /// `sha256` is the body's hash when the caller has it already.
    public init(body: [UInt8], sha256: [UInt8]? = nil) {
        self.body = body
        let hash = sha256 ?? Digest.sha256(body)
        digest = Digest.hex(hash)
        let short = Digest.hex(hash.prefix(16))
        etag = "\"\(short)\""
        mayCompress = body.count >= Self.minimumCompressedSize
    }

    /// Strong ETag of the gzip body (a different representation needs a different strong ETag);
    /// nil when the file is too small to be offered compressed. Made when asked (the gzip form
    /// keeps it), not kept per file.
    public var gzipETag: String? { mayCompress ? etag.dropLast() + "-gz\"" : nil }

    /// The file gzipped, when that is smaller: compressed on the first call (by whichever thread
    /// asks first; a race compresses twice and keeps one) and kept.
    public var gzipBody: [UInt8]? {
        guard mayCompress else { return nil }
        if let done = compressed.load() { return done.body }
        let made = Compressed(Gzip.compress(body).flatMap { $0.count < body.count ? $0 : nil })
        return compressed.storeIfNil(made).body
    }
}

/// A served file with everything its responses need computed once, when the site is loaded
/// (DESIGN.md: the hot path only looks up and writes bytes).
public final class PreparedFile: Sendable {
    public let content: PreparedContent
    /// The options the headers were made with.
    public let options: ServingOptions
    /// Modification time, seconds since the epoch.
    public let lastModified: Int64
    /// The fields of a 200 response, all but `Date` and `Connection`, in both framings.
    public let headers: PreparedFields
    /// The same for a 304 (RFC 9110 §15.4.5: the validators and caching fields, no body fields).
    public let notModifiedHeaders: PreparedFields
    /// The gzip representation's body and fields, made with the content's gzip body on first use.
    public final class GzipForm: Sendable {
        public let body: [UInt8]
        public let etag: String
        public let headers: PreparedFields
        public let notModifiedHeaders: PreparedFields

        init(body: [UInt8], etag: String, headers: PreparedFields, notModifiedHeaders: PreparedFields) {
            self.body = body
            self.etag = etag
            self.headers = headers
            self.notModifiedHeaders = notModifiedHeaders
        }
    }

    /// A box for "made, and there is none" (the file does not get smaller).
    private final class GzipBox: Sendable {
        let form: GzipForm?
        init(_ form: GzipForm?) { self.form = form }
    }
    private let gzipBox = AtomicLazyReference<GzipBox>()

    public var body: [UInt8] { content.body }
    public var etag: String { content.etag }

    /// What a client that accepts gzip is sent, or nil when the file is served as it is to
    /// everyone (too small, or gzip is not smaller). Made on the first call and kept.
    public var gzip: GzipForm? {
        guard let gzipETag = content.gzipETag else { return nil }
        if let box = gzipBox.load() { return box.form }
        var form: GzipForm?
        if let compressed = content.gzipBody {
            let common = Self.commonFields(content, options, lastModified)
            form = GzipForm(
                body: compressed, etag: gzipETag,
                headers: PreparedFields(
                    [
                        (name: "Content-Type", value: options.contentType), (name: "Content-Encoding", value: "gzip"),
                        (name: "Content-Length", value: "\(compressed.count)"), (name: "ETag", value: gzipETag),
                    ] + common + [(name: "X-Content-Type-Options", value: "nosniff")]),
                notModifiedHeaders: PreparedFields([(name: "ETag", value: gzipETag)] + common))
        }
        return gzipBox.storeIfNil(GzipBox(form)).form
    }

    public var gzipBody: [UInt8]? { gzip?.body }
    public var gzipETag: String? { gzip?.etag }
    public var gzipHeaders: PreparedFields? { gzip?.headers }
    public var gzipNotModifiedHeaders: PreparedFields? { gzip?.notModifiedHeaders }

    /// Last-Modified, Cache-Control and Vary: the fields every response of the file carries.
    private static func commonFields(
        _ content: PreparedContent, _ options: ServingOptions, _ lastModified: Int64
    ) -> [(name: String, value: String)] {
        // Vary only when a gzip variant may exist (or the answer depends on the User-Agent):
        // otherwise every client gets the same bytes.
        let varied = (content.mayCompress ? ["Accept-Encoding"] : []) + (options.varyUserAgent ? ["User-Agent"] : [])
        let vary: [(name: String, value: String)] = varied.isEmpty ? [] : [(name: "Vary", value: varied.joined(separator: ", "))]
        return [(name: "Last-Modified", value: HTTPDate.format(lastModified)), (name: "Cache-Control", value: options.cacheControl)] + vary
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
    /// that serve it): the heads depend only on the bytes, the time and the options, so they are
    /// shared too rather than built again.
    init(_ file: PreparedFile, sharing content: PreparedContent) {
        precondition(content.digest == file.content.digest, "a prepared file shares only a content of its own bytes")
        self.content = content
        options = file.options
        lastModified = file.lastModified
        headers = file.headers
        notModifiedHeaders = file.notModifiedHeaders
    }

    public convenience init(body: [UInt8], modified: Int64, options: ServingOptions) throws(InvalidField) {
        try self.init(content: PreparedContent(body: body), modified: modified, options: options)
    }

    public init(content: PreparedContent, modified: Int64, options: ServingOptions) throws(InvalidField) {
        try Self.check(options)
        self.content = content
        self.options = options
        lastModified = modified
        let common = Self.commonFields(content, options, modified)
        headers = PreparedFields(
            [
                (name: "Content-Type", value: options.contentType), (name: "Content-Length", value: "\(content.body.count)"),
                (name: "ETag", value: content.etag),
            ] + common + [(name: "X-Content-Type-Options", value: "nosniff")])
        notModifiedHeaders = PreparedFields([(name: "ETag", value: content.etag)] + common)
    }
}
