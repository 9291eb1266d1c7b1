/// Why an ACME operation failed, in words an operator can act on.
public enum ACMEError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The CA's bytes did not parse or broke a rule (RFC 8555's, or a bound in `ACMELimits`):
    /// what was read, and why it was refused. Also an issued certificate that fails the checks
    /// made before it is stored (`IssuedCertificate.checked`).
    case malformed(what: String, reason: String)
    /// The CA answered with a problem document (RFC 8555 §6.7) and this HTTP status.
    case problem(ACMEProblem, status: Int)
    /// The request never got an answer: connection, TLS, timeout or size limit (libcurl's words).
    case transport(String)
    /// A key or signature operation failed (OpenSSL's words).
    case crypto(String)
    /// The storage directory refused a read or a write.
    case storage(String)
    /// What the caller asked cannot be asked of a CA (a name that is not a DNS name, too many
    /// names); nothing was sent.
    case request(String)
    /// The CA found a challenge, an authorization or an order invalid (RFC 8555 §7.1.6): what,
    /// and the CA's problem document when it gave one (the challenge's error names what the
    /// CA's validation saw: the operator's lead to a fix).
    case invalid(what: String, problem: ACMEProblem?)
    /// The CA kept an authorization or an order unfinished past the polling bounds
    /// (`ACMEPolling`): what was awaited and its last status, and the CA's Retry-After (seconds,
    /// capped) when it asked for a longer wait than the bounds allow, for the back-off.
    case timedOut(what: String, retryAfter: Int64?)
    /// None of the challenges the CA offers for a name is one the solver answers (a wildcard
    /// name takes dns-01 only, RFC 8555 §7.1.3).
    case noChallenge(name: String, offered: [String], answerable: [String])

    /// The failure in words a site's tenant may read: what the CA said about the order (its
    /// problem document, a challenge it found invalid, a challenge it does not offer, a wait),
    /// never what only the operator may see (storage paths, a DNS hook's command line and
    /// output, libcurl's and OpenSSL's words about this machine).
    public var tenantSummary: String {
        switch self {
        case .problem, .invalid, .timedOut, .noChallenge: description
        case .malformed: "the CA's answer was malformed"
        case .transport: "no answer from the CA"
        case .request(let text): "cannot ask the CA: \(text)"
        case .crypto, .storage: Self.serverSideSummary
        }
    }

    /// What a tenant reads when the cause is on the server's side.
    public static let serverSideSummary = "the order failed on the server's side; its operator finds the reason in the server's log"

    public var description: String {
        switch self {
        case .malformed(let what, let reason): "the CA's \(what) is malformed: \(reason)"
        case .problem(let problem, let status): "the CA refused (HTTP \(status)): \(problem)"
        case .transport(let text): "no answer from the CA: \(text)"
        case .crypto(let text): "key operation failed: \(text)"
        case .storage(let text): "ACME storage: \(text)"
        case .request(let text): "cannot ask the CA: \(text)"
        case .invalid(let what, let problem): "the CA found \(what) invalid" + (problem.map { ": \($0)" } ?? "")
        case .timedOut(let what, let retryAfter):
            "the CA did not finish \(what) within the polling bounds" + (retryAfter.map { " (it asked to wait \($0) s)" } ?? "")
        case .noChallenge(let name, let offered, let answerable):
            "no challenge for \(name) can be answered: the CA offers \(offered.joined(separator: ", ")), "
                + (answerable.isEmpty ? "aasad answers none it may use here" : "aasad answers \(answerable.joined(separator: ", "))")
                + (name.hasPrefix("*.") ? " (a wildcard name is validated by dns-01 only)" : "")
        }
    }
}

extension ACMEError {
    /// Problem types that are the CA's verdict on the name itself (RFC 8555 §6.7): what it found
    /// validating it, its policy on it, its limits. Any other type (the account, the request,
    /// the CA's own error, a type that is not ACME's) may not meet another replica's order.
    static let nameVerdictTypes: Set<String> = [
        "rejectedIdentifier", "unsupportedIdentifier", "caa", "dns", "connection", "incorrectResponse", "tls", "unauthorized",
        "compound", "rateLimited",
    ]

    /// Whether this failure is the CA's verdict on the name, which any replica's order would
    /// meet (so replicas share its back-off, ReplicaRecords.swift): a problem document of a
    /// `nameVerdictTypes` type with a 4xx status (a 5xx is the CA failing, not judging), an
    /// authorization, challenge or order found invalid (§7.1.6) for such a problem or none, a validation kept unfinished
    /// past the polling bounds, or any failure with a Retry-After (§6.6). The rest (no answer,
    /// the CA's own error, a request that could not be made, the account, this replica's key,
    /// storage or DNS hook, a CA answer that did not parse, no challenge this replica answers)
    /// may be this replica's alone.
    var isVerdictOnName: Bool {
        if retryAfter != nil { return true }
        switch self {
        case .problem(let problem, let status):
            return (400...499).contains(status) && Self.nameVerdictTypes.contains(problem.acmeType ?? "")
        // An object found invalid with a problem that is not a verdict on the name (an order
        // refused at finalize for `badCSR`, the CA's `serverInternal`) is this replica's alone.
        case .invalid(_, let problem?): return Self.nameVerdictTypes.contains(problem.acmeType ?? "")
        case .invalid, .timedOut: return true
        default: return false
        }
    }

    /// The CA's Retry-After for this failure, when it sent one.
    var retryAfter: Int64? {
        switch self {
        case .problem(let problem, _): problem.retryAfter
        case .timedOut(_, let retryAfter): retryAfter
        default: nil
        }
    }
}
