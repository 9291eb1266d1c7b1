public import AASA
import Glibc
public import HTTPCore
import Synchronization

/// A redirect target from site.yaml: an absolute https URL, optionally holding `{path}` once,
/// where the request's path and query go (RedirectTarget's encoding: as sent, never decoded).
///
/// Checked when site.yaml is read, so that no request can make it point elsewhere: the scheme is
/// https, the host is written out before `{path}` (which always starts with `/`, so it can never
/// extend the host), there is no user info, and every byte is one a URL holds as it is.
public struct RedirectTemplate: Sendable, Equatable, CustomStringConvertible {
    /// As written in site.yaml.
    public let text: String
    /// The bytes before `{path}` (the whole URL when there is none).
    package let prefix: [UInt8]
    /// The bytes after `{path}`; nil when the template has no `{path}`.
    package let suffix: [UInt8]?
    /// The template cut at its placeholders: bytes as written, and slots numbered as in the
    /// `placeholders` it was parsed with (a route's `{path}`, `{query}` and captures).
    package let parts: [Part]

    package enum Part: Sendable, Equatable {
        case bytes([UInt8])
        case slot(Int)
    }

    public static let placeholder = "{path}"
    /// Longest template: a URL over 2 KB is refused by some clients and is never a store link.
    public static let maximumLength = 2048
    /// Most placeholders in one template: a route has at most `RoutePattern.maximumCaptures`
    /// captures, and a URL naming each a few times is already more than a link needs.
    public static let maximumPlaceholders = 16

    public var description: String { text }

    /// True when the target does not depend on the request: its `Location` is prepared once.
    public var isFixed: Bool { !parts.contains { if case .slot = $0 { true } else { false } } }

    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// A fallback's target: `{path}` at most once.
    public init(parsing text: String) throws(Problem) {
        try self.init(parsing: text, placeholders: ["path"])
        guard parts.count(where: { $0 == .slot(0) }) <= 1 else { throw Problem("{path} may appear once") }
    }

