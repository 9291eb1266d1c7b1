import Foundation
import Glibc
import Hashing
public import Logging
import SafeText
import SiteStore
import Synchronization
import Yams

/// What a token may do.
public enum APIScope: String, Sendable {
    /// GET only.
    case read
    /// GET, PUT and DELETE.
    case write
}

/// One host pattern of a token: `*` (every host), an exact name, or `*.suffix` (every name any
/// depth below `suffix`, never `suffix` itself: a tenant given `*.customer.example` does not own
/// the platform's `customer.example`).
public enum APIHostPattern: Sendable, Equatable, CustomStringConvertible {
    case any
    case exact(String)
    case below(String)

    /// Parses a pattern as written in the tokens file; nil with why when it is not one.
    static func parse(_ text: String) -> Result<APIHostPattern, PatternError> {
        if text == "*" { return .success(.any) }
        if let problem = APIHostName.problem(Substring(text)) { return .failure(PatternError(reason: problem)) }
        if text.hasPrefix("*.") { return .success(.below(String(text.dropFirst(2)))) }
        return .success(.exact(text))
    }

    struct PatternError: Error {
        var reason: String
    }

    /// Whether `host` (a name `APIHostName` accepted) lies within the pattern. Compared as bytes.
    public func matches(_ host: String) -> Bool {
        switch self {
        case .any:
            return true
        case .exact(let name):
            return host.utf8.elementsEqual(name.utf8)
        case .below(let suffix):
            let tail = suffix.utf8.count + 1
            guard host.utf8.count > tail else { return false }
            let end = host.utf8.suffix(tail)
            return end.first == UInt8(ascii: ".") && end.dropFirst().elementsEqual(suffix.utf8)
        }
    }

    public var description: String {
        switch self {
        case .any: "*"
        case .exact(let name): name
        case .below(let suffix): "*." + suffix
        }
    }
}

/// One token of `api.tokens-file`: the token itself is never stored, only its SHA-256.
public struct APIToken: Sendable {
    public var name: String
    var digest: [UInt8]
    public var scope: APIScope
    public var hosts: [APIHostPattern]

    /// Whether the token's patterns cover `host`.
    public func covers(_ host: String) -> Bool { hosts.contains { $0.matches(host) } }
}

/// Why a tokens file was refused as a whole.
public struct APITokensFileError: Error, Sendable, CustomStringConvertible {
    public var description: String
}

/// The tokens file (docs/api.md), read strictly: any unknown key, missing key, bad digest, scope,
/// name or pattern refuses the whole file, so that a typo never widens or silently drops a
/// token's rights.
public enum APITokensFile {
    /// Largest tokens file read: some 5,000 tokens of a few patterns each; a file above it is
    /// not a tokens file someone meant to write.
    public static let maximumFileSize = 1 << 20
    /// Most tokens in one file: a bound on the (constant-time, whole-list) lookup per request.
    public static let maximumTokens = 10_000
    /// Most patterns one token holds: checked per request against every host a request names.
    public static let maximumPatterns = 1_000
    /// Longest token name: names go into log lines.
    static let maximumNameLength = 64

