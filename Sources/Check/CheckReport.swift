/// What `aasad check` reports for one host, in the shape `--format json` prints. A stable
/// interface for scripts: `host`, `ok`, `origin`, `cdn`, `dal` and `problems` are always present
/// (`cdn` is null when the CDN was not asked, `dal` when Google's API was not); fields are only
/// ever added.
public struct HostReport: Sendable, Encodable, Equatable {
    public var host: String
    /// True when no problem is an error (warnings do not count).
    public var ok: Bool
    public var origin: OriginReport
    /// `/.well-known/assetlinks.json`: null when the origin answers 404 (the site has none).
    public var assetLinks: FileReport?
    public var cdn: CDNReport?
    /// Google's Digital Asset Links API against the served assetlinks.json; null when not asked
    /// (`--dal none`, or the origin has no assetlinks.json).
    public var dal: DALReport?
    /// With `--app` (or an entitlements file naming the app): what the origin's file gives it.
    public var apps: [AppReport]
    public var problems: [Problem]

    public init(
        host: String, origin: OriginReport, assetLinks: FileReport?, cdn: CDNReport?, dal: DALReport? = nil, apps: [AppReport],
        problems: [Problem]
    ) {
        self.host = host
        self.origin = origin
        self.assetLinks = assetLinks
        self.cdn = cdn
        self.dal = dal
        self.apps = apps
        self.problems = problems
        ok = !problems.contains { $0.severity == .error }
    }

    public func encode(to encoder: any Encoder) throws {
        // Absent values as null, so that every key is always there.
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(host, forKey: .host)
        try c.encode(ok, forKey: .ok)
        try c.encode(origin, forKey: .origin)
        try c.encode(assetLinks, forKey: .assetLinks)
        try c.encode(cdn, forKey: .cdn)
        try c.encode(dal, forKey: .dal)
        try c.encode(apps, forKey: .apps)
        try c.encode(problems, forKey: .problems)
    }

    private enum Keys: String, CodingKey { case host, ok, origin, assetLinks, cdn, dal, apps, problems }
}

/// One fetched file as Apple's (or Google's) fetcher would see it.
public struct FileReport: Sendable, Encodable, Equatable {
    public var url: String
    /// The HTTP status; null when no response came (see `error`).
    public var status: Int?
    public var contentType: String?
    /// The `Location` of a 3xx answer (never followed).
    public var redirect: String?
    /// Body bytes received (before any content coding: none is asked for).
    public var size: Int?
    /// True when the body is a valid file of its kind.
    public var valid: Bool
    /// The validator's errors, one line each.
    public var errors: [String]
    /// Why there was no response (DNS, TCP, TLS, certificate, timeout).
    public var error: String?

    public init(url: String) {
        self.url = url
        valid = false
        errors = []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(url, forKey: .url)
        try c.encode(status, forKey: .status)
        try c.encode(contentType, forKey: .contentType)
        try c.encode(redirect, forKey: .redirect)
        try c.encode(size, forKey: .size)
        try c.encode(valid, forKey: .valid)
        try c.encode(errors, forKey: .errors)
        try c.encode(error, forKey: .error)
    }

    private enum Keys: String, CodingKey { case url, status, contentType, redirect, size, valid, errors, error }
}

/// The origin's AASA file and the certificate it was served with.
public struct OriginReport: Sendable, Encodable, Equatable {
    public var file: FileReport
    public var certificate: CertificateReport?

    public init(file: FileReport, certificate: CertificateReport?) {
        self.file = file
        self.certificate = certificate
    }

    public func encode(to encoder: any Encoder) throws {
        // The file's members at the top level of `origin`, beside `certificate`.
        try file.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(certificate, forKey: .certificate)
    }

    private enum Keys: String, CodingKey { case certificate }
}

/// The leaf certificate the origin presented.
public struct CertificateReport: Sendable, Encodable, Equatable {
    /// subjectAltName DNS names.
    public var names: [String]
    /// Seconds since the epoch.
    public var notBefore: Int64
    public var notAfter: Int64
    /// True when clients accepted it (chain, dates and name).
    public var trusted: Bool

    public init(names: [String], notBefore: Int64, notAfter: Int64, trusted: Bool) {
        self.names = names
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.trusted = trusted
    }
}

/// Apple's CDN copy compared with the origin's file.
public struct CDNReport: Sendable, Encodable, Equatable {
    public var url: String
    public var state: CDNState
    /// The CDN's HTTP status; null when it could not be reached.
    public var status: Int?
    /// The CDN's `Apple-Failure-Reason`, when it gives one (e.g. `SWCERR00101 Bad HTTP Response:
    /// 404 Not Found`): why it holds no copy.
    public var failureReason: String?
    /// Why the CDN could not be asked, or what it answered instead of a file.
    public var error: String?

