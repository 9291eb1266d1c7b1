import CAASAOpenSSL
import Foundation
import Glibc

/// A local certificate authority and a leaf for the configured hosts, made with OpenSSL in-process
/// when a site has no certificate, so the example config runs on a fresh machine.
///
/// The CA is kept in the state directory and reused, so trusting it once (`curl --cacert
/// STATE/dev-tls/ca.pem`) lasts while the served names stay the same; the leaf is issued again at
/// every start for the current hosts. A CA key can be stolen from a developer's machine, so the CA
/// can sign for nothing but what it is for: it carries X.509 name constraints (RFC 5280 §4.2.1.10)
/// permitting only the served names (and every name under them) plus loopback, and lives 90 days.
/// It is made again when it does not permit a name now served, when it is near its end, and when
/// it is an older CA without constraints.
public enum DevelopmentCertificate {
    /// Leaf validity. Short, since it is re-issued at every start.
    public static let leafDays = 30
    /// CA validity: a developer trusts it once a quarter at most.
    public static let authorityDays = 90
    /// A CA with fewer days left than this is made again, so a leaf issued now never outlives it.
    public static let authorityRenewalDays = leafDays + 1
    /// Top-level names that exist nowhere on the public internet (RFC 6761 §6, RFC 8375): a CA
    /// constrained to one of them may permit the whole name, so that a new `.localhost` site does
    /// not need a new CA. A public name is permitted exactly (with the names under it).
    public static let reservedTopLevelNames: Set<String> = ["localhost", "test", "example", "invalid", "home.arpa"]

    public struct Issued: Sendable {
        public var chainPEM: [UInt8]
        public var keyPEM: [UInt8]
        /// The CA certificate to give clients (`curl --cacert`).
        public var authorityPath: String
        /// Whether the CA was made now (clients that trusted an earlier one must trust this one).
        public var authorityCreated: Bool
        /// The DNS subtrees the CA permits.
        public var permittedNames: [String]
        /// When the CA and the leaf end, seconds since the epoch.
        public var authorityNotAfter: Int64
        public var leafNotAfter: Int64
    }

    /// The DNS subtrees a CA for `hosts` permits: `localhost`, each reserved top-level name a host
    /// is under, and every other host itself (without a wildcard's `*.`).
    public static func permittedNames(for hosts: [String]) -> [String] {
        var names: Set<String> = ["localhost"]
        for host in hosts {
            var name = host.lowercased()
            if name.hasPrefix("*.") { name.removeFirst(2) }
            if name.hasSuffix(".") { name.removeLast() }
            guard !name.isEmpty else { continue }
            if let reserved = reservedTopLevelNames.first(where: { name == $0 || name.hasSuffix("." + $0) }) {
                names.insert(reserved)
            } else {
                names.insert(name)
            }
        }
        // A name under another permitted one adds nothing (a subtree holds every name under it).
        return names.filter { name in !names.contains { $0 != name && name.hasSuffix("." + $0) } }.sorted()
    }

