public import Outbound
import SafeText

/// One HTTP response as the ACME client reads it: bounded body and header section.
public struct HTTPSResponse: Sendable {
    public var status: Int
    public var headers: ACMEHeaders
    public var body: [UInt8]

    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// What ACME speaks through: the one outbound client (`OutboundClient`: libcurl, https only,
/// verification always on, with the roots of `acme.directory-ca` when set, timeouts, redirects
/// never followed since RFC 8555 gives every URL explicitly), with bodies bounded by
/// `ACMELimits` and failures as `ACMEError.transport`. Blocking: it runs on the ACME thread,
/// never on a serving loop.
public final class HTTPSClient: Sendable {
    public struct Configuration: Sendable {
        /// PEM roots to trust instead of the system's (`acme.directory-ca`); nil: the system's.
        public var caFile: String?
        /// Longest TCP + TLS connect, in milliseconds: a CA that does not accept within 10 s is
        /// down for our purposes, and the order is retried with back-off.
        public var connectTimeoutMilliseconds = 10_000
        /// Longest whole request, in milliseconds: ACME answers are small (`maximumBodyBytes`);
        /// 30 s covers a slow CA and stops one that trickles bytes to hold the ACME thread.
        public var totalTimeoutMilliseconds = 30_000
        /// RFC 8555 §6.1: clients SHOULD send a User-Agent naming the software.
        public var userAgent = "aasad-acme"

        public init(caFile: String? = nil) { self.caFile = caFile }
    }

    public let configuration: Configuration
    private let client: OutboundClient

    public init(configuration: Configuration = Configuration()) throws(ACMEError) {
        self.configuration = configuration
        var outbound = OutboundClient.Configuration(caFile: configuration.caFile)
        outbound.connectTimeoutMilliseconds = configuration.connectTimeoutMilliseconds
        outbound.totalTimeoutMilliseconds = configuration.totalTimeoutMilliseconds
        outbound.userAgent = configuration.userAgent
        outbound.maximumBodyBytes = ACMELimits.maximumBodyBytes
        do {
            client = try OutboundClient(configuration: outbound)
        } catch {
            throw .transport(from: error)
        }
    }

    public enum Method: Sendable { case get, head, post }

    /// One request. `body` is sent with `contentType` on POST; `accept`, when given, is the
    /// Accept field (RFC 8555 §7.4.2 asks for `application/pem-certificate-chain`).
    public func request(
        _ method: Method, _ url: ACMEURL, body: [UInt8] = [], contentType: String = "application/jose+json", accept: String? = nil
    ) throws(ACMEError) -> HTTPSResponse {
        var request = OutboundRequest(url: url.text)
        switch method {
        case .get: request.method = .get
        case .head: request.method = .head
        case .post:
            request.method = .post
            request.body = body
            request.fields.append((name: "Content-Type", value: contentType))
        }
        if let accept { request.fields.append((name: "Accept", value: accept)) }
        do {
            let response = try client.perform(request)
            return HTTPSResponse(status: response.status, headers: response.headers, body: response.body)
        } catch {
            throw .transport(from: error)
        }
    }
}

extension ACMEError {
    /// libcurl's account of a failed exchange, which may quote what the other side sent (a
    /// certificate's subject name): escaped as every log line's outside text is (`TerminalText`),
    /// since it is logged and shown on `/sites`.
    static func transport(from error: OutboundError) -> ACMEError { .transport(TerminalText.escaped(error.message)) }
}
