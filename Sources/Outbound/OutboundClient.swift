import CAASACurl
import CAASAOpenSSL
import Synchronization
public import TLS

// Longer than 400 lines on purpose: every libcurl option, callback and bound of an outbound
// request in one place, so that no caller gets a request with other verification or limits.

/// One outbound HTTPS request: ACME's calls to a CA, `aasad check`'s fetches of an origin and of
/// Apple's CDN, and the CDN watch in `serve`.
public struct OutboundRequest: Sendable {
    public enum Method: Sendable { case get, head, post, put, delete }

    public var method: Method = .get
    /// An absolute `https://` URL (or `http://` to a loopback address, see `allowsPlainHTTPToLoopback`).
    public var url: String
    /// Lets an `http://` URL through when its host is a loopback address literal (`127.0.0.1`,
    /// `[::1]`) or `localhost`, and no connect-to entry sends it elsewhere: the tenant API's
    /// client on the machine it runs on (docs/api.md), where no network sees the token.
    public var allowsPlainHTTPToLoopback = false
    /// Lets an `http://` URL through when exactly one connect-to entry pins the address: the
    /// tenant API's ownership checker (Sources/TenantAPI/VerificationChecker.swift), which
    /// resolves and vets the address itself and sends no secret (a fixed GET, no fields).
    public var pinsPlainHTTP = false
    public var body: [UInt8] = []
    /// Extra request fields, `Name: value` (checked: a token name and a value of visible bytes,
    /// space and tab, so that no configured text splits the request head).
    public var fields: [(name: String, value: String)] = []
    /// curl's `--connect-to` entries, `HOST1:PORT1:HOST2:PORT2`: connect elsewhere than the URL
    /// says while the TLS name and Host stay the URL's (a staging address, a test server).
    public var connectTo: [String] = []
    /// The User-Agent sent; nil sends the client's configured one.
    public var userAgent: String?
    /// Collect the server's certificate (`OutboundResponse.certificate`): the request then opens
    /// a connection of its own, since a reused one has no handshake to look at.
    public var wantsCertificate = false

    public init(_ method: Method = .get, url: String) {
        self.method = method
        self.url = url
    }
}

/// A response as read: bounded body and header section, and the leaf certificate when asked.
public struct OutboundResponse: Sendable {
    public var status: Int
    public var headers: ResponseHeaders
    public var body: [UInt8]
    /// The server's leaf certificate (validity and DNS names), when the request asked for it.
    public var certificate: CertificateInfo?
}

/// Why a request got no response, by the layer that failed: each says what an operator checks.
public struct OutboundError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The request could not be made (a bad URL, a refused option): a bug or bad input.
        case request
        /// The name did not resolve.
        case dns
        /// No TCP connection (refused, unreachable).
        case connect
        /// Connect or the whole request took longer than allowed.
        case timeout
        /// The TLS handshake failed (protocol, version, alert).
        case tls
        /// The server's certificate was not accepted (`certificateProblem` says why).
        case certificate
        /// The connection broke or the server's HTTP was not understood.
        case http
        /// The response was over the client's bounds (body or header section).
        case tooLarge = "too-large"
    }

    /// Why a certificate was refused.
    public enum CertificateProblem: String, Sendable, Equatable {
        case expired
        case notYetValid = "not-yet-valid"
        case nameMismatch = "name-mismatch"
        case untrusted
    }

    public var kind: Kind
    public var message: String
    public var certificateProblem: CertificateProblem?
    /// The refused certificate, when it could be read.
    public var certificate: CertificateInfo?
    /// The response's status, when a `tooLarge` body came after it (a caller that needs only
    /// the status, as `acme.ask`'s contract, reads it here).
    public var status: Int?

    public init(_ kind: Kind, _ message: String, certificateProblem: CertificateProblem? = nil, certificate: CertificateInfo? = nil) {
        self.kind = kind
        self.message = message
        self.certificateProblem = certificateProblem
        self.certificate = certificate
    }

    public var description: String { message }
}

