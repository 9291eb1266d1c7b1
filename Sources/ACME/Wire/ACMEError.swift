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

    public var description: String {
        switch self {
        case .malformed(let what, let reason): "the CA's \(what) is malformed: \(reason)"
        case .problem(let problem, let status): "the CA refused (HTTP \(status)): \(problem)"
        case .transport(let text): "no answer from the CA: \(text)"
        case .crypto(let text): "key operation failed: \(text)"
        case .storage(let text): "ACME storage: \(text)"
        case .request(let text): "cannot ask the CA: \(text)"
        }
    }
}
