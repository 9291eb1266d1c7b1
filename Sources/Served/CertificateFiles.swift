import HTTPCore
import Hashing

/// A certificate chain and its private key, as PEM bytes read from a `tls/` directory. 72 bytes
/// inline; a served site holds one behind a reference (`ServedSite.certificate`), so that a site
/// without a pair of its own pays 8.
public struct CertificateFiles: Sendable, Equatable {
    /// The directory they came from, relative to the config directory (e.g. `sites/a.com/tls`).
    public var directory: String {
        switch place {
        case .site(let name): "sites/" + name + "/tls"
        case .path(let path): path
        }
    }
    /// Where they were read: a site's `tls/` by the site's name under `sites/`, which shares the
    /// storage of the name the registry keeps for the site (a path of its own was 64 bytes a
    /// pair, 3.2 MB at 50,000 pairs: heaptrack in docs/benchmarks.md); any other folder by its
    /// path.
    private let place: Place
    private enum Place: Equatable {
        case site(String)
        case path(String)
    }
    /// Leaf first, then intermediates.
    public let chainPEM: [UInt8]
    public let keyPEM: [UInt8]
    /// The SHA-256 of chain, a zero byte and key, kept inline: the SNI callback asks for the
    /// pair's identity on every handshake (hashing both files was 71,000 instructions of a resumed
    /// handshake's 2.4 million), and a 64-character string of its own was 112 bytes a pair
    /// (5.6 MB at 50,000 pairs, heaptrack in docs/benchmarks.md) where this is 32.
    private let digest: (UInt64, UInt64, UInt64, UInt64)

    /// Identifies the pair by content: sites with the same bytes share one TLS context. The
    /// digest in lower-case hex, written on each use (about 160 ns: once a handshake for a site
    /// with its own pair, against a handshake's hundreds of microseconds).
    public var identity: String { withUnsafeBytes(of: digest) { Hex.string($0) } }

    /// The identity's 32 bytes, for a lookup that needs no hex (a restart looks up every pair's
    /// verdict).
    public func withIdentityBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try withUnsafeBytes(of: digest, body)
    }

    /// Largest PEM file read: a chain of a few certificates is under 10 KB.
    public static let maximumFileSize = 1 << 20

    /// The pair read from `directory` (relative to the config directory).
    public init(directory: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        self.init(place: .path(directory), chainPEM: chainPEM, keyPEM: keyPEM)
    }

    /// The pair read from `sites/NAME/tls`.
    public init(siteNamed name: String, chainPEM: [UInt8], keyPEM: [UInt8]) {
        self.init(place: .site(name), chainPEM: chainPEM, keyPEM: keyPEM)
    }

    private init(place: Place, chainPEM: [UInt8], keyPEM: [UInt8]) {
        self.place = place
        self.chainPEM = chainPEM
        self.keyPEM = keyPEM
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let bytes = Digest.sha256(chainPEM + [0] + keyPEM)
        withUnsafeMutableBytes(of: &digest) { $0.copyBytes(from: bytes) }
        self.digest = digest
    }

    /// Whether `other` holds the same bytes (the same identity), without writing either in hex.
    public func hasSameBytes(as other: CertificateFiles) -> Bool { digest == other.digest }

    /// The same directory and bytes: digests first (most unequal pairs differ there), then the
    /// directory (by name when both are a site's), then the bytes themselves.
    public static func == (a: CertificateFiles, b: CertificateFiles) -> Bool {
        guard a.digest == b.digest else { return false }
        let samePlace: Bool
        switch (a.place, b.place) {
        case (.site(let one), .site(let other)): samePlace = one == other
        default: samePlace = a.directory == b.directory
        }
        return samePlace && a.chainPEM == b.chainPEM && a.keyPEM == b.keyPEM
    }
}
