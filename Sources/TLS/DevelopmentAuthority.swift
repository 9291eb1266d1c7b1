import CAASAOpenSSL
import Foundation
import Glibc
import Synchronization

/// The development CA of a running server: made or reused at start for the hosts served then
/// (`DevelopmentCertificate`), it issues the default leaf at once and a leaf for each other host
/// on its first SNI, so that no leaf names more than one host (or a wildcard site's one pattern).
///
/// One leaf key serves every leaf (these are development certificates); signing one is tens of
/// microseconds. Issued leaves are kept in a bounded LRU keyed by host, each under an identity of
/// its own, so a handshake for a host already issued signs nothing (the TLS layer then finds its
/// context by that identity). Who may ask is the caller's business: `source(for:)` must only be
/// called for a host the config directory serves without a certificate of its own, never for an
/// arbitrary SNI name (serve's resolver looks the name up in the snapshot first).
///
/// The CA is never made again while serving: clients trust the one they were given. A host the CA
/// does not permit (added after start, outside its constraints) gets no leaf (`source(for:)` is
/// nil: the default one), and serve says so when the host is added.
public final class DevelopmentAuthority: @unchecked Sendable {
    // @unchecked: the OpenSSL objects are set in init and only read afterwards; signing, the one
    // use of them after init, runs under `signing`.

    /// Leaves kept at once: as many as the TLS layer keeps contexts (`TLSServer.maximumCachedContexts`),
    /// about 1 KB each. A host whose leaf was dropped gets a new one on its next handshake.
    public static let maximumCachedLeaves = TLSServer.maximumCachedContexts
    /// A leaf with less than this left is issued again on its next handshake (half its life), so a
    /// server running for months keeps presenting valid leaves while the CA lasts.
    public static let reissueMargin = Int64(DevelopmentCertificate.leafDays / 2) * 86_400

    /// The CA's facts and the default leaf (for connections without SNI, and unknown names).
    public let issued: DevelopmentCertificate.Issued
    /// The DNS subtrees the CA permits, read from the CA itself (a reused CA may permit more than
    /// the names served at start).
    public let permitted: Set<String>
    /// Lower-case names the default leaf covers: those hosts need no leaf of their own.
    private let defaultNames: CertificateNames
    private let keys: Keys
    private let leafKeyPEM: [UInt8]
    /// Serialises signing: the CA's X509 and key are shared (OpenSSL caches a certificate's
    /// extensions on first use, a write).
    private let signing = Mutex(())
    private let leaves: Mutex<LRUCache<Leaf>>
    private let issuedCount = Atomic<Int>(0)

    /// One issued leaf.
    private struct Leaf {
        var source: TLSServer.CertificateSource
        var notAfter: Int64
    }

    /// The CA's certificate and key and the one leaf key, freed together.
    private final class Keys: @unchecked Sendable {
        let authorityCertificate: OpaquePointer
        let authorityKey: OpaquePointer
        let leafKey: OpaquePointer

        init(authority: (OpaquePointer, OpaquePointer), leafKey: OpaquePointer) {
            (authorityCertificate, authorityKey) = authority
            self.leafKey = leafKey
        }

        deinit {
            X509_free(authorityCertificate)
            EVP_PKEY_free(authorityKey)
            EVP_PKEY_free(leafKey)
        }
    }