/// The one outbound HTTPS client (a maintained library, libcurl; docs/acme.md says
/// why not URLSession): https only, certificate verification always on (system roots, or the
/// configured CA file), TLS 1.2 or newer, connect and total timeouts, redirects never followed
/// (a redirect is the caller's to judge), bodies and header sections bounded. Blocking: it runs
/// on its user's own thread (the ACME thread, the CDN watch's, a command), never on a serving
/// loop. One libcurl handle, reused (its connection cache keeps connections alive), used by one
/// request at a time.
public final class OutboundClient: Sendable {
    public struct Configuration: Sendable {
        /// PEM roots to trust instead of the system's; nil: the system's.
        public var caFile: String?
        /// With `caFile`: trust the system's roots too (`aasad check --cacert`: a staging CA for
        /// the origin, the public roots for Apple's CDN).
        public var addsSystemRoots = false
        /// The system's roots as a hashed directory (Debian's ca-certificates).
        public static let systemRootsDirectory = "/etc/ssl/certs"
        /// Longest TCP + TLS connect, in milliseconds.
        public var connectTimeoutMilliseconds = 10_000
        /// Longest whole request, in milliseconds: stops a server that trickles bytes.
        public var totalTimeoutMilliseconds = 30_000
        /// The User-Agent of requests that do not name one.
        public var userAgent = "aasad"
        /// Largest response body read; a longer one fails as `tooLarge`.
        public var maximumBodyBytes = 256 * 1024
        /// Asked often during a request (connect included): true aborts it at once, so that a
        /// thread stopping (the CDN watch on SIGTERM) does not wait out a timeout.
        public var isCancelled: (@Sendable () -> Bool)?

        public init(caFile: String? = nil) { self.caFile = caFile }
    }

    public let configuration: Configuration
    private let handle: Mutex<Handle>

    /// The libcurl easy handle; only touched under the mutex.
    private final class Handle: @unchecked Sendable {
        let curl: UnsafeMutableRawPointer
        init(_ curl: UnsafeMutableRawPointer) { self.curl = curl }
        deinit { curl_easy_cleanup(curl) }
    }

    /// curl_global_init once per process, before the first handle (libcurl asks for it before
    /// any other call and while no other thread uses libcurl).
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    public init(configuration: Configuration = Configuration()) throws(OutboundError) {
        guard Self.globalInit, let curl = curl_easy_init() else { throw OutboundError(.request, "libcurl did not initialise") }
        self.configuration = configuration
        handle = Mutex(Handle(curl))
    }

    /// One request.
    public func perform(_ request: OutboundRequest) throws(OutboundError) -> OutboundResponse {
        try Self.check(request)
        let result = handle.withLock { handle in
            Result { () throws(OutboundError) in try perform(handle.curl, request) }
        }
        return try result.get()
    }

