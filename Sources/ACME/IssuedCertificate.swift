import CAASAOpenSSL
import TLS

/// A certificate the CA issued for an order, checked before anything is stored: the chain as
/// stored (PEM, leaf first), the leaf's private key, and what the issuance loop needs to plan
/// the renewal.
public struct IssuedCertificate: Sendable, Equatable {
    /// The chain as `CertificateChain` re-encoded it: PEM certificates only, leaf first.
    public var chainPEM: [UInt8]
    /// The leaf's private key, unencrypted PKCS#8 PEM (`LeafKey.pem`).
    public var keyPEM: [UInt8]
    /// The names requested and found in the leaf's subjectAltName, normalised, in request order.
    public var names: [String]
    /// The leaf's validity period, seconds since the epoch.
    public var notBefore: Int64
    public var notAfter: Int64
    /// Where the CA serves the certificate (RFC 8555 §7.4.2): kept for revocation and ARI.
    public var certificateURL: ACMEURL

    /// Most a leaf's notBefore may lie ahead of the local clock. CAs backdate notBefore (Let's
    /// Encrypt by an hour), so a start in the future means the CA's clock or ours is off; within
    /// an hour the certificate is kept (clients accept it soon), beyond it clients would refuse
    /// the certificate for longer than a renewal takes, so it is not stored.
    public static let maximumNotBeforeSkewSeconds: Int64 = 3_600

    public init(chainPEM: [UInt8], keyPEM: [UInt8], names: [String], notBefore: Int64, notAfter: Int64, certificateURL: ACMEURL) {
        self.chainPEM = chainPEM
        self.keyPEM = keyPEM
        self.names = names
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.certificateURL = certificateURL
    }

    /// Checks what the CA returned for an order of `names` finalized with `key`'s CSR, at `now`
    /// (seconds since the epoch), and returns what may be stored. A CA that is broken, hostile or
    /// answering another order cannot get a certificate into the server through this: the chain
    /// holds 1 to `ACMELimits.maximumChainCertificates` certificates (`CertificateChain`); the
    /// leaf is an end-entity certificate (not a CA) whose public key is `key`'s; its
    /// subjectAltName dNSNames are exactly the requested names (a missing name is refused, and so
    /// is any other name: a wildcard or a name nobody asked for is a certificate the operator did
    /// not order); and it is valid now (notBefore before notAfter, notAfter in the future,
    /// notBefore at most `maximumNotBeforeSkewSeconds` ahead).
    public static func checked(
        chain: CertificateChain, key: LeafKey, names requested: [String], certificateURL: ACMEURL, now: Int64
    ) throws(ACMEError) -> IssuedCertificate {
        let names = try OrderNames.normalized(requested)
        guard let leafDER = chain.certificates.first, chain.certificates.count <= ACMELimits.maximumChainCertificates else {
            throw .malformed(what: "certificate chain", reason: "it holds \(chain.certificates.count) certificates")
        }
        guard let leaf = x509(der: leafDER) else { throw .malformed(what: "certificate", reason: "the leaf is not DER X.509") }
        defer { X509_free(leaf) }
        guard let leafKey = X509_get0_pubkey(leaf), key.isPublicKey(of: leafKey) else {
            throw .malformed(what: "certificate", reason: "the leaf's public key is not the key of the CSR")
        }
        // X509_get_extension_flags caches the decoded extensions; EXFLAG_CA is basicConstraints cA.
        guard X509_get_extension_flags(leaf) & UInt32(EXFLAG_CA) == 0 else {
            throw .malformed(what: "certificate", reason: "the leaf is a CA certificate")
        }
        let info: CertificateInfo
        do {
            info = try CertificateInfo(leafPEM: CertificateChain.encode(leafDER))
        } catch {
            throw .malformed(what: "certificate", reason: error.reason)
        }
        let present = Set(info.dnsNames)
        if let missing = names.first(where: { !present.contains($0) }) {
            throw .malformed(what: "certificate", reason: "the leaf does not name \(missing)")
        }
        let wanted = Set(names)
        if let extra = info.dnsNames.first(where: { !wanted.contains($0) }) {
            throw .malformed(what: "certificate", reason: "the leaf names \(ACMEProblem.clean(extra)), which was not requested")
        }
        guard info.notBefore < info.notAfter else {
            throw .malformed(what: "certificate", reason: "its validity ends (\(info.notAfter)) before it starts (\(info.notBefore))")
        }
        guard info.notAfter > now else { throw .malformed(what: "certificate", reason: "it expired at \(info.notAfter)") }
        guard info.notBefore <= now + maximumNotBeforeSkewSeconds else {
            throw .malformed(what: "certificate", reason: "it is valid only from \(info.notBefore), more than an hour from now (\(now))")
        }
        return IssuedCertificate(
            chainPEM: chain.pem, keyPEM: try key.pem(), names: names, notBefore: info.notBefore, notAfter: info.notAfter,
            certificateURL: certificateURL)
    }
}
