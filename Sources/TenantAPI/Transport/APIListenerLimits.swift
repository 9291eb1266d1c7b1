import SafeText

/// The bounds of the tenant API's listener (docs/api.md, "Transport and limits"). Every field is
/// injectable so tests run them short; the defaults are what `aasad serve` uses.
public struct APIListenerLimits: Sendable {
    /// Connections open at once, each holding a thread: past it a new connection is answered
    /// 503 busy and closed. A platform's control plane needs a handful; 64 threads stay far below
    /// what the serving workers use.
    public var maximumConnections = 64
    /// Connections open at once from one peer address: one client cannot take every slot.
    public var maximumConnectionsPerPeer = 16
    /// The request line and header fields together: past it 431. Above 16 KB the HTTP/1 parser's
    /// own bound (`HTTP1Parser.maximumHeadLength`) answers first.
    public var maximumHeaderBytes = 16 * 1024
    /// The body: a Content-Length above it is answered 413 before any of the body is read. A
    /// site's four files fit well below 1 MB (the config's own file limits are smaller).
    public var maximumBodyBytes = 1 << 20
    /// The whole header block (and the TLS handshake of a connection's first request), from the
    /// request's first byte: cuts a client that sends its head a byte at a time (slowloris).
    public var headerTimeout: Duration = .seconds(10)
    /// The whole body: 1 MB in 30 s is about 35 KB/s, slower than any real uplink.
    public var bodyTimeout: Duration = .seconds(30)
    /// A kept-alive connection waiting for its next request.
    public var idleTimeout: Duration = .seconds(60)
    /// One response, from its first byte to its last: cuts a client that never reads.
    public var writeTimeout: Duration = .seconds(30)
    /// How long `stop()` waits for connections to end; a handler blocks up to about 6 s (a
    /// write waits up to 5 s until it is served), so 10 s covers one in progress.
    public var stopTimeout: Duration = .seconds(10)

    public init() {}
}

/// The certificate chain and key the API presents over TLS (settings `api.tls-certificate` and
/// `api.tls-key`): PEM files, read once when the listener starts.
public struct APITLSFiles: Sendable {
    public var certificate: String
    public var key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

/// Why the listener cannot start; each message names the setting to change.
public enum APIListenerError: Error, CustomStringConvertible, Sendable, Equatable {
    /// `api.listen` is not an address and port this listener takes.
    case invalidAddress(String, reason: String)
    /// A non-loopback address without `api.tls-certificate` and `api.tls-key`.
    case tlsRequired(String)
    /// The socket could not be made, bound or put into listening.
    case cannotListen(String, reason: String)
    /// The certificate or key cannot be read or used.
    case badTLSFiles(setting: String, path: String, reason: String)

    public var description: String {
        switch self {
        case .invalidAddress(let listen, let reason):
            "api.listen \(quoted(listen)) is not an address to listen on: \(reason) (for example 127.0.0.1:8444, [::1]:8444, 0.0.0.0:8444 or :8444)"
        case .tlsRequired(let listen):
            "api.listen \(quoted(listen)) is not a loopback address: the API then takes only TLS; set api.tls-certificate and api.tls-key, or listen on 127.0.0.1 or [::1]"
        case .cannotListen(let listen, let reason):
            "api.listen \(quoted(listen)): cannot listen: \(reason)"
        case .badTLSFiles(let setting, let path, let reason):
            "\(setting) \(quoted(path)): \(reason)"
        }
    }

    private func quoted(_ text: String) -> String {
        "\"" + TerminalText.escaped(text) + "\""
    }
}
