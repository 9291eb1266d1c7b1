import HTTPCore
import StrictJSON

/// ACME Renewal Information (RFC 9773 §4.2): the window in which the CA suggests renewing one
/// certificate. Read as strictly as every other CA document: both ends required, RFC 3339
/// timestamps, the end after the start, within four-digit years.
public struct RenewalInfo: Sendable, Equatable {
    /// The window, seconds since the epoch.
    public var start: Int64
    public var end: Int64
    /// Where the CA explains why (shown to operators, never fetched).
    public var explanationURL: String?

    public init(start: Int64, end: Int64, explanationURL: String? = nil) {
        self.start = start
        self.end = end
        self.explanationURL = explanationURL
    }

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        let o = try ACMEObject(body: body, what: "renewal information")
        guard let window = try o.object("suggestedWindow") else {
            throw .malformed(what: "renewal information", reason: "suggestedWindow is missing")
        }
        func time(_ key: String) throws(ACMEError) -> Int64 {
            let text = try window.requiredString(key)
            guard let seconds = HTTPDate.rfc3339(Array(text.utf8)) else {
                throw .malformed(
                    what: "renewal information", reason: "\(key) \(JSONValue.quote(ACMEProblem.clean(text))) is not an RFC 3339 time")
            }
            return seconds
        }
        start = try time("start")
        end = try time("end")
        // §4.2: the end must be after the start; a client ignores a window that is not.
        guard end > start else { throw .malformed(what: "renewal information", reason: "the window ends before it starts") }
        explanationURL = try o.string("explanationURL").map { ACMEProblem.clean($0) }
    }

    /// §4.2: a time chosen uniformly at random within the window, so that clients holding
    /// certificates from one batch do not all renew at once. `random` is in [0, 1).
    public func renewalTime(random: Double) -> Int64 {
        start + Int64((Double(end - start) * min(max(random, 0), 1)).rounded(.down))
    }
}
