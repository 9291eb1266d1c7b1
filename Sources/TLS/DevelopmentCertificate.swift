import CAASAOpenSSL
import Foundation
import Glibc

/// The development certificate authority: its constants, its name constraints and the OpenSSL
/// steps that make and check certificates. `DevelopmentAuthority` holds a loaded CA and issues
/// leaves with it.
///
/// The CA is kept in the state directory and reused, so trusting it once (`curl --cacert
/// STATE/dev-tls/ca.pem`) lasts while the served names stay the same. A CA key can be stolen from
/// a developer's machine, so the CA can sign for nothing but what it is for: it carries X.509 name
/// constraints (RFC 5280 §4.2.1.10) permitting only the served names (and every name under them)
/// plus loopback, and lives 90 days. It is made again at start when it does not permit a name now
/// served, when it is near its end, and when it is an older CA without constraints.
public enum DevelopmentCertificate {
    /// Leaf validity. Short: a leaf is issued at start (the default) or on first use (a host's),
    /// and a host's is issued again before it ends (`DevelopmentAuthority.reissueMargin`).
    public static let leafDays = 30
    /// CA validity: a developer trusts it once a quarter at most.
    public static let authorityDays = 90
    /// A CA with fewer days left than this is made again, so a leaf issued now never outlives it.
    public static let authorityRenewalDays = leafDays + 1
    /// Top-level names that exist nowhere on the public internet (RFC 6761 §6, RFC 8375): a CA
    /// constrained to one of them may permit the whole name, so that a new `.localhost` site does
    /// not need a new CA. A public name is permitted exactly (with the names under it).
    public static let reservedTopLevelNames: Set<String> = ["localhost", "test", "example", "invalid", "home.arpa"]
    /// Public names (outside `reservedTopLevelNames`) the CA permits at most. Each is one DNS
    /// subtree in the CA, about 20 bytes: 1,000 keep the CA near 25 KB, which every client loads
    /// and checks each leaf against. Names past it (in sorted order) are left out of the CA and
    /// get the default leaf, which clients refuse for them (serve says so at start).
    public static let maximumPermittedPublicNames = 1_000
    /// Hosts the default leaf names at most, beside `localhost`, 127.0.0.1 and ::1. With this many
    /// hosts or fewer it names them all (one leaf, as a small config always had, and a client
    /// without SNI verifies for any of them); with more it names none of them, and each host gets
    /// a leaf of its own on first SNI (`DevelopmentAuthority`): a leaf naming 50,000 hosts exceeds
    /// what clients accept (Python's ssl: EXCESSIVE_MESSAGE_SIZE).
    public static let maximumDefaultLeafHosts = 16

    public struct Issued: Sendable {
        public var chainPEM: [UInt8]
        public var keyPEM: [UInt8]
        /// The CA certificate to give clients (`curl --cacert`).
        public var authorityPath: String
        /// Whether the CA was made now (clients that trusted an earlier one must trust this one).
        public var authorityCreated: Bool
        /// The DNS subtrees the CA permits.
        public var permittedNames: [String]
        /// Public names left out of the CA (past `maximumPermittedPublicNames`), sorted.
        public var omittedNames: [String]
        /// When the CA and the leaf end, seconds since the epoch.
        public var authorityNotAfter: Int64
        public var leafNotAfter: Int64
    }

    /// What a CA for some hosts permits, and the public names left out of it.
    public struct Constraints: Sendable, Equatable {
        /// DNS subtrees, sorted: `localhost`, the reserved top-level names in use, and at most
        /// `maximumPermittedPublicNames` public names.
        public var permitted: [String]
        /// Public names past the bound, sorted (none of them under a permitted one).
        public var omitted: [String]
    }

    /// The DNS subtrees a CA for `hosts` permits: `localhost`, each reserved top-level name a host
    /// is under, and every other host itself (without a wildcard's `*.`), at most
    /// `limit` of those. O(hosts × labels): start-up with a million hosts computes it.
    public static func constraints(for hosts: [String], limit: Int = maximumPermittedPublicNames) -> Constraints {
        var reserved: Set<String> = ["localhost"]
        var publicNames: Set<String> = []
        for host in hosts {
            let name = subtree(of: host)
            guard !name.isEmpty else { continue }
            if let top = reservedTopLevel(of: name) { reserved.insert(top) } else { publicNames.insert(name) }
        }
        // A name under another permitted one adds nothing (a subtree holds every name under it).
        let kept = publicNames.filter { name in !parents(of: name).contains { publicNames.contains($0) } }.sorted()
        let permitted = Array(kept.prefix(max(0, limit)))
        return Constraints(permitted: (reserved.sorted() + permitted).sorted(), omitted: Array(kept.dropFirst(permitted.count)))
    }