    public init(url: String, state: CDNState, status: Int? = nil, failureReason: String? = nil, error: String? = nil) {
        self.url = url
        self.state = state
        self.status = status
        self.failureReason = failureReason
        self.error = error
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(url, forKey: .url)
        try c.encode(state, forKey: .state)
        try c.encode(status, forKey: .status)
        try c.encode(failureReason, forKey: .failureReason)
        try c.encode(error, forKey: .error)
    }

    private enum Keys: String, CodingKey { case url, state, status, failureReason, error }
}

/// What Apple's CDN holds for a host, against what the origin serves.
public enum CDNState: String, Sendable, Codable, Equatable, CaseIterable {
    /// The CDN's copy is the origin's file (the same JSON).
    case current
    /// The CDN holds another file than the origin's (an older one, or one the origin no longer
    /// serves).
    case stale
    /// The CDN holds no copy (404): devices go without, or to the origin directly.
    case missing
    /// The CDN could not be asked, or answered something else.
    case error
}

/// Google's Digital Asset Links API (`statements:list`) compared with the origin's
/// assetlinks.json: the apps (package and certificate fingerprint) each side gives
/// `handle_all_urls` to.
public struct DALReport: Sendable, Encodable, Equatable {
    /// The API request made.
    public var url: String
    public var state: DALState
    /// The API's HTTP status; null when it could not be reached.
    public var status: Int?
    /// How long Google's answer holds (`maxAge`, e.g. `599.998s`), as it gave it.
    public var maxAge: String?
    /// Google's `debugString` (what its fetch of the file found), escaped, at most 4 KB.
    public var debugString: String?
    /// The apps the API lists, sorted.
    public var listed: [AndroidApp]
    /// Listed by the API but not in the served file (Google's view is older, or comes from an
    /// included list), and the reverse.
    public var onlyAtGoogle: [AndroidApp]
    public var onlyServed: [AndroidApp]
    /// Why the API could not be asked, or what it answered instead of a list.
    public var error: String?

    public init(url: String, state: DALState) {
        self.url = url
        self.state = state
        listed = []
        onlyAtGoogle = []
        onlyServed = []
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(url, forKey: .url)
        try c.encode(state, forKey: .state)
        try c.encode(status, forKey: .status)
        try c.encode(maxAge, forKey: .maxAge)
        try c.encode(debugString, forKey: .debugString)
        try c.encode(listed, forKey: .listed)
        try c.encode(onlyAtGoogle, forKey: .onlyAtGoogle)
        try c.encode(onlyServed, forKey: .onlyServed)
        try c.encode(error, forKey: .error)
    }

    private enum Keys: String, CodingKey { case url, state, status, maxAge, debugString, listed, onlyAtGoogle, onlyServed, error }
}

/// What Google's API lists for a site, against the origin's assetlinks.json.
public enum DALState: String, Sendable, Codable, Equatable, CaseIterable {
    /// The same apps and fingerprints on both sides.
    case current
    /// Other apps or fingerprints than the origin's file gives (`onlyAtGoogle`, `onlyServed`).
    case stale
    /// The API lists no app for the site: Google could not read the file, or has not yet.
    case missing
    /// The API could not be asked, or its answer was refused (a status other than 200, not JSON,
    /// statements about another site, a value that is no package name or fingerprint).
    case error
}

/// What an app gets from a host's file (`--app`).
public struct AppReport: Sendable, Encodable, Equatable {
    public var appID: String
    /// Services whose app list names it: `applinks`, `webcredentials`, `appclips`,
    /// `activitycontinuation`.
    public var services: [String]
    /// The applinks rules of the entries that name it, in file order: each component as JSON, or
    /// a legacy path quoted (`NOT` included).
    public var rules: [String]

    public init(appID: String, services: [String], rules: [String]) {
        self.appID = appID
        self.services = services
        self.rules = rules
    }
}

/// One problem: a stable code for scripts, what is wrong, and what to do.
public struct Problem: Sendable, Encodable, Equatable {
    public enum Severity: String, Sendable, Encodable {
        case error
        case warning
    }

    public var code: String
    public var severity: Severity
    public var message: String
    public var fix: String

    public init(_ code: String, _ severity: Severity, _ message: String, fix: String) {
        self.code = code
        self.severity = severity
        self.message = message
        self.fix = fix
    }

    /// An error.
    public init(_ code: String, _ message: String, fix: String) {
        self.init(code, .error, message, fix: fix)
    }
}

extension Problem: Error {}
