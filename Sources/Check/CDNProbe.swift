public import Outbound
import SafeText

/// One look at Apple's CDN copy of a host: what `aasad check`, `aasad sites --cdn` and the CDN
/// watch each ask, made one way; and, in the same terms, one look at what Google's Digital Asset
/// Links API lists for it (`DALProbe.observation`), which the watch keeps beside Apple's.
public struct CDNObservation: Sendable, Equatable {
    /// The CDN's status; nil when it could not be reached.
    public var status: Int?
    /// The CDN's `Apple-Failure-Reason` (why it holds no copy), as received, at most 512 bytes.
    public var failureReason: String?
    /// Why the CDN could not be asked (DNS, TLS, timeout), or what it answered instead of a file.
    public var error: String?
    /// The digest of the copy's canonical JSON (`JSONComparison.digest`), for a 200 that is JSON.
    public var digest: [UInt8]?
    /// The answer was refused whatever its status (Google's: not JSON, about another site): an
    /// error, even with status 200.
    public var refused: Bool
    /// A 200 that lists nothing (Google's API names no app for the site): missing, as Apple's 404.
    public var listsNothing: Bool

    public init(
        status: Int?, failureReason: String? = nil, error: String? = nil, digest: [UInt8]? = nil, refused: Bool = false,
        listsNothing: Bool = false
    ) {
        self.status = status
        self.failureReason = failureReason
        self.error = error
        self.digest = digest
        self.refused = refused
        self.listsNothing = listsNothing
    }

    /// The state against the origin's file (its digest; nil when the origin served none).
    public func state(against origin: [UInt8]?) -> CDNState {
        if refused { return .error }
        switch status {
        case 200 where listsNothing: return .missing
        case 200: return digest != nil && digest == origin ? .current : .stale
        case 404: return .missing
        default: return .error
        }
    }

    /// Whether the service asked to be asked less (429, Too Many Requests, RFC 6585 §4): the
    /// watch then pauses that service (`CDNWatchSchedule.pausedUntil`).
    public var isThrottled: Bool { status == 429 }

    /// Whether the service itself failed (not reached, timed out, or a 5xx): a few in a row pause
    /// the service as a 429 does (`CDNWatchSchedule.failuresBeforePause`), so that one service
    /// that hangs does not hold the watch's one thread for the other.
    public var isServiceFailure: Bool {
        guard let status else { return true }
        return (500...599).contains(status)
    }
}

/// Asks the CDN for hosts' copies through the one outbound client.
public struct CDNProbe: Sendable {
    /// Apple's files are at most 128 KB; a CDN copy larger than twice that is no AASA file, and
    /// is not read further (it would only cost the canonical JSON's work).
    public static let maximumBodyBytes = 256 * 1024

    let client: OutboundClient
    /// The CDN base; the host is appended.
    public let base: String
    /// curl's connect-to entries for the CDN's requests (a test CDN, a proxy).
    public let connectTo: [String]

    public init(client: OutboundClient, base: String, connectTo: [String] = []) {
        self.client = client
        self.base = base
        self.connectTo = connectTo
    }

    /// The longest a CDN, origin or API request may take in all.
    public static let timeoutSeconds = 20

    /// The client configuration for CDN and origin requests: the system's roots, plus `caFile`.
    public static func configuration(caFile: String?, userAgent: String, timeoutSeconds: Int = timeoutSeconds)
        -> OutboundClient.Configuration
    {
        var configuration = OutboundClient.Configuration(caFile: caFile)
        configuration.addsSystemRoots = caFile != nil
        configuration.userAgent = userAgent
        configuration.totalTimeoutMilliseconds = timeoutSeconds * 1_000
        configuration.connectTimeoutMilliseconds = min(10, timeoutSeconds) * 1_000
        configuration.maximumBodyBytes = maximumBodyBytes
        return configuration
    }

    /// One request for `host`'s copy.
    public func observe(_ host: String) -> CDNObservation {
        do {
            var request = OutboundRequest(url: base + host)
            request.connectTo = connectTo
            let response = try client.perform(request)
            var observation = CDNObservation(
                status: response.status,
                failureReason: response.headers.first("apple-failure-reason").map { TerminalText.escaped(utf8: Array($0.prefix(512))) })
            switch response.status {
            case 200: observation.digest = JSONComparison.digest(response.body)
            case 404: break
            default: observation.error = "the CDN answered \(response.status)"
            }
            return observation
        } catch {
            return CDNObservation(status: nil, error: error.message)
        }
    }
}