    /// Makes (or reuses) the CA under `directory` for `hosts`, and writes the default leaf there
    /// (`cert.pem`, `key.pem`). `cacheCapacity`: leaves kept at once (tests use a small one).
    public init(directory: String, hosts: [String], cacheCapacity: Int = maximumCachedLeaves) throws(TLSError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw TLSError("cannot create \(directory): \(error.localizedDescription)")
        }
        // Opened once without following a final symbolic link, and every file read and written
        // relative to it: under --user the state directory above it belongs to that user
        // (giveOwnership(ofState:) in Sources/aasad/Privileges.swift), who could otherwise put a
        // link there and have the next start, as root, write cert.pem and key.pem where it leads.
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else {
            throw TLSError("cannot open \(directory): \(String(cString: strerror(errno))) (a symbolic link is not followed)")
        }
        defer { close(folder) }
        let caPath = directory + "/ca.pem"
        let constraints = DevelopmentCertificate.constraints(for: hosts)
        var authority: (OpaquePointer, OpaquePointer)?
        if let existing = try DevelopmentCertificate.loadAuthority(in: folder) {
            // Kept while it permits every name wanted now (a subtree permits the names under it).
            let permits = Set(DevelopmentCertificate.permittedDNSNames(of: existing.0))
            if DevelopmentCertificate.isCurrent(existing.0),
                constraints.permitted.allSatisfy({ DevelopmentCertificate.permits(permits, $0) })
            {
                authority = existing
            } else {
                X509_free(existing.0)
                EVP_PKEY_free(existing.1)
            }
        }
        let created = authority == nil
        let made: (OpaquePointer, OpaquePointer)
        if let authority {
            made = authority
        } else {
            made = try DevelopmentCertificate.makeAuthority(in: folder, directory, permitted: constraints.permitted)
        }
        guard let leafKey = CAASAOpenSSL_EVP_EC_gen("P-256") else {
            X509_free(made.0)
            EVP_PKEY_free(made.1)
            throw TLSError("cannot make a key: \(TLSError.openSSLReasons())")
        }
        let keys = Keys(authority: made, leafKey: leafKey)
        let permitted = Set(DevelopmentCertificate.permittedDNSNames(of: keys.authorityCertificate))
        let keyPEM = try DevelopmentCertificate.pem { PEM_write_bio_PrivateKey($0, leafKey, nil, nil, 0, nil, nil) }
        var names = ["localhost"]
        if hosts.count <= DevelopmentCertificate.maximumDefaultLeafHosts {
            names += hosts.map { $0.lowercased() }.filter { DevelopmentCertificate.permits(permitted, $0) }
        }
        let leaf = try Self.makeLeaf(names: Array(Set(names)).sorted(), loopback: true, keys: keys, seconds: nil)
        defer { X509_free(leaf) }
        // Checked as a client would (validity, name constraints): a CA that does not accept its own
        // leaf would make every handshake fail.
        try DevelopmentCertificate.verify(leaf, authority: keys.authorityCertificate)
        let chain = try DevelopmentCertificate.pem { PEM_write_bio_X509($0, leaf) }
        try DevelopmentCertificate.write(chain, in: folder, directory, "cert.pem", mode: 0o644)
        try DevelopmentCertificate.write(keyPEM, in: folder, directory, "key.pem", mode: 0o600)
        let authorityInfo = try CertificateInfo(x509: keys.authorityCertificate)
        let leafInfo = try CertificateInfo(x509: leaf)
        self.keys = keys
        self.permitted = permitted
        leafKeyPEM = keyPEM
        defaultNames = CertificateNames(leafInfo.dnsNames)
        leaves = Mutex(LRUCache(capacity: max(cacheCapacity, 1)))
        issued = DevelopmentCertificate.Issued(
            chainPEM: chain, keyPEM: keyPEM, authorityPath: caPath, authorityCreated: created, permittedNames: permitted.sorted(),
            omittedNames: constraints.omitted, authorityNotAfter: authorityInfo.notAfter, leafNotAfter: leafInfo.notAfter)
    }

    /// Leaves issued since start (the default one not counted).
    public var leavesIssued: Int { issuedCount.load(ordering: .relaxed) }

    /// Whether the CA accepts a leaf for `host` (its name constraints).
    public func permits(_ host: String) -> Bool { DevelopmentCertificate.permits(permitted, host) }

    /// Whether the default leaf already names `host` (a small config's hosts, `localhost`).
    public func defaultCovers(_ host: String) -> Bool { defaultNames.dnsNames.contains(host) }

    /// The leaf for `host`, a served host name (lower case) or a wildcard site's `*.suffix`: nil
    /// when the default leaf names it, or when the CA does not permit it (then the default is
    /// presented, which clients refuse for the name). A leaf issued before is returned as it is
    /// (no signing) until `reissueMargin` before its end. Runs in the TLS handshake: the first
    /// time for a host it signs one certificate (tens of microseconds), never more.
    public func source(for host: String) -> TLSServer.CertificateSource? {
        let now = Int64(time(nil))
        if let leaf = leaves.withLock({ $0.value(for: host) }), isFresh(leaf, now: now) { return leaf.source }
        guard !defaultCovers(host), Self.isPlainHostName(host), permits(host) else { return nil }
        // Never past the CA's end (a leaf outliving its CA fails verification anyway).
        let seconds = Int(min(Int64(DevelopmentCertificate.leafDays) * 86_400, issued.authorityNotAfter - now))
        guard seconds > 0 else { return nil }
        let made: Leaf? = signing.withLock { _ in
            // Whatever fails, the thread's OpenSSL error queue is left empty: this runs on a
            // serving thread, where a stale error would make the next SSL_get_error lie.
            defer { ERR_clear_error() }
            // Another thread may have issued it while this one waited.
            if let raced = leaves.withLock({ $0.value(for: host) }), isFresh(raced, now: now) { return raced }
            guard let leaf = try? Self.makeLeaf(names: [host], loopback: false, keys: keys, seconds: seconds) else { return nil }
            defer { X509_free(leaf) }
            guard let chain = try? DevelopmentCertificate.pem({ PEM_write_bio_X509($0, leaf) }) else { return nil }
            // A leaf issued again is another context: its identity carries the number.
            let number = issuedCount.add(1, ordering: .relaxed).newValue
            return Leaf(
                source: TLSServer.CertificateSource(
                    identity: "development:\(host):\(number)", chainPEM: chain, keyPEM: leafKeyPEM,
                    label: "development certificate for \(host)"),
                notAfter: now + Int64(seconds))
        }
        guard let made else { return nil }
        leaves.withLock { _ = $0.insert(made, for: host) }
        return made.source
    }

    /// Whether a cached leaf is served as it is: until `reissueMargin` before its end, or, for a
    /// leaf that already ends with the CA (nearer its end than the margin, a new one could not
    /// end later), until its end. Without the second rule every handshake in the CA's last
    /// `reissueMargin` would sign a leaf and build a context.
    private func isFresh(_ leaf: Leaf, now: Int64) -> Bool {
        leaf.notAfter - now > Self.reissueMargin || (leaf.notAfter >= issued.authorityNotAfter && leaf.notAfter > now)
    }

    /// A host name as the config directory stores them (lower-case letters, digits, `-`, `_`,
    /// dots, an optional leading `*.`), at most 253 bytes: nothing OpenSSL's extension syntax
    /// (`DNS:a,DNS:b`) would read as more than one name.
    static func isPlainHostName(_ host: String) -> Bool {
        var bytes = Substring(host).utf8[...]
        if bytes.starts(with: "*.".utf8) { bytes = bytes.dropFirst(2) }
        guard !bytes.isEmpty, host.utf8.count <= 253 else { return false }
        return bytes.allSatisfy { b in
            (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x2E || b == 0x5F
        }
    }

    /// A leaf for `names` (and 127.0.0.1 and ::1 when `loopback`), signed by the CA, with the one
    /// leaf key; `seconds` of validity (nil: `leafDays`).
    private static func makeLeaf(names: [String], loopback: Bool, keys: Keys, seconds: Int?) throws(TLSError) -> OpaquePointer {
        let san = (names.map { "DNS:\($0)" } + (loopback ? ["IP:127.0.0.1", "IP:::1"] : [])).joined(separator: ",")
        return try DevelopmentCertificate.certificate(
            commonName: names.first { !$0.hasPrefix("*") } ?? names.first ?? "localhost", publicKey: keys.leafKey,
            issuer: keys.authorityCertificate, signingKey: keys.authorityKey,
            seconds: seconds ?? DevelopmentCertificate.leafDays * 86_400,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, san), (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
    }
}
