import CAASAOpenSSL
import Foundation
import TestSupport
import Testing

@testable import TLS

/// A self-signed certificate and key for the given DNS names, made with the openssl command line
/// (independent of the code under test).
struct TestCertificate {
    var chainPEM: [UInt8]
    var keyPEM: [UInt8]

    /// The first name is the subject's CN; every name goes into subjectAltName.
    static func make(_ names: [String], key: TestPKI.Key = .ecdsa) throws -> TestCertificate {
        let pair = try TestPKI.make(names, key: key)
        return TestCertificate(chainPEM: pair.certificatePEM, keyPEM: pair.keyPEM)
    }

    /// A TLS-ALPN-01 challenge certificate (RFC 8737 §3): self-signed, subjectAltName `name` (and
    /// `extraNames`), the critical acmeIdentifier extension holding `digest`. Made in-process with
    /// OpenSSL's X509 API rather than the command line, because some tests need hundreds; the
    /// extensions go through the same `X509V3_EXT_nconf` that `openssl req -addext` uses.
    static func challenge(_ name: String, extraNames: [String] = [], digest: [UInt8] = Array(repeating: 0xAB, count: 32)) throws
        -> TestCertificate
    {
        let key = try #require(CAASAOpenSSL_EVP_EC_gen("P-256"))
        defer { EVP_PKEY_free(key) }
        let x = try #require(X509_new())
        defer { X509_free(x) }
        let subject = try #require(X509_get_subject_name(x))
        let made =
            X509_set_version(x, 2) == 1 && ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1
            && X509_gmtime_adj(X509_getm_notBefore(x), 0) != nil && X509_gmtime_adj(X509_getm_notAfter(x), 86400) != nil
            && X509_set_pubkey(x, key) == 1 && X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC, name, -1, -1, 0) == 1
            && X509_set_issuer_name(x, subject) == 1
        #expect(made, "cannot fill the challenge certificate")
        let hex = digest.map { String(format: "%02X", $0) }.joined(separator: ":")
        let extensions = [
            ("subjectAltName", ([name] + extraNames).map { "DNS:\($0)" }.joined(separator: ",")),
            ("1.3.6.1.5.5.7.1.31", "critical,DER:04:\(String(format: "%02X", digest.count)):\(hex)"),
        ]
        for (extensionName, value) in extensions {
            var context = X509V3_CTX()
            X509V3_set_ctx(&context, x, x, nil, nil, 0)
            let made = try #require(X509V3_EXT_nconf(nil, &context, extensionName, value), "cannot make \(extensionName)")
            #expect(X509_add_ext(x, made, -1) == 1)
            X509_EXTENSION_free(made)
        }
        #expect(X509_sign(x, key, EVP_sha256()) > 0)
        return TestCertificate(
            chainPEM: try pem { PEM_write_bio_X509($0, x) }, keyPEM: try pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) })
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws -> [UInt8] {
        let bio = try #require(BIO_new(BIO_s_mem()))
        defer { BIO_free(bio) }
        #expect(write(bio) == 1)
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        #expect(BIO_read(bio, &bytes, Int32(bytes.count)) == Int32(bytes.count))
        return bytes
    }

    /// As the snapshot would hand it to the SNI callback; `label` doubles as the identity.
    func source(_ label: String) -> TLSServer.CertificateSource {
        TLSServer.CertificateSource(
            identity: label, chainPEM: chainPEM, keyPEM: keyPEM, label: label)
    }
}

/// An in-process TLS client on one end of a socketpair, the server's `TLSConnection` on the
/// other; `handshake` drives both until they finish (no threads, no network).
final class SocketPairTLS {
    let server: TLSConnection
    private let client: OpaquePointer
    private let clientContext: OpaquePointer
    private let fds: (Int32, Int32)

    /// A bounded number of alternating steps: a handshake takes a handful.
    static let maximumSteps = 100