    /// A target whose `{NAME}` placeholders are among `placeholders` (slot i is `placeholders[i]`).
    /// `{path}` (placeholder "path", which starts with `/`) may follow the host directly; any other
    /// placeholder only after the `/`, `?` or `#` that ends the host, so that no value can extend
    /// the host (`https://shop.example{id}` with id `.evil.example`).
    public init(parsing text: String, placeholders: [String]) throws(Problem) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw Problem("must be an https URL, e.g. https://www.example.com{path}") }
        guard bytes.count <= Self.maximumLength else { throw Problem("\(bytes.count) bytes; at most \(Self.maximumLength)") }
        var parts: [Part] = []
        var literal: [UInt8] = []
        // Where each slot starts in `bytes`, and which it is.
        var marks: [(at: Int, slot: Int)] = []
        var i = 0
        while i < bytes.count {
            let c = bytes[i]
            if c == UInt8(ascii: "{") {
                var j = i + 1
                while j < bytes.count && j - i <= RoutePattern.maximumNameLength + 1 && bytes[j] != UInt8(ascii: "}") { j += 1 }
                let name = j < bytes.count && bytes[j] == UInt8(ascii: "}") ? String(decoding: bytes[(i + 1)..<j], as: UTF8.self) : nil
                guard let name, let slot = placeholders.firstIndex(of: name) else {
                    let known = placeholders.map { "{\($0)}" }.joined(separator: ", ")
                    throw Problem("byte \(i + 1) is '{': the placeholders here are \(known); write any other '{' as %7B")
                }
                guard marks.count < Self.maximumPlaceholders else {
                    throw Problem("more than \(Self.maximumPlaceholders) placeholders")
                }
                if !literal.isEmpty { parts.append(.bytes(literal)) }
                literal = []
                parts.append(.slot(slot))
                marks.append((at: i, slot: slot))
                i = j + 1
                continue
            }
            // A Location value is a URL: visible ASCII that a URL may hold as it is (RFC 3986),
            // so neither CR/LF nor anything a browser would reinterpret (`\`, space) gets in.
            guard RedirectTarget.isKept(c) || c == UInt8(ascii: "#") else {
                let shown = c >= 0x21 && c <= 0x7E ? "'\(Character(Unicode.Scalar(c)))'" : HTTPField.name(of: c)
                throw Problem(
                    "byte \(i + 1) is \(shown); write the URL in its encoded form (percent-encode it), with {path} at most once")
            }
            literal.append(c)
            i += 1
        }
        if !literal.isEmpty { parts.append(.bytes(literal)) }
        let scheme = Array("https://".utf8)
        guard bytes.count > scheme.count, bytes[..<scheme.count].map({ $0 | 0x20 }) == scheme.map({ $0 | 0x20 }) else {
            throw Problem("must be an absolute https URL (https://...), e.g. https://www.example.com{path}")
        }
        // The authority ends at the first '/', '?' or '#', or at the first placeholder.
        let mark = marks.first
        var end = scheme.count
        while end < bytes.count && end != mark?.at && !"/?#".utf8.contains(bytes[end]) { end += 1 }
        let authority = String(decoding: bytes[scheme.count..<end], as: UTF8.self)
        guard !authority.isEmpty else {
            throw Problem("names no host: {path} must come after the host, as in https://www.example.com{path}")
        }
        if let mark, mark.at == end, placeholders[mark.slot] != "path" {
            throw Problem(
                "{\(placeholders[mark.slot])} must come after the host and a '/', '?' or '#': a value there could extend the host")
        }
        guard !authority.contains("@") else { throw Problem("must not hold user info (user@host): it is how links are disguised") }
        var host = Substring(authority)
        if let colon = authority.lastIndex(of: ":") {
            let port = authority[authority.index(after: colon)...]
            guard port.count <= 5, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(port), n >= 1, n <= 65535 else {
                throw Problem("the port \"\(port)\" must be a number from 1 to 65535")
            }
            host = authority[..<colon]
        }
        let name: HostName
        do {
            name = try HostName(parsing: String(host))
        } catch {
            throw Problem("the host \"\(host)\": \(error)")
        }
        guard !name.isWildcard else { throw Problem("the host must be one name, not a wildcard") }
        self.text = text
        self.parts = parts
        let placeholderBytes = Array(Self.placeholder.utf8)
        if let mark, placeholders[mark.slot] == "path" {
            prefix = Array(bytes[..<mark.at])
            suffix = Array(bytes[(mark.at + placeholderBytes.count)...])
        } else {
            prefix = bytes
            suffix = nil
        }
    }

    /// The `Location` for a request's path and query (as sent).
    public func render(pathAndQuery: UnsafeRawBufferPointer) -> [UInt8] {
        guard let suffix else { return prefix }
        var out: [UInt8] = []
        out.reserveCapacity(prefix.count + suffix.count + pathAndQuery.count + 16)
        out.append(contentsOf: prefix)
        RedirectTarget.appendPath(pathAndQuery, to: &out)
        out.append(contentsOf: suffix)
        return out
    }

    /// The URL with each slot filled by `fill` (which appends the slot's value, encoded).
    package func render(fill: (Int, inout [UInt8]) -> Void) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 64)
        for part in parts {
            switch part {
            case .bytes(let b): out.append(contentsOf: b)
            case .slot(let slot): fill(slot, &out)
            }
        }
        return out
    }
}

/// What site.yaml says about every path that is not one of the site's files: redirects by
/// platform, and/or a page (docs/link-domain.md).
public struct FallbackSettings: Sendable, Equatable {
    public var web: RedirectTemplate?
    public var ios: RedirectTemplate?
    public var android: RedirectTemplate?
    public var status: Status = .found
    /// `fallback-cache-control`; nil: `no-store` (a redirect chosen by User-Agent must not be
    /// kept by a shared cache for another browser, and a changed target takes effect at once).
    public var cacheControl: String?

    public init() {}

    /// The statuses a fallback may answer with.
    public static let statuses: [Status] = [.movedPermanently, .found, .temporaryRedirect, .permanentRedirect]

    public static let defaultCacheControl = "no-store"

    /// The target for a platform: its own, else web's.
    public func target(for platform: ClientPlatform) -> RedirectTemplate? {
        switch platform {
        case .web: web
        case .ios: ios ?? web
        case .android: android ?? web
        }
    }
}

/// Fallback answers of one site, by platform. Kept by the registry across the site's versions
/// (a reload does not reset them); every worker adds to them (relaxed atomic adds: a count, not
/// an ordering).
public final class FallbackCounts: Sendable {
    private let web = Atomic<Int>(0)
    private let ios = Atomic<Int>(0)
    private let android = Atomic<Int>(0)

    public init() {}

    public func add(_ platform: ClientPlatform) {
        switch platform {
        case .web: web.wrappingAdd(1, ordering: .relaxed)
        case .ios: ios.wrappingAdd(1, ordering: .relaxed)
        case .android: android.wrappingAdd(1, ordering: .relaxed)
        }
    }

    public func value(_ platform: ClientPlatform) -> Int {
        switch platform {
        case .web: web.load(ordering: .relaxed)
        case .ios: ios.load(ordering: .relaxed)
        case .android: android.load(ordering: .relaxed)
        }
    }
}