    /// Parses the file's text.
    public static func parse(_ text: String) throws(APITokensFileError) -> [APIToken] {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text, .default, .default, .utf8)
        } catch {
            // The shared message (as site.yaml's): the bad line quoted, escaped and cut short, not
            // Yams' text, which repeats the line whole on a line of its own, and a tokens file's
            // line may be a secret someone pasted in the wrong place.
            throw fail("not YAML: \(YAMLKeys.syntaxMessage(error, text: text))")
        }
        guard let mapping = node?.mapping else { throw fail("the file must be a mapping with one key, tokens") }
        var list: Node.Sequence?
        for (key, value) in mapping {
            guard key.string == "tokens" else { throw fail("unknown key \(quoted(key.string)); the file holds tokens only") }
            guard let sequence = value.sequence else { throw fail("tokens must be a list") }
            list = sequence
        }
        guard let list else { throw fail("the file has no tokens key") }
        guard list.count <= maximumTokens else { throw fail("more than \(maximumTokens) tokens") }
        var tokens: [APIToken] = []
        var names = Set<String>()
        var digests = Set<[UInt8]>()
        for (index, item) in list.enumerated() {
            let token = try parseToken(item, number: index + 1)
            guard names.insert(token.name).inserted else { throw fail("token \(index + 1): the name \(token.name) is used twice") }
            guard digests.insert(token.digest).inserted else { throw fail("token \(token.name): its sha256 is another token's") }
            tokens.append(token)
        }
        return tokens
    }

    private static func parseToken(_ node: Node, number: Int) throws(APITokensFileError) -> APIToken {
        guard let mapping = node.mapping else { throw fail("token \(number) must be a mapping of name, sha256, scope, hosts") }
        var name: String?
        var digest: [UInt8]?
        var scope: APIScope?
        var hosts: [APIHostPattern]?
        for (keyNode, value) in mapping {
            let key = keyNode.string ?? ""
            switch key {
            case "name":
                guard let text = value.scalar?.string, validName(text) else {
                    throw fail("token \(number): name must be 1 to \(maximumNameLength) of A-Z a-z 0-9 . _ -")
                }
                name = text
            case "sha256":
                guard let text = value.scalar?.string, let bytes = hexDigest(text) else {
                    throw fail("token \(number): sha256 must be 64 lower-case hexadecimal digits (sha256sum of the token)")
                }
                digest = bytes
            case "scope":
                guard let text = value.scalar?.string, let parsed = APIScope(rawValue: text) else {
                    throw fail("token \(number): scope must be read or write")
                }
                scope = parsed
            case "hosts":
                guard let items = value.sequence, !items.isEmpty else {
                    throw fail("token \(number): hosts must be a list of patterns (\"*\", a.example, \"*.a.example\")")
                }
                guard items.count <= maximumPatterns else { throw fail("token \(number): more than \(maximumPatterns) host patterns") }
                var patterns: [APIHostPattern] = []
                for item in items {
                    guard let text = item.scalar?.string else { throw fail("token \(number): a host pattern must be a string") }
                    switch APIHostPattern.parse(text) {
                    case .success(let pattern): patterns.append(pattern)
                    case .failure(let error):
                        throw fail("token \(number): the host pattern \(quoted(text)) is refused: \(error.reason)")
                    }
                }
                hosts = patterns
            default:
                throw fail("token \(number): unknown key \(quoted(key)); a token has name, sha256, scope and hosts")
            }
        }
        guard let name else { throw fail("token \(number): no name") }
        guard let digest else { throw fail("token \(name): no sha256") }
        guard let scope else { throw fail("token \(name): no scope (read or write)") }
        guard let hosts else { throw fail("token \(name): no hosts") }
        return APIToken(name: name, digest: digest, scope: scope, hosts: hosts)
    }

    static func validName(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maximumNameLength
            && text.utf8.allSatisfy { c in
                (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x5F || c == 0x2D
            }
    }

    /// The 32 bytes of 64 lower-case hex digits (`sha256sum`'s form), or nil.
    static func hexDigest(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 2 * Digest.sha256Length else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(Digest.sha256Length)
        var i = 0
        while i < digits.count {
            guard let high = value(digits[i]), let low = value(digits[i + 1]) else { return nil }
            out.append(high << 4 | low)
            i += 2
        }
        return out
    }

    private static func quoted(_ text: String?) -> String { "\"" + TerminalText.escaped(text ?? "?") + "\"" }

    private static func fail(_ message: String) -> APITokensFileError { APITokensFileError(description: message) }
}

/// The tokens in force, read from `api.tokens-file` and read again when it changes: checked on a
/// request at most once per `recheckInterval` (one `stat`), or at once by `reload()` (the daemon's
/// reload). A file that cannot be read or parsed keeps the last good set in force, logged once per
/// version; at start it leaves no token, so every request is refused (401) until it is fixed.
public final class APITokenStore: Sendable {
    /// How often a request may look at the file: at most one `stat` per second, whatever the
    /// request rate; a changed file is in force within this time.
    public static let recheckInterval: Duration = .seconds(1)