    /// Refuses what would reach the request head unchecked: a URL that is not https or holds
    /// bytes outside visible ASCII, a field name that is no token, a value with CR, LF or other
    /// controls, a connect-to entry with them.
    package static func check(_ request: OutboundRequest) throws(OutboundError) {
        guard request.url.utf8.count <= 8_192,
            request.url.lowercased().hasPrefix("https://") || isLoopbackHTTP(request) || isPinnedHTTP(request),
            request.url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw OutboundError(
                .request, "\(request.url.debugDescription) is no https URL (nor http to a loopback address) of visible ASCII")
        }
        for field in request.fields {
            guard !field.name.isEmpty, field.name.utf8.allSatisfy(ResponseHeaders.isTokenByte) else {
                throw OutboundError(.request, "the field name \(field.name.debugDescription) is no token")
            }
            guard isFieldValue(field.value) else {
                throw OutboundError(.request, "the \(field.name) value holds a control byte")
            }
        }
        if let agent = request.userAgent, !isFieldValue(agent) {
            throw OutboundError(.request, "the User-Agent holds a control byte")
        }
        for entry in request.connectTo where !entry.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) || entry.utf8.count > 1_024 {
            throw OutboundError(.request, "the connect-to entry \(entry.debugDescription) holds a control byte or space")
        }
    }

    /// An `http://` URL the request may use: allowed by it, no connect-to entry, and an authority
    /// that is exactly a loopback literal or `localhost` with an optional port. No user info (in
    /// `http://127.0.0.1:80@example.com/` the host is example.com) and no other spelling libcurl
    /// would also read as an address (`127.1`, `0x7f.0.0.1`).
    static func isLoopbackHTTP(_ request: OutboundRequest) -> Bool {
        guard request.allowsPlainHTTPToLoopback, request.connectTo.isEmpty, request.url.lowercased().hasPrefix("http://") else {
            return false
        }
        let rest = request.url.utf8.dropFirst("http://".count)
        let authority = rest.prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#") }
        var host = Substring(String(decoding: authority, as: UTF8.self).lowercased())
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            let after = host[host.index(after: close)...]
            guard after.isEmpty || isPort(after) else { return false }
            return host[host.index(after: host.startIndex)..<close] == "::1"
        }
        if let colon = host.firstIndex(of: ":") {
            guard isPort(host[colon...]) else { return false }
            host = host[..<colon]
        }
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "127" else { return false }
        return parts.allSatisfy { part in
            (1...3).contains(part.count) && part.allSatisfy(\.isASCII) && part.allSatisfy(\.isNumber)
                && (part.count == 1 || part.first != "0") && Int(part).map { $0 <= 255 } == true
        }
    }

    /// An `http://` URL pinned to one vetted address by its only connect-to entry, with no field
    /// and no body (nothing of value crosses the network in clear).
    static func isPinnedHTTP(_ request: OutboundRequest) -> Bool {
        request.pinsPlainHTTP && request.connectTo.count == 1 && request.fields.isEmpty && request.body.isEmpty
            && request.url.lowercased().hasPrefix("http://")
    }

    /// `:` and 1 to 5 decimal digits.
    private static func isPort(_ text: Substring) -> Bool {
        let digits = text.dropFirst()
        return text.first == ":" && (1...5).contains(digits.count) && digits.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// A field value's bytes: visible ASCII, space, tab and bytes above 0x7F (RFC 9110 §5.5).
    private static func isFieldValue(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }
    }

    private func perform(_ curl: UnsafeMutableRawPointer, _ request: OutboundRequest) throws(OutboundError) -> OutboundResponse {
        curl_easy_reset(curl)
        let transfer = Transfer(maximumBodyBytes: configuration.maximumBodyBytes, isCancelled: configuration.isCancelled)
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        var connectList: UnsafeMutablePointer<curl_slist>? = nil
        defer {
            curl_slist_free_all(headerList)
            curl_slist_free_all(connectList)
        }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        var failed: String? = nil
        func set(_ option: CURLoption, _ value: Int) {
            if CAASACurl_setopt_long(curl, option, value) != CURLE_OK, failed == nil { failed = "option \(option.rawValue)" }
        }
        func set(_ option: CURLoption, _ value: UnsafeRawPointer?) {
            if CAASACurl_setopt_pointer(curl, option, value) != CURLE_OK, failed == nil { failed = "option \(option.rawValue)" }
        }
        for field in request.fields { headerList = curl_slist_append(headerList, "\(field.name): \(field.value)") }
        for entry in request.connectTo { connectList = curl_slist_append(connectList, entry) }
        // libcurl sends `Expect: 100-continue` before a large body and waits for an answer a
        // server need not give; every body here is small enough to send at once.
        if !request.body.isEmpty { headerList = curl_slist_append(headerList, "Expect:") }
        let agent = request.userAgent ?? configuration.userAgent
        let body = request.body
        let scheme = Self.isLoopbackHTTP(request) || Self.isPinnedHTTP(request) ? "http" : "https"
        let customMethod: String? =
            switch request.method {
            case .put: "PUT"
            case .delete: "DELETE"
            case .get, .head, .post: nil
            }
        let code: CURLcode = request.url.withCString { urlText in
            agent.withCString { agent in
                scheme.withCString { https in
                    withOptionalCString(customMethod) { customMethod in
                        withOptionalCString(configuration.caFile) { caFile in
                            body.withUnsafeBytes { bodyBytes in
                                errorBuffer.withUnsafeMutableBufferPointer { errors in
                                    set(CURLOPT_URL, urlText)
                                    set(CURLOPT_PROTOCOLS_STR, https)
                                    set(CURLOPT_REDIR_PROTOCOLS_STR, https)
                                    set(CURLOPT_FOLLOWLOCATION, 0)
                                    set(CURLOPT_NOSIGNAL, 1)
                                    set(CURLOPT_SSL_VERIFYPEER, 1)
                                    set(CURLOPT_SSL_VERIFYHOST, 2)
                                    set(CURLOPT_SSLVERSION, Int(CURL_SSLVERSION_TLSv1_2))
                                    if let caFile {
                                        set(CURLOPT_CAINFO, caFile)
                                        // Debian's libcurl has a built-in CA directory: without
                                        // this, a private CA file would add to the system's roots
                                        // instead of replacing them.
                                        if configuration.addsSystemRoots {
                                            Configuration.systemRootsDirectory.withCString { set(CURLOPT_CAPATH, $0) }
                                        } else {
                                            set(CURLOPT_CAPATH, nil)
                                        }
                                    }
                                    // libcurl takes a proxy from the environment (http_proxy,
                                    // ALL_PROXY) unless told not to. Plain HTTP goes only to
                                    // loopback or to an address aasad resolved and pinned: a
                                    // proxy would see the API token, or connect to wherever it
                                    // resolves the name itself.
                                    if scheme == "http" { "".withCString { set(CURLOPT_PROXY, $0) } }
                                    set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds)
                                    set(CURLOPT_TIMEOUT_MS, configuration.totalTimeoutMilliseconds)
                                    set(CURLOPT_USERAGENT, agent)
                                    set(CURLOPT_ERRORBUFFER, errors.baseAddress)
                                    if request.wantsCertificate {
                                        set(CURLOPT_CERTINFO, 1)
                                        set(CURLOPT_FRESH_CONNECT, 1)
                                    }
                                    if let connectList { set(CURLOPT_CONNECT_TO, UnsafeRawPointer(connectList)) }
                                    if CAASACurl_setopt_data_callback(curl, CURLOPT_WRITEFUNCTION, writeCallback) != CURLE_OK {
                                        failed = "write callback"
                                    }
                                    if CAASACurl_setopt_data_callback(curl, CURLOPT_HEADERFUNCTION, headerCallback) != CURLE_OK {
                                        failed = "header callback"
                                    }
                                    set(CURLOPT_WRITEDATA, context)
                                    set(CURLOPT_HEADERDATA, context)
                                    if configuration.isCancelled != nil {
                                        if CAASACurl_setopt_progress_callback(curl, progressCallback) != CURLE_OK {
                                            failed = "progress callback"
                                        }
                                        set(CURLOPT_XFERINFODATA, context)
                                        set(CURLOPT_NOPROGRESS, 0)
                                    }
                                    switch request.method {
                                    case .get: set(CURLOPT_HTTPGET, 1)
                                    case .head: set(CURLOPT_NOBODY, 1)
                                    case .post, .put:
                                        set(CURLOPT_POSTFIELDSIZE, bodyBytes.count)
                                        set(CURLOPT_POSTFIELDS, bodyBytes.baseAddress ?? UnsafeRawPointer(https))
                                    case .delete: set(CURLOPT_HTTPGET, 1)
                                    }
                                    if let customMethod { set(CURLOPT_CUSTOMREQUEST, customMethod) }
                                    if let headerList { set(CURLOPT_HTTPHEADER, UnsafeRawPointer(headerList)) }
                                    if failed != nil { return CURLE_FAILED_INIT }
                                    return curl_easy_perform(curl)
                                }
                            }
                        }
                    }
                }
            }
        }
        // The handle must not keep pointers to this call's buffers, lists and transfer, freed on
        // return, until the next reset.
        defer { curl_easy_reset(curl) }
        if let failed { throw OutboundError(.request, "libcurl refused \(failed)") }
        let certificate = request.wantsCertificate ? Self.leafCertificate(curl) : nil
        if let overflow = transfer.overflow {
            var error = OutboundError(.tooLarge, "\(request.url): \(overflow)")
            var status = 0
            if CAASACurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK, status > 0 { error.status = status }
            throw error
        }
        if code == CURLE_ABORTED_BY_CALLBACK { throw OutboundError(.request, "\(request.url): cancelled") }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
            var error = Self.classify(code, curl, "\(request.url): \(reason)", host: Self.host(of: request.url), certificate: certificate)
            // A chain OpenSSL refused ends the handshake before libcurl collects it: look again,
            // without verifying and without sending a request, to say what was presented.
            if request.wantsCertificate, certificate == nil, error.kind == .certificate {
                error.certificate = peekCertificate(curl, request)
            }
            throw error
        }
        var status = 0
        guard CAASACurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK else {
            throw OutboundError(.http, "\(request.url): no status")
        }
        return OutboundResponse(status: status, headers: transfer.headers, body: transfer.body, certificate: certificate)
    }

    /// The failed layer of a libcurl error code.
    private static func classify(
        _ code: CURLcode, _ curl: UnsafeMutableRawPointer, _ message: String, host: String, certificate: CertificateInfo?
    ) -> OutboundError {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return OutboundError(.dns, message)
        case CURLE_COULDNT_CONNECT: return OutboundError(.connect, message)
        case CURLE_OPERATION_TIMEDOUT: return OutboundError(.timeout, message)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_INVALIDCERTSTATUS:
            // OpenSSL's verdict on the chain says expired or not yet valid; curl's own host name
            // check leaves no code of its own, so the collected leaf's names say that.
            var result = 0
            _ = CAASACurl_getinfo_long(curl, CURLINFO_SSL_VERIFYRESULT, &result)
            let problem: OutboundError.CertificateProblem =
                switch Int32(clamping: result) {
                case X509_V_ERR_CERT_HAS_EXPIRED: .expired
                case X509_V_ERR_CERT_NOT_YET_VALID: .notYetValid
                case X509_V_ERR_HOSTNAME_MISMATCH: .nameMismatch
                default: certificate.map { !$0.covers(host) } == true ? .nameMismatch : .untrusted
                }
            return OutboundError(.certificate, message, certificateProblem: problem, certificate: certificate)
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_USE_SSL_FAILED, CURLE_SSL_SHUTDOWN_FAILED:
            return OutboundError(.tls, message)
        default: return OutboundError(.http, message)
        }
    }

    /// The server's leaf certificate, read by a TLS handshake alone (CURLOPT_CONNECT_ONLY: no
    /// request is sent) without verification, on a connection that is then closed. Only to
    /// describe a certificate that verification refused; nothing read over it is used.
    private func peekCertificate(_ curl: UnsafeMutableRawPointer, _ request: OutboundRequest) -> CertificateInfo? {
        curl_easy_reset(curl)
        var connectList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(connectList) }
        for entry in request.connectTo { connectList = curl_slist_append(connectList, entry) }
        let code: CURLcode = request.url.withCString { url in
            "https".withCString { https in
                _ = CAASACurl_setopt_pointer(curl, CURLOPT_URL, url)
                _ = CAASACurl_setopt_pointer(curl, CURLOPT_PROTOCOLS_STR, https)
                for (option, value) in [
                    (CURLOPT_CONNECT_ONLY, 1), (CURLOPT_SSL_VERIFYPEER, 0), (CURLOPT_SSL_VERIFYHOST, 0), (CURLOPT_CERTINFO, 1),
                    (CURLOPT_FRESH_CONNECT, 1), (CURLOPT_FORBID_REUSE, 1), (CURLOPT_NOSIGNAL, 1),
                    (CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds),
                    (CURLOPT_TIMEOUT_MS, configuration.totalTimeoutMilliseconds),
                ] {
                    guard CAASACurl_setopt_long(curl, option, value) == CURLE_OK else { return CURLE_FAILED_INIT }
                }
                if let connectList { _ = CAASACurl_setopt_pointer(curl, CURLOPT_CONNECT_TO, UnsafeRawPointer(connectList)) }
                return curl_easy_perform(curl)
            }
        }
        let certificate = code == CURLE_OK ? Self.leafCertificate(curl) : nil
        // The unverified connection must never serve a later request.
        curl_easy_reset(curl)
        return certificate
    }

    /// The host of an https URL (no user info is allowed in ours), lower case, without a port.
    static func host(of url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        if let end = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        if rest.hasPrefix("[") { return String(rest.prefix { $0 != "]" }.dropFirst()).lowercased() }
        if let colon = rest.lastIndex(of: ":") { rest = rest[..<colon] }
        return rest.lowercased()
    }

    /// The leaf of the chain libcurl collected (CURLOPT_CERTINFO: one list of `Name:value`
    /// lines per certificate, `Cert:` the PEM), read with OpenSSL; nil when there is none.
    private static func leafCertificate(_ curl: UnsafeMutableRawPointer) -> CertificateInfo? {
        var info: UnsafeMutablePointer<curl_certinfo>? = nil
        guard CAASACurl_getinfo_certinfo(curl, &info) == CURLE_OK, let info, info.pointee.num_of_certs > 0,
            var line = info.pointee.certinfo?[0]
        else { return nil }
        while true {
            if let data = line.pointee.data {
                let text = String(cString: data)
                if text.hasPrefix("Cert:") { return try? CertificateInfo(leafPEM: Array(text.utf8.dropFirst(5))) }
            }
            guard let next = line.pointee.next else { return nil }
            line = next
        }
    }
}

