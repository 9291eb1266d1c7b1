import HTTPCore
import Hashing

/// A certificate chain and its private key, as PEM bytes read from a `tls/` directory.
public struct CertificateFiles: Sendable, Equatable {
    /// The directory they came from, relative to the config directory (e.g. `sites/a.com/tls`).
    public var directory: String
    /// Leaf first, then intermediates.
    public let chainPEM: [UInt8]
    public let keyPEM: [UInt8]
    /// Identifies the pair by content: sites with the same bytes share one TLS context. Kept,
    /// not computed on use: the SNI callback asks for it on every handshake (a SHA-256 of both
    /// files was 71,000 instructions of a resumed handshake's 2.4 million).
    public let identity: String

    /// Largest PEM file read: a chain of a few certificates is under 10 KB.
    public static let maximumFileSize = 1 << 20

    public init(directory: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        self.directory = directory
        self.chainPEM = chainPEM
        self.keyPEM = keyPEM
        identity = Hex.string(Digest.sha256(chainPEM + [0] + keyPEM))
    }
}
