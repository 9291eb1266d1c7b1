import CAASAOpenSSL
import Glibc
import Reactor
import SiteStore
import TLS

/// The API's certificate and key, loaded once when the listener is made: the same checks and
/// protocol settings as a site's certificate (`TLSContext`: TLS 1.2 and 1.3, Mozilla's
/// intermediate suites, the key matched to the certificate), with ALPN limited to HTTP/1.1 (this
/// listener speaks nothing else) and no session tickets (a control plane's few connections gain
/// nothing from resumption, and the shared ticket keys belong to the serving path).
final class APITLS: Sendable {
    let context: TLSContext

    /// Largest certificate or key file read: a chain of a few certificates is under 10 KB.
    static let maximumFileBytes = 1 << 20

    init(_ files: APITLSFiles) throws(APIListenerError) {
        let chain = try Self.read(files.certificate, setting: "api.tls-certificate")
        let key = try Self.read(files.key, setting: "api.tls-key")
        do {
            context = try TLSContext(
                chainPEM: chain, keyPEM: key, identity: "api:" + files.certificate, source: "api", purpose: .http11Only)
        } catch {
            // TLSContext names the files as `<source>/cert.pem` and `<source>/key.pem`.
            let isKey = error.file?.hasSuffix("key.pem") ?? false
            throw .badTLSFiles(
                setting: isKey ? "api.tls-key" : "api.tls-certificate", path: isKey ? files.key : files.certificate,
                reason: error.reason)
        }
        let ctx = context.openSSLContext
        _ = SSL_CTX_set_num_tickets(ctx, 0)
        // No tickets at all: the context's ticket callback, which needs a serving connection, is
        // then never called.
        SSL_CTX_set_options(ctx, CAASAOpenSSL_SSL_OP_NO_TICKET)
    }

    /// The file's bytes, bounded (`ConfigLoader.readBounded`, as a site's `tls/` pair is read),
    /// or an error naming the setting.
    private static func read(_ path: String, setting: String) throws(APIListenerError) -> [UInt8] {
        switch ConfigLoader.readBounded(path: path, limit: maximumFileBytes) {
        case .success(let bytes) where bytes.count > maximumFileBytes:
            throw .badTLSFiles(setting: setting, path: path, reason: "larger than \(maximumFileBytes) bytes; not a PEM file")
        case .success(let bytes):
            return bytes
        case .failure(let error):
            throw .badTLSFiles(setting: setting, path: path, reason: "cannot read: \(error)")
        }
    }
}
