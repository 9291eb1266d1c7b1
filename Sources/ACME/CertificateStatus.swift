/// What the certificate manager knows of one name, for `/sites`, `aasad sites`, metrics and logs.
public struct CertificateStatus: Sendable, Equatable {
    public enum State: String, Sendable, Equatable, CaseIterable {
        /// A stored certificate is served, and not yet due for renewal.
        case valid
        /// Due (no certificate, or renewal time), waiting for its turn in the order budget.
        case queued
        /// An order is under way in this process.
        case ordering
        /// Another replica holds the name's lock: its result is picked up from storage.
        case waiting
        /// The last order failed; `error` says why and `nextAttempt` when it is tried again.
        case failed
        /// A wildcard name: only DNS-01 can prove it, and no `acme.dns-hook` is set.
        case needsDNSHook = "needs-dns-hook"
        /// Past its site's `acme.names-per-site`: never ordered (a certificate it still has is
        /// served until it expires).
        case capped
    }

    public var name: String
    public var state: State
    /// The stored certificate's end of validity, seconds since the epoch.
    public var notAfter: Int64?
    /// When renewal starts (a third of the lifetime before `notAfter`).
    public var renewAt: Int64?
    /// The CA's (or the storage's) error from the last failed attempt, for the operator (logs,
    /// the admin listener): it may name paths and a DNS hook's output.
    public var error: String?
    /// The same failure as a site's tenant may read it (the tenant API): the CA's own words
    /// about the name, or a category when the cause is on the server's side
    /// (`ACMEError.tenantSummary`).
    public var errorForTenant: String?
    /// Seconds since the epoch; set while failed.
    public var nextAttempt: Int64?

    public init(
        name: String, state: State, notAfter: Int64? = nil, renewAt: Int64? = nil, error: String? = nil, errorForTenant: String? = nil,
        nextAttempt: Int64? = nil
    ) {
        self.name = name
        self.state = state
        self.notAfter = notAfter
        self.renewAt = renewAt
        self.error = error
        self.errorForTenant = errorForTenant
        self.nextAttempt = nextAttempt
    }
}

/// Counters since start, for metrics.
public struct CertificateCounters: Sendable, Equatable {
    /// Orders that ended with a stored certificate.
    public var issued = 0
    /// Orders that failed (any cause: the CA, a challenge, storage).
    public var failed = 0
    /// Certificates another replica stored, picked up from storage.
    public var pickedUp = 0
    /// Names due and waiting for the order budget.
    public var queued = 0
    /// The earliest `notAfter` among the certificates served, seconds since the epoch.
    public var earliestNotAfter: Int64?

    public init() {}
}
