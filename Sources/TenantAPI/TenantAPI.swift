import AASA
import Foundation
import HTTPCore
import Hashing
public import Logging
import Reactor
import SafeText
import Served
import SiteStore
import StrictJSON

/// The tenant API's meaning (docs/api.md, "Endpoints and tokens"): tokens, host names, sites
/// written into the config directory as a person would, checked as `aasad validate` checks them.
/// `handle` is the `APIHandler` the listener calls, on the connection's own thread.
public final class TenantAPI: Sendable {
    public struct Configuration: Sendable {
        /// The config directory (`--config`); sites are written under its `sites/`.
        public var configDirectory: String
        /// Why the API is read-only (`api.read-only`: git-sync owns the directory); nil: writable.
        public var readOnlyReason: String?
        /// Requests per token per minute (`api.requests-per-minute`).
        public var requestsPerMinute: Int
        /// How long a write waits until this process serves it before answering 202.
        public var servedTimeout: Duration
        /// The ownership checks of names added here (docs/api.md, "Ownership check"); nil: no
        /// name needs one (every site is `not-required`).
        public var verification: VerificationStore?
        /// The port the checker fetches (`api.verify-port`), shown in the check's URL.
        public var verifyPort: Int
        /// Called when a write made a check due now (the checker looks at once).
        public var verificationDue: (@Sendable () -> Void)?

        public init(
            configDirectory: String, readOnlyReason: String? = nil, requestsPerMinute: Int = TenantAPI.defaultRequestsPerMinute,
            servedTimeout: Duration = TenantAPI.servedTimeout, verification: VerificationStore? = nil, verifyPort: Int = 80,
            verificationDue: (@Sendable () -> Void)? = nil
        ) {
            self.verification = verification
            self.verifyPort = verifyPort
            self.verificationDue = verificationDue
            self.configDirectory = configDirectory
            self.readOnlyReason = readOnlyReason
            self.requestsPerMinute = requestsPerMinute
            self.servedTimeout = servedTimeout
        }
    }

    /// Requests per token per minute unless set: ten a second, far above a control plane's
    /// onboarding rate, far below what would keep the reloader busy.
    public static let defaultRequestsPerMinute = 600
    /// How long a write waits for the reload that serves it: a single-site reload takes
    /// milliseconds (docs/benchmarks.md); past 5 s the client gets 202 and polls GET.
    public static let servedTimeout: Duration = .seconds(5)
    /// Largest request body: the four files at their bounds fit well under it (docs/api.md).
    public static let maximumBodyBytes = 1 << 20
    /// Longest bearer token read: a token is a random string of some 43 to 64 characters; a
    /// longer header is refused before hashing it.
    package static let maximumTokenLength = 1024
    /// Most list entries per page, and the default (docs/api.md).
    package static let maximumPageSize = 1000
    static let defaultPageSize = 100
    /// Most site names one list page looks at: a token whose patterns match few of 1,000,000 sites
    /// gets a shorter page and a cursor, rather than a request that reads every name.
    static let maximumNamesScanned = 10_000
    /// First and longest pause between looks at the served state while a write waits for it.
    static let firstPoll: Duration = .milliseconds(5)
    static let longestPoll: Duration = .milliseconds(200)

    let configuration: Configuration
    let tokens: APITokenStore
    let state: any APIServedState
    let logger: Logger
    let limiter: APIRateLimiter
    let locks = HostLocks()
    let names: SiteNames
    let pending = PendingClaims()
    let directory: SiteDirectory

    public convenience init(configuration: Configuration, tokens: APITokenStore, state: any APIServedState, logger: Logger) {
        self.init(configuration: configuration, tokens: tokens, state: state, logger: logger, failWrite: nil)
    }

    /// `failWrite`: the tests' way to make the write of a named file fail with an errno.
    init(
        configuration: Configuration, tokens: APITokenStore, state: any APIServedState, logger: Logger,
        failWrite: (@Sendable (String) -> Int32?)?
    ) {
        self.configuration = configuration
        self.tokens = tokens
        self.state = state
        self.logger = logger
        limiter = APIRateLimiter(requestsPerMinute: configuration.requestsPerMinute)
        let sites = configuration.configDirectory + "/sites"
        directory = SiteDirectory(sitesPath: sites, failWrite: failWrite)
        names = SiteNames(sitesPath: sites)
        let removed = directory.removeLeftovers()
        if removed > 0 { logger.notice("removed the API's unfinished writes left by a stopped process", metadata: ["count": "\(removed)"]) }
    }