    /// A connection accepted by `tls` (starting on its current default context); the client sends
    /// `serverName` as SNI when given, and offers `session` for resumption when given.
    /// `groups` sets the client's key-exchange groups: a first group the server does not take
    /// (P-521) makes it answer with a HelloRetryRequest, so the ClientHello callback runs twice.
    /// `alpn`: the protocols the client offers, in order (none when nil).
    init(_ tls: TLSServer, serverName: String?, session: OpaquePointer? = nil, groups: String? = nil, alpn: [String]? = nil) throws {
        var pair: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        fds = (pair[0], pair[1])
        for fd in pair { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        server = try #require(tls.makeConnection(fd: fds.0))
        clientContext = SSL_CTX_new(TLS_client_method())!
        client = SSL_new(clientContext)!
        SSL_set_fd(client, fds.1)
        SSL_set_connect_state(client)
        if let serverName {
            _ = serverName.withCString {
                SSL_ctrl(
                    client, SSL_CTRL_SET_TLSEXT_HOSTNAME, Int(CAASAOpenSSL_TLSEXT_NAMETYPE_host_name), UnsafeMutableRawPointer(mutating: $0)
                )
            }
        }
        if let session { SSL_set_session(client, session) }
        if let groups {
            _ = groups.withCString { SSL_ctrl(client, SSL_CTRL_SET_GROUPS_LIST, 0, UnsafeMutableRawPointer(mutating: $0)) }
        }
        if let alpn {
            let wire = alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            #expect(SSL_set_alpn_protos(client, wire, UInt32(wire.count)) == 0)  // 0 is success here
        }
    }

    deinit {
        SSL_free(client)
        SSL_CTX_free(clientContext)
        close(fds.0)
        close(fds.1)
    }

    /// Why the server's handshake failed, when it did.
    private(set) var serverFailure: TLSFailure?
    /// OpenSSL's reason code for the client's failed handshake (for a received alert,
    /// SSL_R_SSLV3_ALERT_* / SSL_R_TLSV1_ALERT_*: 1000 + the alert number), when it failed.
    private(set) var clientFailureReason: Int32?

    /// Runs both sides until both report the handshake done; false if either failed. When the
    /// server fails, the client still runs, so that it reads the server's alert.
    @discardableResult
    func handshake() -> Bool {
        var serverDone = false
        var clientDone = false
        for _ in 0..<Self.maximumSteps where !(serverDone && clientDone) {
            if !serverDone && serverFailure == nil {
                switch server.handshake() {
                case .done: serverDone = true
                case .wantRead, .wantWrite: break
                case .closed: serverFailure = .peerClosed
                case .failed(let failure, _): serverFailure = failure
                }
            }
            if !clientDone {
                ERR_clear_error()
                let r = SSL_do_handshake(client)
                if r == 1 {
                    clientDone = true
                } else {
                    let e = SSL_get_error(client, r)
                    guard e == CAASAOpenSSL_SSL_ERROR_WANT_READ || e == CAASAOpenSSL_SSL_ERROR_WANT_WRITE else {
                        clientFailureReason = ERR_GET_REASON(ERR_peek_error())
                        ERR_clear_error()
                        return false
                    }
                }
            }
            if serverFailure != nil && clientDone { return false }
        }
        return serverDone && clientDone && serverFailure == nil
    }

    /// The protocol ALPN selected, as the client saw it.
    var clientALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(client, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The client's session once the server's TLS 1.3 tickets arrived (they follow the handshake:
    /// the server sends them with its first write, and the client reads them with its first
    /// read); the caller frees it.
    func sessionAfterTicket() -> OpaquePointer? {
        var byte: UInt8 = 0
        var n = 0
        _ = withUnsafeBytes(of: &byte) { server.write($0) }
        _ = SSL_read_ex(client, &byte, 1, &n)
        return SSL_get1_session(client)
    }

    /// The subject CN of the certificate the client received.
    var presentedCommonName: String? {
        guard let cert = SSL_get1_peer_certificate(client) else { return nil }
        defer { X509_free(cert) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, &buffer, Int32(buffer.count)) > 0 else {
            return nil
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
