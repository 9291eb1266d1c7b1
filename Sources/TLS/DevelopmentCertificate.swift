import CAASAOpenSSL
import Foundation

/// A local certificate authority and a leaf for the configured hosts, made with OpenSSL in-process
/// when no certificate is configured anywhere, so the example config runs on a fresh machine.
///
/// The CA is kept in the state directory and reused, so trusting it once (`curl --cacert
/// STATE/dev-tls/ca.pem`) lasts; the leaf is issued again at every start for the current hosts.
public enum DevelopmentCertificate {
    /// Leaf validity. Short, since it is re-issued at every start.
    public static let leafDays = 30
    /// CA validity: long enough that a developer trusts it once.
    public static let authorityDays = 3650

    public struct Issued: Sendable {
        public var chainPEM: [UInt8]
        public var keyPEM: [UInt8]
        /// The CA certificate to give clients (`curl --cacert`).
        public var authorityPath: String
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
        let authority: (OpaquePointer, OpaquePointer)
        if let existing = try loadAuthority(caPath, caKeyPath) {
            authority = existing
        } else {
            authority = try makeAuthority(caPath, caKeyPath)
        }
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
        let chain = try pem { PEM_write_bio_X509($0, leaf) }
        let keyPEM = try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        try write(chain, to: directory + "/cert.pem", mode: 0o644)
        try write(keyPEM, to: directory + "/key.pem", mode: 0o600)
        return Issued(chainPEM: chain, keyPEM: keyPEM, authorityPath: caPath)
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

    private static func makeAuthority(_ certPath: String, _ keyPath: String) throws(TLSError) -> (OpaquePointer, OpaquePointer) {
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else { throw TLSError("cannot make a key: \(TLSError.openSSLReasons())") }
        let cert = try certificate(
            commonName: "aasad development CA", publicKey: key, issuer: nil, signingKey: key, days: authorityDays,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"),
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
    private static func pem(_ writer: (OpaquePointer) -> Int32) throws(TLSError) -> [UInt8] {
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