/// A site's answers for other paths, prepared when the site loads: per platform, a redirect
/// whose fields are built once (its `Location` too, unless it holds `{path}`), or the page.
public final class PreparedFallback: Sendable {
    /// One platform's answer.
    public enum Answer: Sendable {
        case redirect(Redirect)
        /// The site's page (`ServedSite.page`).
        case page
    }

    public final class Redirect: Sendable {
        public let status: Status
        /// Every field but `Date`, `Connection` and, when the target holds `{path}`, `Location`.
        public let headers: PreparedFields
        /// The target, when `Location` is built per request; nil when it is in `headers`.
        public let template: RedirectTemplate?
        /// The `Location` when it is in `headers` (the interstitial links to it too).
        public let fixedLocation: [UInt8]?

        init(status: Status, target: RedirectTemplate, cacheControl: String, varyUserAgent: Bool) {
            self.status = status
            var fields: [(name: String, value: String)] = []
            if target.isFixed { fields.append((name: "Location", value: target.text)) }
            fields.append((name: "Content-Length", value: "0"))
            fields.append((name: "Cache-Control", value: cacheControl))
            if varyUserAgent { fields.append((name: "Vary", value: "User-Agent")) }
            headers = PreparedFields(fields)
            template = target.isFixed ? nil : target
            fixedLocation = target.isFixed ? Array(target.text.utf8) : nil
        }
    }

    /// By `ClientPlatform.rawValue`; nil: 404 for that platform.
    private let answers: [Answer?]

    /// Whether the answer depends on the User-Agent (then every answer says `Vary: User-Agent`).
    public let variesByUserAgent: Bool

    public func answer(for platform: ClientPlatform) -> Answer? { answers[platform.rawValue] }

    /// Whether a fallback may answer `path` (without its query): a path (`*` is not one), not an
    /// association file, and not under `/.well-known/`: those paths belong to protocols (ACME,
    /// security.txt, the association files' own variants), and a redirect there would answer a
    /// verifier with another site's content.
    public static func covers(path: UnsafeRawBufferPointer) -> Bool {
        guard path.first == UInt8(ascii: "/") else { return false }
        // memcmp, not Sequence.starts(with:): generic across modules, that cost more than the
        // rest of the decision (callgrind).
        func equal(_ prefix: [UInt8]) -> Bool {
            prefix.withUnsafeBytes { memcmp(path.baseAddress!, $0.baseAddress!, prefix.count) == 0 }
        }
        if path.count >= wellKnownPrefix.count && equal(wellKnownPrefix) { return false }
        return !(path.count == rootAssociationPath.count && equal(rootAssociationPath))
    }

    private static let wellKnownPrefix = Array("/.well-known/".utf8)
    private static let rootAssociationPath = Array("/apple-app-site-association".utf8)

    /// What a site's fallback answers one request: the one decision `serve` and `match` share.
    public enum Decision {
        /// Not a fallback path, or no answer for the platform: 404 as without a fallback.
        case none
        /// The redirect, with its `Location` when built for this request (nil: in its fields).
        case redirect(Redirect, location: [UInt8]?)
        case page(PreparedFile)
        /// The `Location` would be longer than `RedirectTarget.maximumLocationLength`: 414.
        case tooLong
    }

    /// Nil when the site answers no other path (no targets, no page). `alwaysVaries`: the site's
    /// routes, preview or interstitial make its other paths' answers depend on the User-Agent
    /// even where the fallback's targets do not (a crawler gets the preview).
    public static func prepare(_ settings: FallbackSettings?, hasPage: Bool, alwaysVaries: Bool = false) -> PreparedFallback? {
        guard answerKinds(settings, hasPage: hasPage).contains(where: { $0 != nil }) else { return nil }
        return PreparedFallback(
            settings: settings ?? FallbackSettings(), hasPage: hasPage,
            varies: alwaysVaries || variesByUserAgent(settings, hasPage: hasPage))
    }

    /// Whether the answers differ by platform, so that every one must say `Vary: User-Agent`
    /// (the redirects here, and the page, which the registry prepares with this too).
    public static func variesByUserAgent(_ settings: FallbackSettings?, hasPage: Bool) -> Bool {
        Set(answerKinds(settings, hasPage: hasPage)).count > 1
    }

    /// Per platform, what answers it: a redirect to which target, the page, or nothing.
    private static func answerKinds(_ settings: FallbackSettings?, hasPage: Bool) -> [String?] {
        ClientPlatform.allCases.map { platform in
            if let target = settings?.target(for: platform) { return "redirect " + target.text }
            return hasPage ? "page" : nil
        }
    }

