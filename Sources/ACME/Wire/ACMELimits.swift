import Outbound

/// Every bound on what a CA (or anyone between us and it) can make the client hold. Each says why
/// it is as large as it is; the parsers refuse input past them instead of growing.
public enum ACMELimits {
    /// Largest response body read from a CA: JSON objects and certificate chains. Let's Encrypt's
    /// largest objects are orders of 100 names (about 15 KB) and chains of 2 to 4 certificates
    /// (under 10 KB); 256 KiB leaves room for a CA with longer chains or more names and still
    /// bounds what one transfer can make the client buffer.
    public static let maximumBodyBytes = 256 * 1024

    /// Largest response header section (all lines together). ACME responses carry a handful of
    /// fields (Replay-Nonce, Location, Link, Retry-After); 64 KiB is far above any real CA and
    /// caps a server that streams header lines forever.
    public static let maximumHeaderBytes = ResponseHeaders.maximumBytes

    /// Longest URL accepted from a CA (directory entries, Location, Link, authorization and
    /// challenge URLs). Real ACME URLs are under 200 bytes; 2048 is the common de-facto URL limit.
    public static let maximumURLLength = 2048

    /// Longest Replay-Nonce (RFC 8555 §6.5.1). Boulder's nonces are 43 characters, pebble's 22;
    /// 256 leaves room for any CA's design.
    public static let maximumNonceLength = 256

    /// Longest challenge token (RFC 8555 §8.3: base64url, at least 128 bits). Tokens are 43
    /// characters at Let's Encrypt and pebble; the token becomes a file name and a URL path
    /// segment, so it stays far under NAME_MAX (255).
    public static let maximumTokenLength = 128

    /// Most entries read from one JSON array (an order's authorizations or identifiers, an
    /// authorization's challenges, a problem's subproblems). Public CAs allow 100 names per order.
    public static let maximumArrayCount = 1000

    /// Longest string kept from a problem document's `detail` or `type`: it ends up in logs and
    /// on `/sites`, so a CA cannot fill them. Longer text is cut, not refused (the error still
    /// reaches the operator).
    public static let maximumProblemText = 1024

    /// Most certificates in an issued chain (leaf, intermediates, cross-signs). Real chains have
    /// 2 to 4; more is a broken or hostile CA.
    public static let maximumChainCertificates = 10

    /// Most Link header values looked at in one response (RFC 8288); ACME uses "up", "index" and
    /// a few "alternate" chains.
    public static let maximumLinks = 32

    /// Longest wait a Retry-After may impose (RFC 9110 §10.2.3), 7 days: honoured as said up to
    /// here, so a bogus year-long value cannot stop renewals of a 90-day certificate for good.
    public static let maximumRetryAfterSeconds: Int64 = 7 * 86_400

    /// Longest DNS name in an identifier (RFC 1035 §2.3.4: 253 characters in text form).
    public static let maximumNameLength = 253

    /// Most names in one order (and so in one certificate): Let's Encrypt's limit of 100. It also
    /// bounds the authorizations an order may list, each of which is fetched and polled.
    public static let maximumOrderNames = 100
}
