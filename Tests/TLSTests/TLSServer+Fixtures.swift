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
    static func make(_ names: [String], key: String = "ec") throws -> TestCertificate {
        let directory = try TemporaryDirectory(prefix: "aasad-tls-test")
        let keyArguments = key == "rsa" ? ["-newkey", "rsa:2048"] : ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
        let made = try Tool.run(
            "openssl",
            ["req", "-x509"] + keyArguments + [
                "-nodes", "-days", "2", "-subj", "/CN=\(names[0])", "-addext",
                "subjectAltName=" + names.map { "DNS:\($0)" }.joined(separator: ","), "-keyout", directory.path("key.pem"), "-out",
                directory.path("cert.pem"),
            ])
        #expect(made.status == 0, "openssl could not make a test certificate: \(made.stderr)")
        return TestCertificate(
            chainPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("cert.pem")))),
            keyPEM: [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory.path("key.pem")))))
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
    init(_ tls: TLSServer, serverName: String?, session: OpaquePointer? = nil, groups: String? = nil) throws {
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
    }

    deinit {
        SSL_free(client)
        SSL_CTX_free(clientContext)
        close(fds.0)
        close(fds.1)
    }

    /// Runs both sides until both report the handshake done; false if either failed.
    @discardableResult
    func handshake() -> Bool {
        var serverDone = false
        var clientDone = false
        for _ in 0..<Self.maximumSteps where !(serverDone && clientDone) {
            if !serverDone {
                switch server.handshake() {
                case .done: serverDone = true
                case .wantRead, .wantWrite: break
                case .closed, .failed: return false
                }
            }
            if !clientDone {
                let r = SSL_do_handshake(client)
                if r == 1 {
                    clientDone = true
                } else {
                    let e = SSL_get_error(client, r)
                    guard e == CAASAOpenSSL_SSL_ERROR_WANT_READ || e == CAASAOpenSSL_SSL_ERROR_WANT_WRITE else { return false }
                }
            }
        }
        return serverDone && clientDone
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