    /// The handler the listener calls.
    public var handler: APIHandler { { [self] request in handle(request) } }

    // MARK: - GET

    func get(_ host: String) -> APIResponse {
        switch directory.current(host, strict: false) {
        case .absent:
            return Self.error(404, "not-found", "no site directory holds \(host)")
        case .foreign(let reason):
            return Self.error(404, "not-found", "no site directory holds \(host): \(reason)")
        case .site(let files):
            let etag = SiteDirectory.etag(files)
            let found = problems(host, directory.sitesPath + "/" + host)
            let body = siteState(
                host, files: files, etag: etag, problems: found.all, served: isServed(host, files: files, aliases: found.aliases))
            return APIResponse(status: 200, headers: [("content-type", "application/json"), ("etag", etag)], body: Array(body.utf8))
        }
    }

    // MARK: - PUT

    func put(_ host: String, _ request: APIRequest, token: APIToken) -> APIResponse {
        let type = request.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
        guard type == "application/json" else {
            return Self.error(415, "unsupported-media-type", "the body must be Content-Type: application/json")
        }
        guard request.body.count <= Self.maximumBodyBytes else {
            return Self.error(413, "too-large", "the body is larger than \(Self.maximumBodyBytes) bytes")
        }
        let body: SiteBody
        switch SiteBody.parse(request.body) {
        case .failure(let problem): return Self.unprocessable([problem])
        case .success(let parsed): body = parsed
        }
        // A name the site claims is a name the token must own: an alias is a site's host too.
        // Refused here before anything is written; the names the loader takes from the written
        // site.yaml are checked again below, whatever form they were given in.
        for alias in body.aliases {
            if let name = try? HostName(parsing: alias), let refusal = Self.aliasRefusal(name, token: token) { return refusal }
        }
        return locks.withLock(host) {
            let before: [String: [UInt8]]?
            switch directory.current(host) {
            case .foreign(let reason): return Self.error(409, "conflict", reason)
            case .absent: before = nil
            case .site(let files): before = files
            }
            let beforeETag = before.map(SiteDirectory.etag)
            if let refusal = Self.preconditionFails(request, current: beforeETag) { return refusal }
            let namedBefore = before == nil ? [] : namesForChecks(host)
            let staging: String
            do throws(SiteDirectory.Failure) {
                staging = try directory.stage(host, body.files)
            } catch {
                return Self.writeFailure(error, logger: logger, host: host)
            }
            let found = problems(host, staging)
            for alias in found.aliases {
                if let refusal = Self.aliasRefusal(alias, token: token) {
                    SiteDirectory.removeTree(staging)
                    return refusal
                }
            }
            // The ownership check and the rename in one section: a write of another site naming
            // the same alias sees this one (`PendingClaims`).
            pending.section.lock()
            let claims = ownershipProblems(host, aliases: found.aliases)
            let errors = found.all.filter { $0.severity == "error" } + claims.problems
            guard errors.isEmpty else {
                pending.section.unlock()
                SiteDirectory.removeTree(staging)
                return Self.unprocessable(errors)
            }
            let madeChecks: [String]
            do throws(VerificationError) {
                madeChecks = try createChecks(host, created: before == nil, namedBefore: namedBefore, aliases: found.aliases)
            } catch {
                pending.section.unlock()
                SiteDirectory.removeTree(staging)
                return Self.error(500, "internal", "the ownership check's record could not be written; nothing was written")
            }
            do throws(SiteDirectory.Failure) {
                try directory.install(staging, as: host, replacing: before != nil)
            } catch {
                forgetChecks(Set(madeChecks))
                pending.section.unlock()
                return Self.writeFailure(error, logger: logger, host: host)
            }
            settleChecks(host, namedBefore: namedBefore, aliases: found.aliases)
            pending.record(host, claims.names)
            pending.section.unlock()
            names.changed()
            let etag = SiteDirectory.etag(body.files)
            logWrite(token: token, host: host, action: "put", before: beforeETag, after: etag)
            let served = waitUntil { self.isServed(host, files: body.files, aliases: found.aliases) }
            // Served means a reload decided the aliases, and the daemon publishes the ownership
            // before the snapshot (Sources/Daemon/Admin.swift): the claim is the ownership's now.
            if served { pending.forget(host) }
            let status = !served ? 202 : before == nil ? 201 : 200
            let state = siteState(host, files: body.files, etag: etag, problems: found.all, served: served)
            return APIResponse(status: status, headers: [("content-type", "application/json"), ("etag", etag)], body: Array(state.utf8))
        }
    }

