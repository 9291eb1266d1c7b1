public import HTTPCore

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
public final class PreparedContent: Sendable {
    /// The file, byte for byte.
    public let body: [UInt8]
    /// The file gzipped, when that is smaller.
    public let gzipBody: [UInt8]?
    /// Strong ETag of the identity body: a SHA-256 prefix, quoted.
    public let etag: String
    /// Strong ETag of the gzip body (a different representation needs a different strong ETag).
    public let gzipETag: String?
    /// SHA-256 of the body, hex: the key under which it is shared.
    public let digest: String

    /// `sha256` is the body's hash when the caller has it already.
    public init(body: [UInt8], sha256: [UInt8]? = nil) {
        self.body = body
        let hash = sha256 ?? Digest.sha256(body)
        digest = Digest.hex(hash)
        let short = Digest.hex(hash.prefix(16))
        etag = "\"\(short)\""
        let compressed = Gzip.compress(body).flatMap { $0.count < body.count ? $0 : nil }
        gzipBody = compressed
        gzipETag = compressed == nil ? nil : "\"\(short)-gz\""
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
    public let gzipHeaders: PreparedFields?
    /// The same for a 304 (RFC 9110 §15.4.5: the validators and caching fields, no body fields).
    public let notModifiedHeaders: PreparedFields
    public let gzipNotModifiedHeaders: PreparedFields?

    public var body: [UInt8] { content.body }
    public var gzipBody: [UInt8]? { content.gzipBody }
    public var etag: String { content.etag }
    public var gzipETag: String? { content.gzipETag }

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
        gzipHeaders = file.gzipHeaders
        notModifiedHeaders = file.notModifiedHeaders
        gzipNotModifiedHeaders = file.gzipNotModifiedHeaders
    }

    public convenience init(body: [UInt8], modified: Int64, options: ServingOptions) throws(InvalidField) {
        try self.init(content: PreparedContent(body: body), modified: modified, options: options)
    }

    public init(content: PreparedContent, modified: Int64, options: ServingOptions) throws(InvalidField) {
        try Self.check(options)
        self.content = content
        self.options = options
        lastModified = modified
        func lines(_ fields: [(String, String)]) -> PreparedFields { PreparedFields(fields.map { (name: $0.0, value: $0.1) }) }
        // Vary only when a gzip variant exists (or the answer depends on the User-Agent):
        // otherwise every client gets the same bytes.
        let varied = (content.gzipBody == nil ? [] : ["Accept-Encoding"]) + (options.varyUserAgent ? ["User-Agent"] : [])
        let vary: [(String, String)] = varied.isEmpty ? [] : [("Vary", varied.joined(separator: ", "))]
        let common: [(String, String)] = [("Last-Modified", HTTPDate.format(modified)), ("Cache-Control", options.cacheControl)]
        headers = lines(
            [("Content-Type", options.contentType), ("Content-Length", "\(content.body.count)"), ("ETag", content.etag)] + common + vary
                + [("X-Content-Type-Options", "nosniff")])
        notModifiedHeaders = lines([("ETag", content.etag)] + common + vary)
        if let compressed = content.gzipBody, let gzipETag = content.gzipETag {
            gzipHeaders = lines(
                [
                    ("Content-Type", options.contentType), ("Content-Encoding", "gzip"), ("Content-Length", "\(compressed.count)"),
                    ("ETag", gzipETag),
                ] + common + vary + [("X-Content-Type-Options", "nosniff")])
            gzipNotModifiedHeaders = lines([("ETag", gzipETag)] + common + vary)
        } else {
            gzipHeaders = nil
            gzipNotModifiedHeaders = nil
        }
    }
}