    public let path: String
    private let logger: Logger
    private let state: Mutex<State>

    private struct State {
        var tokens: [APIToken] = []
        var lastCheck: ContinuousClock.Instant?
        /// The file version last read (good or bad): device, inode, size, change and modify times.
        var version: [Int64]?
    }

    public init(path: String, logger: Logger) {
        self.path = path
        self.logger = logger
        state = Mutex(State())
        reload()
    }

    /// The tokens in force now.
    public var tokens: [APIToken] {
        refreshIfDue()
        return state.withLock { $0.tokens }
    }

    /// Reads the file again now (unless the same version was read last).
    public func reload() {
        state.withLock { state in
            state.lastCheck = ContinuousClock.now
            Self.read(path: path, logger: logger, into: &state)
        }
    }

    /// The token whose SHA-256 is that of `presented`, compared in constant time with every token
    /// (no early exit: the time taken tells nothing about which digest nearly matched).
    public func token(presented: String) -> APIToken? {
        let digest = Digest.sha256(Array(presented.utf8))
        var found: APIToken?
        for token in tokens {
            var difference: UInt8 = 0
            for i in 0..<Digest.sha256Length { difference |= token.digest[i] ^ digest[i] }
            if difference == 0 && found == nil { found = token }
        }
        return found
    }

    private func refreshIfDue() {
        state.withLock { state in
            let now = ContinuousClock.now
            if let last = state.lastCheck, now - last < Self.recheckInterval { return }
            state.lastCheck = now
            Self.read(path: path, logger: logger, into: &state)
        }
    }

    private static func read(path: String, logger: Logger, into state: inout State) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = String(cString: strerror(errno))
            if state.version != [] {
                state.version = []
                logger.error(
                    "the API tokens file cannot be read; \(state.tokens.isEmpty ? "no token is accepted" : "the tokens read before stay in force")",
                    metadata: ["file": "\(path)", "error": "\(reason)"])
            }
            return
        }
        let version: [Int64] = [
            Int64(truncatingIfNeeded: info.st_dev), Int64(truncatingIfNeeded: info.st_ino), Int64(info.st_size),
            Int64(info.st_mtim.tv_sec), Int64(info.st_mtim.tv_nsec), Int64(info.st_ctim.tv_sec), Int64(info.st_ctim.tv_nsec),
        ]
        guard version != state.version else { return }
        state.version = version
        let kept = state.tokens.isEmpty ? "no token is accepted" : "the tokens read before stay in force"
        // Followed through symbolic links: a Kubernetes Secret volume names the file through
        // `..data`, swapped when the Secret changes.
        let bytes: [UInt8]
        switch ConfigLoader.readBounded(path: path, limit: APITokensFile.maximumFileSize) {
        case .success(let read) where read.count > APITokensFile.maximumFileSize:
            logger.error("the API tokens file is larger than 1 MB; \(kept)", metadata: ["file": "\(path)"])
            return
        case .success(let read):
            bytes = read
        case .failure(let error):
            logger.error("the API tokens file cannot be read; \(kept)", metadata: ["file": "\(path)", "error": "\(error)"])
            return
        }
        guard UTF8Validation.firstInvalidOffset(in: bytes) == nil else {
            logger.error("the API tokens file is not UTF-8; \(kept)", metadata: ["file": "\(path)"])
            return
        }
        do {
            state.tokens = try APITokensFile.parse(String(decoding: bytes, as: UTF8.self))
            logger.info("API tokens read", metadata: ["file": "\(path)", "tokens": "\(state.tokens.count)"])
        } catch {
            logger.error("the API tokens file is refused; \(kept)", metadata: ["file": "\(path)", "error": "\(error)"])
        }
    }
}
