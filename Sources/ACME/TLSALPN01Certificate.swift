import CAASAOpenSSL
import Hashing
import TLS

/// The fixed parts of a TLS-ALPN-01 challenge certificate (RFC 8737).
public enum TLSALPN01 {
    /// Validity after now. The validation server ignores the dates (RFC 8737 §3 puts no rule on
    /// them); one day outlives any authorization `issue` waits for (its polling bound is minutes),
    /// and a certificate that leaked stays of little use.
    public static let validitySeconds = 86_400
    /// Start of validity before now: covers clock skew between replicas that share the answer.
    public static let backdateSeconds = 3_600
    /// Longest key authorization accepted: a token (`ACMELimits.maximumTokenLength`), a dot and a
    /// 43-character thumbprint, with room to spare; it is hashed, never stored in the certificate.
    public static let maximumKeyAuthorizationLength = 512
    /// id-pe-acmeIdentifier (RFC 8737 §6.1).
    public static let acmeIdentifierOID = "1.3.6.1.5.5.7.1.31"
}

/// The self-signed certificate that answers a TLS-ALPN-01 challenge (RFC 8737 §3), with a fresh
/// P-256 key: subjectAltName holds `name` as its one dNSName, and the critical acmeIdentifier
/// extension holds the SHA-256 digest of the key authorization as a DER OCTET STRING (its
/// extnValue is `04 20` and the 32 bytes). Served to a client that offers only ALPN `acme-tls/1`
/// with SNI `name`. `name` is an authorization's identifier: never a wildcard (RFC 8737 §3 forbids
/// TLS-ALPN-01 for those).
public func tlsALPN01Certificate(name: String, keyAuthorization: String) throws(ACMEError) -> (chainPEM: [UInt8], keyPEM: [UInt8]) {
    let name = try OrderNames.normalized(name)
    guard !OrderNames.isWildcard(name) else { throw .request("tls-alpn-01 cannot validate the wildcard \(name) (RFC 8737 §3)") }
    guard !keyAuthorization.isEmpty, keyAuthorization.utf8.count <= TLSALPN01.maximumKeyAuthorizationLength else {
        throw .request("a key authorization is 1 to \(TLSALPN01.maximumKeyAuthorizationLength) bytes")
    }
    let key = try LeafKey.generate()
    guard let x = X509_new() else { throw .crypto("cannot make a certificate: \(TLSError.openSSLReasons())") }
    defer { X509_free(x) }
    var serial = [UInt8](repeating: 0, count: 8)
    guard RAND_bytes(&serial, Int32(serial.count)) == 1 else { throw .crypto("no random bytes: \(TLSError.openSSLReasons())") }
    // A positive 63-bit serial (RFC 5280 §4.1.2.2: positive, at most 20 octets).
    let serialValue = serial.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 1
    guard X509_set_version(x, 2) == 1,
        ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serialValue) == 1,
        X509_gmtime_adj(X509_getm_notBefore(x), -TLSALPN01.backdateSeconds) != nil,
        X509_gmtime_adj(X509_getm_notAfter(x), TLSALPN01.validitySeconds) != nil,
        X509_set_pubkey(x, key.key) == 1
    else { throw .crypto("cannot fill the certificate: \(TLSError.openSSLReasons())") }
    let subject = X509_get_subject_name(x)
    guard X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, "aasad ACME TLS-ALPN-01", -1, -1, 0) == 1,
        X509_set_issuer_name(x, subject) == 1
    else { throw .crypto("cannot name the certificate: \(TLSError.openSSLReasons())") }
    // `name` passed OrderNames: no "," or ":" to split the configuration syntax.
    guard let san = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, "DNS:" + name) else {
        throw .crypto("cannot make the subjectAltName: \(TLSError.openSSLReasons())")
    }
    defer { X509_EXTENSION_free(san) }
    guard X509_add_ext(x, san, -1) == 1 else { throw .crypto("cannot add the subjectAltName: \(TLSError.openSSLReasons())") }
    try addAcmeIdentifier(to: x, digest: Digest.sha256(keyAuthorization.utf8))
    guard X509_sign(x, key.key, EVP_sha256()) > 0 else { throw .crypto("cannot sign the certificate: \(TLSError.openSSLReasons())") }
    return (try pemText { PEM_write_bio_X509($0, x) }, try key.pem())
}

/// RFC 8737 §3: `Authorization ::= OCTET STRING (SIZE (32))`, critical. The extension's extnValue
/// (itself an OCTET STRING) wraps the DER of that value: `04 20` and the digest.
private func addAcmeIdentifier(to x: OpaquePointer, digest: [UInt8]) throws(ACMEError) {
    guard let oid = OBJ_txt2obj(TLSALPN01.acmeIdentifierOID, 1) else {
        throw .crypto("cannot make the acmeIdentifier OID: \(TLSError.openSSLReasons())")
    }
    defer { ASN1_OBJECT_free(oid) }
    guard let value = ASN1_OCTET_STRING_new() else { throw .crypto("cannot allocate: \(TLSError.openSSLReasons())") }
    defer { ASN1_OCTET_STRING_free(value) }
    let encoded: [UInt8] = [0x04, UInt8(digest.count)] + digest
    guard ASN1_OCTET_STRING_set(value, encoded, Int32(encoded.count)) == 1,
        let ext = X509_EXTENSION_create_by_OBJ(nil, oid, 1, value)
    else { throw .crypto("cannot make the acmeIdentifier extension: \(TLSError.openSSLReasons())") }
    defer { X509_EXTENSION_free(ext) }
    guard X509_add_ext(x, ext, -1) == 1 else { throw .crypto("cannot add the acmeIdentifier extension: \(TLSError.openSSLReasons())") }
}