/// Runs `body` with a C string for `text`, or nil.
private func withOptionalCString<R>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// What the callbacks fill; handed to libcurl as an unretained pointer for one transfer, which
/// the caller keeps alive until curl_easy_perform returns.
private final class Transfer {
    let maximumBodyBytes: Int
    let isCancelled: (@Sendable () -> Bool)?
    var body: [UInt8] = []
    var headers = ResponseHeaders()
    /// Why the transfer was stopped by a bound; nil when it was not.
    var overflow: String?

    init(maximumBodyBytes: Int, isCancelled: (@Sendable () -> Bool)?) {
        self.maximumBodyBytes = maximumBodyBytes
        self.isCancelled = isCancelled
    }
}

/// CURLOPT_XFERINFOFUNCTION: aborts the transfer once its client is cancelled.
private let progressCallback: CAASACurl_progress_callback = { context, _, _, _, _ in
    guard let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    return transfer.isCancelled?() == true ? 1 : 0
}

/// CURLOPT_WRITEFUNCTION: appends to the transfer's body; returning less than given stops the
/// transfer (CURLE_WRITE_ERROR) once the body would pass the client's bound.
private let writeCallback: CAASACurl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, transfer.body.count + total <= transfer.maximumBodyBytes else {
        transfer.overflow = "the response body is over \(transfer.maximumBodyBytes) bytes"
        return 0
    }
    transfer.body += UnsafeRawBufferPointer(start: data, count: total)
    return total
}

/// CURLOPT_HEADERFUNCTION: one header line at a time into `ResponseHeaders`, bounded.
private let headerCallback: CAASACurl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, transfer.headers.add(line: UnsafeRawBufferPointer(start: data, count: total)) else {
        transfer.overflow = "the response header section is over \(ResponseHeaders.maximumBytes) bytes"
        return 0
    }
    return total
}