    /// `constraints(for:).permitted`.
    public static func permittedNames(for hosts: [String]) -> [String] { constraints(for: hosts).permitted }

    /// Whether a CA permitting `permitted` (a set of DNS subtrees) accepts a leaf for `host`: the
    /// host (without `*.`) or one of its parents is a permitted subtree, as OpenSSL's `nc_dns`
    /// matches a constraint without a leading dot. O(labels).
    public static func permits(_ permitted: Set<String>, _ host: String) -> Bool {
        let name = subtree(of: host)
        guard !name.isEmpty else { return false }
        return permitted.contains(name) || parents(of: name).contains { permitted.contains($0) }
    }

    /// The name a host's subtree is checked under: lower case, without `*.` or a trailing dot.
    static func subtree(of host: String) -> String {
        var name = host.lowercased()
        if name.hasPrefix("*.") { name.removeFirst(2) }
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// `a.b.c` → `b.c`, `c`.
    static func parents(of name: String) -> [String] {
        var out: [String] = []
        var rest = Substring(name)
        while let dot = rest.firstIndex(of: ".") {
            rest = rest[rest.index(after: dot)...]
            out.append(String(rest))
        }
        return out
    }

    static func reservedTopLevel(of name: String) -> String? {
        reservedTopLevelNames.first { name == $0 || name.hasSuffix("." + $0) }
    }

    /// Makes (or reuses) the CA under `directory` and issues the default leaf for `hosts`
    /// (wildcards allowed; all of them when at most `maximumDefaultLeafHosts`), plus `localhost`,
    /// 127.0.0.1 and ::1.
    public static func issue(directory: String, hosts: [String]) throws(TLSError) -> Issued {
        try DevelopmentAuthority(directory: directory, hosts: hosts).issued
    }

    /// Whether a stored CA may be kept: it has name constraints (older CAs had none), it lives no
    /// longer than `authorityDays`, and it has `authorityRenewalDays` left.
    static func isCurrent(_ ca: OpaquePointer) -> Bool {
        guard X509_get_ext_by_NID(ca, NID_name_constraints, -1) >= 0, let info = try? CertificateInfo(x509: ca) else { return false }
        let now = Int64(time(nil))
        let day: Int64 = 86_400
        return info.notAfter - info.notBefore <= Int64(authorityDays) * day + day
            && info.notAfter - now >= Int64(authorityRenewalDays) * day
    }

    /// Verifies `leaf` against `authority` alone (X509_verify_cert checks validity periods and
    /// the CA's name constraints): a CA that does not permit a served name fails here.
    static func verify(_ leaf: OpaquePointer, authority: OpaquePointer) throws(TLSError) {
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

    /// Largest `ca.pem` or `ca-key.pem` read back: a CA permitting `maximumPermittedPublicNames`
    /// names is near 25 KB of DER, about 34 KB as PEM, and its key under 1 KB. A larger file is
    /// not this CA's, and a new one is made.
    public static let maximumStoredFileSize = 256 * 1024

    /// The CA in the directory open at `folder` (`ca.pem`, `ca-key.pem`), or nil when it is not
    /// there or unusable (then a new one is made).
    static func loadAuthority(in folder: Int32) throws(TLSError) -> (OpaquePointer, OpaquePointer)? {
        guard let certBytes = readStored(folder, "ca.pem"), let keyBytes = readStored(folder, "ca-key.pem") else { return nil }
        let cert = certBytes.withUnsafeBytes { buf -> OpaquePointer? in
            let bio = BIO_new_mem_buf(buf.baseAddress, Int32(buf.count))
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        let key = keyBytes.withUnsafeBytes { buf -> OpaquePointer? in
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

    /// A regular file of the directory open at `folder`, read when it has at most
    /// `maximumStoredFileSize` bytes; nil otherwise. A symbolic link is not followed and a FIFO
    /// or device is not read (O_NONBLOCK, then fstat): what the state directory's owner put
    /// there is never what root reads at start.
    static func readStored(_ folder: Int32, _ name: String) -> [UInt8]? {
        let fd = openat(folder, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumStoredFileSize else { return nil }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while bytes.count <= maximumStoredFileSize {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { return nil }
            if n == 0 { break }
            bytes += chunk[..<n]
        }
        return bytes.count <= maximumStoredFileSize ? bytes : nil
    }

    static func makeAuthority(
        in folder: Int32, _ directory: String, permitted: [String]
    ) throws(TLSError) -> (OpaquePointer, OpaquePointer) {
        guard let key = CAASAOpenSSL_EVP_EC_gen("P-256") else { throw TLSError("cannot make a key: \(TLSError.openSSLReasons())") }
        // Permitted DNS subtrees, and loopback only for IP addresses (the leaf names 127.0.0.1 and
        // ::1); with a permitted subtree of a type, names of that type outside it are refused.
        let constraints =
            (["critical"] + permitted.map { "permitted;DNS:\($0)" }
            + ["permitted;IP:127.0.0.1/255.255.255.255", "permitted;IP:::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"])
            .joined(separator: ",")
        let cert = try certificate(
            commonName: "aasad development CA", publicKey: key, issuer: nil, signingKey: key, seconds: authorityDays * 86_400,
            extensions: [
                (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"), (NID_key_usage, "critical,keyCertSign,cRLSign"),
                (NID_subject_key_identifier, "hash"), (NID_name_constraints, constraints),
            ])
        try write(try pem { PEM_write_bio_X509($0, cert) }, in: folder, directory, "ca.pem", mode: 0o644)
        try write(try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }, in: folder, directory, "ca-key.pem", mode: 0o600)
        return (cert, key)
    }

    /// A signed X.509 v3 certificate; `issuer` nil makes it self-signed.
    static func certificate(
        commonName: String, publicKey: OpaquePointer, issuer: OpaquePointer?, signingKey: OpaquePointer, seconds: Int,
        extensions: [(Int32, String)]
    ) throws(TLSError) -> OpaquePointer {
        guard let x = X509_new() else { throw TLSError("cannot make a certificate: \(TLSError.openSSLReasons())") }
        var serial = [UInt8](repeating: 0, count: 8)
        RAND_bytes(&serial, Int32(serial.count))
        let serialValue = serial.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } >> 1
        guard X509_set_version(x, 2) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serialValue) == 1,
            X509_gmtime_adj(X509_getm_notBefore(x), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(x), seconds) != nil,
            X509_set_pubkey(x, publicKey) == 1
        else {
            X509_free(x)
            throw TLSError("cannot fill a certificate: \(TLSError.openSSLReasons())")
        }
        let name = X509_get_subject_name(x)
        // ub-common-name is 64 characters (RFC 5280 Appendix A); a longer host name is in the
        // subjectAltName alone (which is all clients read, RFC 6125 §6.4.4).
        if commonName.utf8.count <= 64 { _ = X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) }
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

    /// The DNS subtrees a CA's name constraints permit (none without the extension).
    static func permittedDNSNames(of ca: OpaquePointer) -> [String] {
        guard let raw = X509_get_ext_d2i(ca, NID_name_constraints, nil, nil) else { return [] }
        let constraints = raw.assumingMemoryBound(to: NAME_CONSTRAINTS.self)
        defer { NAME_CONSTRAINTS_free(constraints) }
        guard let stack = constraints.pointee.permittedSubtrees else { return [] }
        var found: [String] = []
        for i in 0..<max(0, OPENSSL_sk_num(stack)) {
            guard let subtree = OPENSSL_sk_value(stack, i)?.assumingMemoryBound(to: GENERAL_SUBTREE.self),
                let base = subtree.pointee.base, base.pointee.type == GEN_DNS, let ia5 = base.pointee.d.dNSName,
                let data = ASN1_STRING_get0_data(ia5)
            else { continue }
            let length = Int(ASN1_STRING_length(ia5))
            guard length > 0 else { continue }
            found.append(String(decoding: UnsafeBufferPointer(start: data, count: length), as: UTF8.self).lowercased())
        }
        return found
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

    /// Writes `bytes` as `name` in the directory open at `folder` (`directory` names it in
    /// errors) by rename from a file created with `mode` (and set to exactly it, whatever the
    /// umask): the key is 0600 from its first byte, never briefly readable by others as a file
    /// created first and chmod-ed after would be, and a reader never sees half a file. Relative
    /// to the descriptor, and the rename replaces a link rather than following it, so nothing
    /// is written outside that directory.
    static func write(_ bytes: [UInt8], in folder: Int32, _ directory: String, _ name: String, mode: Int) throws(TLSError) {
        let temporary = name + ".new"
        unlinkat(folder, temporary, 0)  // a leftover of an interrupted write; O_EXCL below refuses anything there
        let fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode & 0o777))
        guard fd >= 0 else { throw TLSError("cannot write \(directory)/\(temporary): \(String(cString: strerror(errno)))") }
        var written = 0
        var failed = fchmod(fd, mode_t(mode & 0o777)) != 0
        while !failed && written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { failed = true } else { written += n }
        }
        if !failed { failed = fsync(fd) != 0 }
        let reason = failed ? String(cString: strerror(errno)) : ""
        close(fd)
        guard !failed else {
            unlinkat(folder, temporary, 0)
            throw TLSError("cannot write \(directory)/\(name): \(reason)")
        }
        guard renameat(folder, temporary, folder, name) == 0 else {
            let reason = String(cString: strerror(errno))
            unlinkat(folder, temporary, 0)
            throw TLSError("cannot write \(directory)/\(name): \(reason)")
        }
    }
}