    private init(settings: FallbackSettings, hasPage: Bool, varies: Bool) {
        variesByUserAgent = varies
        let cacheControl = settings.cacheControl ?? FallbackSettings.defaultCacheControl
        var built: [String: Redirect] = [:]
        answers = ClientPlatform.allCases.map { platform in
            guard let target = settings.target(for: platform) else { return hasPage ? .page : nil }
            // Platforms with the same target share one prepared redirect.
            if let redirect = built[target.text] { return .redirect(redirect) }
            let redirect = Redirect(status: settings.status, target: target, cacheControl: cacheControl, varyUserAgent: varies)
            built[target.text] = redirect
            return .redirect(redirect)
        }
    }
}

extension ServedSite {
    /// What the site's fallback answers `path` (without its query) for `platform`;
    /// `pathAndQuery` is what a redirect's `{path}` carries over.
    public func fallbackDecision(path: UnsafeRawBufferPointer, pathAndQuery: UnsafeRawBufferPointer, platform: ClientPlatform)
        -> PreparedFallback.Decision
    {
        guard let fallback, PreparedFallback.covers(path: path) else { return .none }
        switch fallback.answer(for: platform) {
        case nil:
            return .none
        case .page:
            return page.map { .page($0) } ?? .none
        case .redirect(let redirect):
            guard let template = redirect.template else { return .redirect(redirect, location: nil) }
            let location = template.render(pathAndQuery: pathAndQuery)
            guard location.count <= RedirectTarget.maximumLocationLength else { return .tooLong }
            return .redirect(redirect, location: location)
        }
    }
}

/// A site's page (`page:` in site.yaml): served as `text/html; charset=utf-8` for every other
/// path, under the AASA file's size bound and the same last-good rules. Checked only as far as a
/// server can: there, not empty (a file being written), within the bound, and UTF-8 (the type
/// says so).
public struct LandingPage: Sendable {
    /// The file name in the site's directory.
    public let name: String

    /// The same bound as the AASA file's: a landing page is a banner and a link, not a site.
    public static let maximumFileSize = AppSiteAssociation.maximumFileSize

    public static func validate(_ bytes: [UInt8], name: String) -> ValidationResult<LandingPage> {
        func refused(_ rule: Rule, _ message: String) -> ValidationResult<LandingPage> {
            ValidationResult(document: nil, diagnostics: [Diagnostic(.error, rule, path: nil, message: message)])
        }
        if bytes.isEmpty { return refused(.fileEmpty, "the page is empty (still being written?); the last good version stays") }
        if bytes.count > maximumFileSize {
            return refused(.fileTooLarge, "the page is larger than \(maximumFileSize / 1024) KB; keep it to a banner and a link")
        }
        if String(validating: bytes, as: UTF8.self) == nil {
            return refused(.encoding, "the page is not UTF-8, and it is served as text/html; charset=utf-8")
        }
        // The last line of defence for keys kept outside any tls/ folder or reached in a way the
        // file rules cannot see (ConfigLoader.openChecked in ConfigLoader+Files.swift): a hard
        // link to another site's key whose other name a renewal then replaced by rename has one
        // name left and lies in the page's directory. Every PEM private key (PKCS #8, encrypted,
        // RSA, EC, OpenSSH) has this line (RFC 7468 §10, §11); a DER key is not UTF-8 (above).
        // The message does not quote the label: a key's bytes are never echoed.
        if holdsPrivateKey(bytes) {
            return refused(.pagePrivateKey, "the page holds a private key (PEM); it is never served")
        }
        return ValidationResult(document: LandingPage(name: name), diagnostics: [])
    }

    /// Whether `bytes` hold a PEM private key's first line: `-----BEGIN ` and, on the same line,
    /// `PRIVATE KEY-----` (RFC 7468 §2: the label sits between the two). One pass.
    package static func holdsPrivateKey(_ bytes: [UInt8]) -> Bool {
        let begin = Array("-----BEGIN ".utf8)
        let end = Array("PRIVATE KEY-----".utf8)
        var i = 0
        while i + begin.count <= bytes.count {
            guard bytes[i] == begin[0], bytes[i..<(i + begin.count)].elementsEqual(begin) else {
                i += 1
                continue
            }
            // The label, up to the end of the line.
            var j = i + begin.count
            while j < bytes.count && bytes[j] != 0x0A && bytes[j] != 0x0D {
                if bytes[j] == end[0] && bytes[j...].starts(with: end) { return true }
                j += 1
            }
            i = j
        }
        return false
    }
}
