import CAASAOpenSSL

/// A certificate chain and its private key read from PEM and checked against each other, before any
/// `SSL_CTX` exists: everything TLSContext does with the operator's bytes. Fuzz/FuzzPEM.swift runs
/// this same reading and `install` on every input against one long-lived context, since a new
/// SSL_CTX per input cost about two thirds of the fuzzer's time (perf: SSL_CTX_new_ex 64% of the
/// samples, the settings 7%, reading the PEM 22%).
final class PEMCredentials {
    /// The leaf certificate (owned).
    let leaf: OpaquePointer
    /// The certificates after the leaf, in file order (owned).
    private(set) var intermediates: [OpaquePointer] = []
    /// The private key (owned); set once the key has been read.
    private var key: OpaquePointer?
    /// The DNS names the leaf covers.
    let names: CertificateNames

    /// Reads the chain (leaf first, then intermediates up to the end of the file) and the key, and
    /// checks that the key belongs to the leaf.
    init(chainPEM: [UInt8], keyPEM: [UInt8], source: String) throws(TLSError) {
        let chainFile = "\(source)/cert.pem"
        let bio = try Self.memoryBIO(chainPEM, file: chainFile)
        defer { BIO_free(bio) }
        guard let leaf = PEM_read_bio_X509(bio, nil, nil, nil) else {
            throw TLSError("no PEM certificate found (\(TLSError.openSSLReasons()))", file: chainFile)
        }
        self.leaf = leaf
        names = CertificateNames.of(leaf)
        // A throw from here on runs deinit (every stored property is set), which frees what was read.
        while let intermediate = PEM_read_bio_X509(bio, nil, nil, nil) {
            intermediates.append(intermediate)
        }
        // The loop ends at the first block that is not a certificate. The end of the file ("no
        // start line") is expected; anything else is a damaged certificate, which must not be
        // dropped silently: the leaf alone would be served, and clients that need the
        // intermediate would refuse it.
        let end = ERR_peek_last_error()
        if end != 0 && !(ERR_GET_LIB(end) == ERR_LIB_PEM && ERR_GET_REASON(end) == PEM_R_NO_START_LINE) {
            throw TLSError(
                "a certificate after the first cannot be read (\(TLSError.openSSLReasons())); the file must hold PEM certificates only, leaf first",
                file: chainFile)
        }
        ERR_clear_error()

        let keyFile = "\(source)/key.pem"
        let key = try Self.readKey(keyPEM, file: keyFile, type: X509_get0_pubkey(leaf).flatMap { EVP_PKEY_get0_type_name($0) })
        self.key = key
        // The check SSL_CTX_check_private_key makes (`install` makes it again on the context).
        guard X509_check_private_key(leaf, key) == 1 else {
            throw TLSError("the key does not match the certificate in cert.pem (\(TLSError.openSSLReasons()))", file: keyFile)
        }
    }

    /// The private key, decoded as the certificate's key type first (a quarter of the generic
    /// decoding's cost); any other key, an encrypted one or a damaged one is read the generic
    /// way, whose error is the one reported (a key of another type then fails the match check).
    private static func readKey(_ pem: [UInt8], file: String, type: UnsafePointer<CChar>?) throws(TLSError) -> OpaquePointer {
        if let type {
            let bio = try memoryBIO(pem, file: file)
            defer { BIO_free(bio) }
            if let key = CAASAOpenSSL_read_private_key_of_type(bio, type) { return key }
            ERR_clear_error()
        }
        let bio = try memoryBIO(pem, file: file)
        defer { BIO_free(bio) }
        // noPassphrase: without a callback OpenSSL would ask for an encrypted key's passphrase on
        // the controlling terminal, blocking the reload (or start) until someone types.
        guard let key = PEM_read_bio_PrivateKey(bio, nil, noPassphrase, nil) else {
            throw TLSError("no unencrypted PEM private key found; decrypt the key first (\(TLSError.openSSLReasons()))", file: file)
        }
        return key
    }

    deinit {
        X509_free(leaf)
        intermediates.forEach { X509_free($0) }
        if let key { EVP_PKEY_free(key) }
    }

    /// Puts the chain and key into `ctx`, whose own checks (OpenSSL's security level on the
    /// certificate, the key match) still apply. The context adds to the extra chain certificates it
    /// already holds: a new context holds none.
    func install(into ctx: OpaquePointer, source: String) throws(TLSError) {
        guard SSL_CTX_use_certificate(ctx, leaf) == 1 else {
            throw TLSError("the certificate cannot be used: \(TLSError.openSSLReasons())", file: "\(source)/cert.pem")
        }
        for intermediate in intermediates {
            // The context takes ownership of the reference it is given; this object keeps its own.
            _ = X509_up_ref(intermediate)
            guard CAASAOpenSSL_SSL_CTX_add_extra_chain_cert(ctx, intermediate) == 1 else {
                X509_free(intermediate)
                throw TLSError("an intermediate certificate cannot be used: \(TLSError.openSSLReasons())", file: "\(source)/cert.pem")
            }
        }
        guard let key, SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSError("the key does not match the certificate in cert.pem (\(TLSError.openSSLReasons()))", file: "\(source)/key.pem")
        }
    }

    /// Puts the leaf and key into a connection object (`TLSContext.check`): the same checks as
    /// `install(into:)` makes on a context, on an object that costs far less to make.
    func install(intoConnection ssl: OpaquePointer, source: String) throws(TLSError) {
        guard SSL_use_certificate(ssl, leaf) == 1 else {
            throw TLSError("the certificate cannot be used: \(TLSError.openSSLReasons())", file: "\(source)/cert.pem")
        }
        guard let key, SSL_use_PrivateKey(ssl, key) == 1, SSL_check_private_key(ssl) == 1 else {
            throw TLSError("the key does not match the certificate in cert.pem (\(TLSError.openSSLReasons()))", file: "\(source)/key.pem")
        }
    }

    /// A memory BIO holding a copy of `pem`. A copy, because BIO_new_mem_buf would keep pointing
    /// into the array after `withUnsafeBytes` returned; and a checked length, because a BIO takes
    /// an Int32 (the files are bounded far below that by `CertificateFiles.maximumFileSize`, but
    /// TLSContext's initializer is public).
    private static func memoryBIO(_ pem: [UInt8], file: String) throws(TLSError) -> OpaquePointer {
        guard let length = Int32(exactly: pem.count), let bio = BIO_new(BIO_s_mem()) else {
            throw TLSError("cannot hand \(pem.count) bytes to OpenSSL: \(TLSError.openSSLReasons())", file: file)
        }
        // The end of the data is the end of the file, not "try again" (BIO_set_mem_eof_return).
        _ = BIO_ctrl(bio, BIO_C_SET_BUF_MEM_EOF_RETURN, 0, nil)
        if length > 0, pem.withUnsafeBytes({ BIO_write(bio, $0.baseAddress, length) }) != length {
            BIO_free(bio)
            throw TLSError("cannot hand \(pem.count) bytes to OpenSSL: \(TLSError.openSSLReasons())", file: file)
        }
        return bio
    }
}

/// A pem_password_cb that supplies no passphrase: an encrypted key fails to load at once (the error
/// says to decrypt it first) instead of OpenSSL prompting on the terminal.
private let noPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in 0
}
