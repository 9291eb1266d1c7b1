import Hashing
import SafeText

/// What answers a CA's challenges while an order is issued (`ACMEClient.issue`): the server's
/// HTTP-01 and TLS-ALPN-01 answers in the storage directory, a DNS hook for dns-01, a test's fake.
///
/// `present` is called for one pending authorization's chosen challenge before the CA is told to
/// validate it; `cleanUp` after the authorization is settled, whatever the outcome (also when
/// `issue` fails later or `present` itself threw). Several challenges may be presented at once
/// (one per name of the order), and one name may get two dns-01 values at once when an order
/// holds both `example.com` and `*.example.com` (the same TXT record name, RFC 8555 §8.4): the
/// solver keeps each value until its own `cleanUp`.
public protocol ChallengeSolver: Sendable {
    /// The challenge types this solver answers, most preferred first (`ChallengeType`); the
    /// first one the CA offers for a name is used.
    var types: [String] { get }

    /// Makes the answer available. `name` is the authorization's identifier: the name itself,
    /// or for a wildcard `*.example.com` the base name `example.com` (RFC 8555 §7.1.4), whose
    /// dns-01 record is `_acme-challenge.example.com` (`dns01RecordName`). The answer is, by
    /// type: http-01 the key authorization at `http01Path(token:)` (RFC 8555 §8.3); dns-01
    /// `dns01TXTValue(keyAuthorization:)` in a TXT record (§8.4); tls-alpn-01 the certificate of
    /// `tlsALPN01Certificate(name:keyAuthorization:)` for ALPN `acme-tls/1` (RFC 8737 §3).
    func present(type: String, name: String, token: String, keyAuthorization: String) throws(ACMEError)

    /// Removes the answer `present` made. Failures are the solver's to log: the order's outcome
    /// does not depend on them.
    func cleanUp(type: String, name: String, token: String)
}

/// The challenge types aasad knows (RFC 8555 §8.3, §8.4; RFC 8737).
public enum ChallengeType {
    public static let http01 = "http-01"
    public static let dns01 = "dns-01"
    public static let tlsALPN01 = "tls-alpn-01"
    /// The ALPN protocol a TLS-ALPN-01 validation negotiates (RFC 8737 §6.2).
    public static let tlsALPNProtocol = "acme-tls/1"
}

/// The TXT record value of a dns-01 answer: base64url(SHA-256(key authorization)), 43 characters
/// (RFC 8555 §8.4).
public func dns01TXTValue(keyAuthorization: String) -> String {
    Base64URL.encode(Digest.sha256(keyAuthorization.utf8))
}

/// The name of a dns-01 TXT record for an authorization's name (RFC 8555 §8.4).
public func dns01RecordName(_ name: String) -> String { "_acme-challenge." + name }

/// The path an http-01 answer is served at, on port 80 of the name (RFC 8555 §8.3). The token is
/// base64url (checked when the challenge was read), so it is one safe path segment.
public func http01Path(token: String) -> String { "/.well-known/acme-challenge/" + token }