    /// Makes (or reuses) the CA under `directory` and issues a leaf for `hosts` (wildcards allowed),
    /// plus `localhost`, 127.0.0.1 and ::1.
    public static func issue(directory: String, hosts: [String]) throws(TLSError) -> Issued {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw TLSError("cannot create \(directory): \(error.localizedDescription)")
        }
        let caPath = directory + "/ca.pem"
        let caKeyPath = directory + "/ca-key.pem"
        let permitted = permittedNames(for: hosts)
        if let existing = try loadAuthority(caPath, caKeyPath) {
            if isCurrent(existing.0) {
                // Freed by issue; a CA that does not permit a served name fails its verify.
                if let issued = try? issue(
                    hosts: hosts, authority: existing, directory: directory, caPath: caPath, created: false, permitted: permitted)
                {
                    return issued
                }
            } else {
                X509_free(existing.0)
                EVP_PKEY_free(existing.1)
            }
        }
        let authority = try makeAuthority(caPath, caKeyPath, permitted: permitted)
        return try issue(hosts: hosts, authority: authority, directory: directory, caPath: caPath, created: true, permitted: permitted)
    }

    /// Issues the leaf and checks it against the CA as a client would (validity, name
    /// constraints); takes ownership of `authority`.
    private static func issue(
        hosts: [String], authority: (OpaquePointer, OpaquePointer), directory: String, caPath: String, created: Bool, permitted: [String]
    ) throws(TLSError) -> Issued {
        let (caCert, caKey) = authority
        defer {
            X509_free(caCert)
            EVP_PKEY_free(caKey)
        }
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else { throw TLSError("cannot make a key: \(TLSError.openSSLReasons())") }
        defer { EVP_PKEY_free(key) }
        var names = ["localhost"] + hosts.filter { $0 != "localhost" }
        names = Array(Set(names)).sorted()
        let san = (names.map { "DNS:\($0)" } + ["IP:127.0.0.1", "IP:::1"]).joined(separator: ",")
        let leaf = try certificate(
            commonName: names.first { !$0.hasPrefix("*") } ?? "localhost", publicKey: key, issuer: caCert, signingKey: caKey,
            days: leafDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:FALSE"), (NID_key_usage, "critical,digitalSignature"),
                (NID_ext_key_usage, "serverAuth"), (NID_subject_alt_name, san), (NID_subject_key_identifier, "hash"),
                (NID_authority_key_identifier, "keyid:always"),
            ])
        defer { X509_free(leaf) }
        try verify(leaf, authority: caCert)
        let chain = try pem { PEM_write_bio_X509($0, leaf) }
        let keyPEM = try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        try write(chain, to: directory + "/cert.pem", mode: 0o644)
        try write(keyPEM, to: directory + "/key.pem", mode: 0o600)
        let authorityInfo = try CertificateInfo(x509: caCert)
        let leafInfo = try CertificateInfo(x509: leaf)
        return Issued(
            chainPEM: chain, keyPEM: keyPEM, authorityPath: caPath, authorityCreated: created, permittedNames: permitted,
            authorityNotAfter: authorityInfo.notAfter, leafNotAfter: leafInfo.notAfter)
    }

    /// Whether a stored CA may be kept: it has name constraints (older CAs had none), it lives no
    /// longer than `authorityDays`, and it has `authorityRenewalDays` left.
    private static func isCurrent(_ ca: OpaquePointer) -> Bool {
        guard X509_get_ext_by_NID(ca, NID_name_constraints, -1) >= 0, let info = try? CertificateInfo(x509: ca) else { return false }
        let now = Int64(time(nil))
        let day: Int64 = 86_400
        return info.notAfter - info.notBefore <= Int64(authorityDays) * day + day
            && info.notAfter - now >= Int64(authorityRenewalDays) * day
    }

    /// Verifies `leaf` against `authority` alone (X509_verify_cert checks validity periods and
    /// the CA's name constraints): a CA that does not permit a served name fails here.
    private static func verify(_ leaf: OpaquePointer, authority: OpaquePointer) throws(TLSError) {
        guard let store = X509_STORE_new(), let context = X509_STORE_CTX_new() else {
            throw TLSError("cannot allocate: \(TLSError.openSSLReasons())")
        }
        defer {
            X509_STORE_CTX_free(context)
            X509_STORE_free(store)
        }
        guard X509_STORE_add_cert(store, authority) == 1, X509_STORE_CTX_init(context, store, leaf, nil) == 1 else {
            throw TLSError("cannot verify the development certificate: \(TLSError.openSSLReasons())")
        }
        guard X509_verify_cert(context) == 1 else {
            let reason = String(cString: X509_verify_cert_error_string(Int(X509_STORE_CTX_get_error(context))))
            ERR_clear_error()
            throw TLSError("the development CA does not accept its own certificate: \(reason)")
        }
    }

    private static func loadAuthority(_ certPath: String, _ keyPath: String) throws(TLSError) -> (OpaquePointer, OpaquePointer)? {
        guard let certBytes = FileManager.default.contents(atPath: certPath), let keyBytes = FileManager.default.contents(atPath: keyPath)
        else { return nil }
        let cert = [UInt8](certBytes).withUnsafeBytes { buf -> OpaquePointer? in
            let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count))
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        let key = [UInt8](keyBytes).withUnsafeBytes { buf -> OpaquePointer? in
            let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count))
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let cert, let key, X509_check_private_key(cert, key) == 1 else {
            if let cert { X509_free(cert) }
            if let key { EVP_PKEY_free(key) }
            ERR_clear_error()
            return nil  // unusable: make a new one
        }
        return (cert, key)
    }

    private static func makeAuthority(
        _ certPath: String, _ keyPath: String, permitted: [String]
    ) throws(TLSError) -> (OpaquePointer, OpaquePointer) {
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else { throw TLSError("cannot make a key: \(TLSError.openSSLReasons())") }
        // Permitted DNS subtrees, and loopback only for IP addresses (the leaf names 127.0.0.1 and
        // ::1); with a permitted subtree of a type, names of that type outside it are refused.
        let constraints =
            (["critical"] + permitted.map { "permitted;DNS:\($0)" }
            + ["permitted;IP:127.0.0.1/255.255.255.255", "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"])
            .joined(separator: ",")
        let cert = try certificate(
            commonName: "aasad development CA", publicKey: key, issuer: nil, signingKey: key, days: authorityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"), (NID_name_constraints, constraints),
            ])
        try write(try pem { PEM_write_bio_X509($0, cert) }, to: certPath, mode: 0o644)
        try write(try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }, to: keyPath, mode: 0o600)
        return (cert, key)
    }

    /// A signed X.509 v3 certificate; `issuer` nil makes it self-signed.
    private static func certificate(
        commonName: String, publicKey: OpaquePointer, issuer: OpaquePointer?, signingKey: OpaquePointer, days: Int,
        extensions: [(Int32, String)]
    ) throws(TLSError) -> OpaquePointer {
        guard let x = X509_new() else { throw TLSError("cannot make a certificate: \(TLSError.openSSLReasons())") }
        var serial = [UInt8](repeating: 0, count: 8)
        RAND_bytes(&serial, Int32(serial.count))
        let serialValue = serial.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 1
        guard X509_set_version(x, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serialValue) == 1,
            X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(x), days * 86_400) != nil,
            X509_set_pubkey(x, publicKey) == 1
        else {
            X509_free(x)
            throw TLSError("cannot fill a certificate: \(TLSError.openSSLReasons())")
        }
        let name = X509_get_subject_name(x)
        _ = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
        _ = X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, "aasad development", -1, -1, 0)
        X509_set_issuer_name(x, issuer.map { X509_get_subject_name($0) } ?? name)
        var ctx = X509V3_CTX()
        X509V3_set_ctx(&ctx, issuer ?? x, x, nil, nil, 0)
        for (nid, value) in extensions {
            guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else {
                X509_free(x)
                throw TLSError("cannot add a certificate extension (\(value)): \(TLSError.openSSLReasons())")
            }
            X509_add_ext(x, ext, -1)
            X509_EXTENSION_free(ext)
        }
        guard X509_sign(x, signingKey, EVP_sha256()) > 0 else {
            X509_free(x)
            throw TLSError("cannot sign a certificate: \(TLSError.openSSLReasons())")
        }
        return x
    }

    /// Runs a PEM writer into memory and returns the text.
    package static func pem(_ writer: (OpaquePointer) -> Int32) throws(TLSError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError("cannot allocate: \(TLSError.openSSLReasons())") }
        defer { BIO_free(bio) }
        guard writer(bio) == 1 else { throw TLSError("cannot write PEM: \(TLSError.openSSLReasons())") }
        let length = Int(BIO_ctrl_pending(bio))
        var out = [UInt8](repeating: 0, count: length)
        _ = BIO_read(bio, &out, Int32(length))
        return out
    }

    private static func write(_ bytes: [UInt8], to path: String, mode: Int) throws(TLSError) {
        let ok = FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: mode])
        if !ok { throw TLSError("cannot write \(path)") }
    }
}
