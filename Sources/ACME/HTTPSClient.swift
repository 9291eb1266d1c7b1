import CAASACurl
import Synchronization

/// One HTTP response as the ACME client reads it: bounded body and header section.
public struct HTTPSResponse: Sendable {
    public var status: Int
    public var headers: ACMEHeaders
    public var body: [UInt8]

    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// The outbound HTTPS client ACME speaks through (DESIGN.md: a maintained library, libcurl; see
/// docs/acme.md for why not URLSession): https only, certificate verification always on (with
/// the roots of `acme.directory-ca` when set), TLS 1.2 or newer, connect and total timeouts,
/// redirects never followed (RFC 8555 gives every URL explicitly; a redirect is the caller's to
/// judge), bodies and header sections bounded by `ACMELimits`. Blocking: it runs on the ACME
/// thread, never on a serving loop. One libcurl handle, reused (its connection cache keeps the
/// CA's connection alive), used by one request at a time.
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

    public init(configuration: Configuration = Configuration()) throws(ACMEError) {
        guard Self.globalInit, let curl = curl_easy_init() else { throw .transport("libcurl did not initialise") }
        self.configuration = configuration
        handle = Mutex(Handle(curl))
    }

    public enum Method: Sendable { case get, head, post }

    /// One request. `body` is sent with `contentType` on POST; `accept`, when given, is the
    /// Accept field (RFC 8555 §7.4.2 asks for `application/pem-certificate-chain`).
    public func request(
        _ method: Method, _ url: ACMEURL, body: [UInt8] = [], contentType: String = "application/jose+json", accept: String? = nil
    ) throws(ACMEError) -> HTTPSResponse {
        let result = handle.withLock { handle in
            Result { () throws(ACMEError) in
                try perform(handle.curl, method, url, body: body, contentType: contentType, accept: accept)
            }
        }
        return try result.get()
    }

    private func perform(
        _ curl: UnsafeMutableRawPointer, _ method: Method, _ url: ACMEURL, body: [UInt8], contentType: String, accept: String?
    ) throws(ACMEError) -> HTTPSResponse {
        curl_easy_reset(curl)
        let transfer = Transfer()
        let context = Unmanaged.passUnretained(transfer).toOpaque()
        var headerList: UnsafeMutablePointer<curl_slist>? = nil
        defer { curl_slist_free_all(headerList) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        var failed: String? = nil
        func set(_ option: CURLoption, _ value: Int) {
            if CAASACurl_setopt_long(curl, option, value) != CURLE_OK, failed == nil { failed = "option \(option.rawValue)" }
        }
        func set(_ option: CURLoption, _ value: UnsafeRawPointer?) {
            if CAASACurl_setopt_pointer(curl, option, value) != CURLE_OK, failed == nil { failed = "option \(option.rawValue)" }
        }
        let code: CURLcode = url.text.withCString { urlText in
            configuration.userAgent.withCString { agent in
                "https".withCString { https in
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
                                if let caFile { set(CURLOPT_CAINFO, caFile) }
                                set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeoutMilliseconds)
                                set(CURLOPT_TIMEOUT_MS, configuration.totalTimeoutMilliseconds)
                                set(CURLOPT_USERAGENT, agent)
                                set(CURLOPT_ERRORBUFFER, errors.baseAddress)
                                if CAASACurl_setopt_data_callback(curl, CURLOPT_WRITEFUNCTION, writeCallback) != CURLE_OK {
                                    failed = "write callback"
                                }
                                if CAASACurl_setopt_data_callback(curl, CURLOPT_HEADERFUNCTION, headerCallback) != CURLE_OK {
                                    failed = "header callback"
                                }
                                set(CURLOPT_WRITEDATA, context)
                                set(CURLOPT_HEADERDATA, context)
                                if let accept { headerList = curl_slist_append(headerList, "Accept: \(accept)") }
                                switch method {
                                case .get: set(CURLOPT_HTTPGET, 1)
                                case .head: set(CURLOPT_NOBODY, 1)
                                case .post:
                                    headerList = curl_slist_append(headerList, "Content-Type: \(contentType)")
                                    set(CURLOPT_POSTFIELDSIZE, bodyBytes.count)
                                    set(CURLOPT_POSTFIELDS, bodyBytes.baseAddress ?? UnsafeRawPointer(https))
                                }
                                if let headerList { set(CURLOPT_HTTPHEADER, UnsafeRawPointer(headerList)) }
                                if let failed { return CURLE_FAILED_INIT }
                                return curl_easy_perform(curl)
                            }
                        }
                    }
                }
            }
        }
        if let failed { throw .transport("libcurl refused \(failed)") }
        if let overflow = transfer.overflow { throw .transport("\(url): \(overflow)") }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let reason = String(cString: curl_easy_strerror(code))
            throw .transport("\(url): \(detail.isEmpty ? reason : detail)")
        }
        var status = 0
        guard CAASACurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK else { throw .transport("\(url): no status") }
        return HTTPSResponse(status: status, headers: transfer.headers, body: transfer.body)
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
    var body: [UInt8] = []
    var headers = ACMEHeaders()
    /// Why the transfer was stopped by a bound; nil when it was not.
    var overflow: String?
}

/// CURLOPT_WRITEFUNCTION: appends to the transfer's body; returning less than given stops the
/// transfer (CURLE_WRITE_ERROR) once the body would pass `ACMELimits.maximumBodyBytes`.
private let writeCallback: CAASACurl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, transfer.body.count + total <= ACMELimits.maximumBodyBytes else {
        transfer.overflow = "the response body is over \(ACMELimits.maximumBodyBytes) bytes"
        return 0
    }
    transfer.body += UnsafeRawBufferPointer(start: data, count: total)
    return total
}

/// CURLOPT_HEADERFUNCTION: one header line at a time into `ACMEHeaders`, bounded.
private let headerCallback: CAASACurl_data_callback = { data, size, count, context in
    guard let data, let context else { return 0 }
    let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
    let (total, overflow) = size.multipliedReportingOverflow(by: count)
    guard !overflow, transfer.headers.add(line: UnsafeRawBufferPointer(start: data, count: total)) else {
        transfer.overflow = "the response header section is over \(ACMELimits.maximumHeaderBytes) bytes"
        return 0
    }
    return total
}