    /// 403 when `token`'s patterns do not cover an alias the site would claim.
    static func aliasRefusal(_ alias: HostName, token: APIToken) -> APIResponse? {
        guard !token.covers(alias.name) else { return nil }
        return error(403, "forbidden", "this token's host patterns do not cover the alias \(alias.name)")
    }

    /// The RFC 9110 §13.1.1 and §13.1.2 checks on the current ETag (nil: no site).
    static func preconditionFails(_ request: APIRequest, current: String?) -> APIResponse? {
        if let ifMatch = request.header("if-match") {
            let matches: Bool
            if ifMatch.trimmingCharacters(in: .whitespaces) == "*" {
                matches = current != nil
            } else {
                matches = current.map { etag in entityTags(ifMatch).contains(etag) } ?? false
            }
            if !matches {
                return error(412, "precondition-failed", "If-Match: the site's current ETag is \(current ?? "none (no site)")")
            }
        }
        if let ifNoneMatch = request.header("if-none-match"), let current {
            if ifNoneMatch.trimmingCharacters(in: .whitespaces) == "*" || entityTags(ifNoneMatch).contains(current) {
                return error(412, "precondition-failed", "If-None-Match: the site exists, with ETag \(current)")
            }
        }
        return nil
    }

    /// The strong entity tags of a list (`"a", "b"`); weak ones never match a strong comparison.
    static func entityTags(_ field: String) -> [String] {
        field.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0.hasPrefix("\"") }
    }

    // MARK: - DELETE

    func delete(_ host: String, _ request: APIRequest, token: APIToken) -> APIResponse {
        locks.withLock(host) {
            let before: [String: [UInt8]]
            switch directory.current(host) {
            case .absent: return Self.error(404, "not-found", "no site directory holds \(host)")
            case .foreign(let reason): return Self.error(409, "conflict", reason)
            case .site(let files): before = files
            }
            let beforeETag = SiteDirectory.etag(before)
            if let refusal = Self.preconditionFails(request, current: beforeETag) { return refusal }
            let namedBefore = namesForChecks(host)
            pending.section.lock()
            do throws(SiteDirectory.Failure) {
                try directory.remove(host)
            } catch {
                pending.section.unlock()
                return Self.writeFailure(error, logger: logger, host: host)
            }
            forgetChecks(namedBefore)
            pending.record(host, nil)
            pending.section.unlock()
            names.changed()
            logWrite(token: token, host: host, action: "delete", before: beforeETag, after: nil)
            let gone = waitUntil { self.state.served(directory: host) == nil }
            if gone { pending.forget(host) }
            return gone ? APIResponse(status: 204) : Self.json(202, "{\"host\":\(JSONValue.quote(host)),\"served\":true}")
        }
    }

    // MARK: - Checks

    /// A site directory read and validated by the loader `serve` and `validate` use, with its
    /// problems in the API's form (paths relative to the site directory).
    func problems(_ host: String, _ path: String) -> (all: [APIProblem], aliases: [HostName]) {
        guard let hostName = try? HostName(parsing: host) else { return ([.body("not a host name")], []) }
        let relative = "sites/\(host)"
        let site = ConfigLoader.loadSite(
            host: hostName, directory: path, relative: relative, configRoot: configuration.configDirectory, plainDirectory: true)
        var out: [APIProblem] = []
        func file(_ name: String) -> String {
            name.hasPrefix(relative + "/") ? String(name.dropFirst(relative.count + 1)) : "body"
        }
        func add<D>(_ read: SiteFile<D>?, _ name: String) {
            for d in read?.result.diagnostics ?? [] {
                out.append(
                    APIProblem(
                        code: d.rule.rawValue, severity: d.severity.rawValue, message: d.message, path: name, line: d.location?.line,
                        column: d.location?.column))
            }
        }
        add(site.aasa, SiteFiles.aasa)
        add(site.assetLinks, SiteFiles.assetLinks)
        add(site.page, SiteFiles.page)
        for p in site.problems {
            out.append(
                APIProblem(code: "config", severity: p.severity.rawValue, message: p.message, path: file(p.file), line: nil, column: nil))
        }
        return (out, site.settings.aliases)
    }

    /// The names the site would hold, decided on a copy of the current ownership with the new
    /// version in place, exactly as a reload decides them (`HostOwnership`): a name it claims
    /// that another site holds, and a name another site would lose to it, are refused.
    func ownershipProblems(_ host: String, aliases: [HostName]) -> (problems: [APIProblem], names: HostOwnership.Names?) {
        guard let hostName = try? HostName(parsing: host) else { return ([], nil) }
        let now = pending.overlay(on: state.ownership())
        var next = now
        let symlinks = now.names(of: host)?.symlinks ?? [:]
        let names = PendingClaims.normalised(HostOwnership.Names(host: hostName, symlinks: symlinks, aliases: aliases))
        next.set(host, names)
        let touched = next.resolve()
        var out: [APIProblem] = []
        for refusal in next.refusals(of: host) {
            let path = refusal.source == .alias ? SiteFiles.settings : "body"
            out.append(
                APIProblem(
                    code: "ownership", severity: "error", message: refusal.problem(site: host).message, path: path, line: nil, column: nil))
        }
        for other in touched.sorted() where other != host {
            let before = Set(now.refusals(of: other).map(\.host))
            for refusal in next.refusals(of: other) where !before.contains(refusal.host) {
                out.append(
                    APIProblem(
                        code: "ownership", severity: "error",
                        message: "sites/\(other) would lose \(refusal.host): \(refusal.problem(site: other).message)", path: "body",
                        line: nil,
                        column: nil))
            }
        }
        return (out, names)
    }

    /// Whether the process serves exactly these files for `host`, and has decided each alias
    /// site.yaml names: served under it, or refused (a reload that read the new site.yaml did
    /// both; a change of aliases alone moves no file's digest).
    func isServed(_ host: String, files: [String: [UInt8]], aliases: [HostName]) -> Bool {
        guard let served = state.served(directory: host) else { return false }
        func digest(_ name: String) -> String? { files[name].map { Hex.string(Digest.sha256($0)) } }
        guard
            served.aasa == digest(SiteFiles.aasa) && served.assetLinks == digest(SiteFiles.assetLinks)
                && served.page == digest(SiteFiles.page)
        else { return false }
        guard let hosts = served.hosts, !aliases.isEmpty else { return true }
        let refused = Set(state.ownership().refusals(of: host).map(\.host))
        return aliases.allSatisfy { hosts.contains($0.name) || refused.contains($0) }
    }

    /// Polls `condition` with a doubling pause until it holds or `servedTimeout` passes.
    func waitUntil(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + configuration.servedTimeout
        var pause = Self.firstPoll
        while true {
            if condition() { return true }
            let now = ContinuousClock.now
            if now >= deadline { return false }
            Thread.sleep(forTimeInterval: Self.seconds(min(pause, deadline - now)))
            pause = min(pause * 2, Self.longestPoll)
        }
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    // MARK: - Answers

    func logWrite(token: APIToken, host: String, action: String, before: String?, after: String?) {
        logger.notice(
            "api-write",
            metadata: [
                "event": "api-write", "token": "\(token.name)", "host": "\(host)", "action": "\(action)", "before": "\(before ?? "null")",
                "after": "\(after ?? "null")",
            ])
    }

    static func writeFailure(_ error: SiteDirectory.Failure, logger: Logger, host: String) -> APIResponse {
        switch error {
        case .noSpace(let reason):
            logger.error("an API write found no space; nothing was written", metadata: ["host": "\(host)", "error": "\(reason)"])
            return Self.error(507, "insufficient-storage", "the config directory's filesystem is full; nothing was written")
        case .exists:
            return Self.error(409, "conflict", "sites/\(host) changed while it was written; nothing was written")
        case .other(let reason):
            logger.error("an API write failed; nothing was written", metadata: ["host": "\(host)", "error": "\(reason)"])
            return Self.error(500, "internal", "the site could not be written; nothing was written")
        }
    }

    static func json(_ status: Int, _ body: String, _ headers: [(name: String, value: String)] = []) -> APIResponse {
        APIResponse(status: status, headers: [("content-type", "application/json")] + headers, body: Array(body.utf8))
    }

    static func error(_ status: Int, _ code: String, _ message: String, _ headers: [(name: String, value: String)] = []) -> APIResponse {
        json(status, "{\"error\":\(JSONValue.quote(code)),\"message\":\(JSONValue.quote(message))}", headers)
    }

    static func methodNotAllowed(_ allow: String) -> APIResponse {
        error(405, "unsupported-method", "this path takes \(allow)", [("allow", allow)])
    }

    static func unprocessable(_ problems: [APIProblem]) -> APIResponse {
        json(422, "{\"problems\":[\(problems.map(\.json).joined(separator: ","))]}")
    }
}
