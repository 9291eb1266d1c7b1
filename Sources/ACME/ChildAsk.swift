public import Outbound
import SafeText

/// The `acme.ask` contract (docs/acme.md, "The ask contract"): whether a child name of a wildcard
/// site may have a certificate of its own. Two forms, as the setting's value says:
///
/// - **a URL** (`https://…`, or `http://` to a loopback address): `GET URL?domain=NAME` (or
///   `&domain=NAME` when the URL has a query already), the name percent-encoded. 200 means yes;
///   any other status no (a redirect is not followed: Caddy's contract,
///   modules/caddytls/ondemand.go in caddyserver/caddy). No answer within the time limit, a
///   refused connection or a 5xx is a failure (`ChildLedger.Answer.failed`: a no kept for a
///   shorter time). The body is read up to `maximumBodyBytes` and ignored (reading stops there).
/// - **a program** (an absolute path): run with the name as its one argument, no shell
///   (`HookProgram`: descriptors 0 to 2 only, its own process group, killed at the time limit,
///   its output bounded). Exit status 0 means yes, any other no; killed or not run, a failure.
///
/// Blocking: called on the askers' threads (`ChildApprovals`), never on a serving loop.
public enum ChildAsk {
    /// The whole ask, connect included: the platform's API answers from its database in well under
    /// a second; 5 s covers a slow one, and an asker is held at most this long.
    public static let timeoutMilliseconds: Int32 = 5_000
    /// The TCP (and TLS) connect: an `ask` on the same machine or network connects at once.
    public static let connectTimeoutMilliseconds = 2_000
    /// The body read, at most (it is ignored): the answer is the status alone, so reading stops at
    /// this bound and a longer body changes nothing (a 200 is still a yes).
    public static let maximumBodyBytes = 16 * 1024
    /// The longest `acme.ask` value.
    public static let maximumLength = 2_048
    /// The User-Agent of asks.
    public static let userAgent = "aasad-ask"

    /// What `acme.ask` names.
    public enum Endpoint: Sendable, Equatable {
        case url(String)
        case program(String)

        /// The setting's value: an absolute path is a program, anything else a URL.
        public init(_ value: String) {
            self = value.hasPrefix("/") ? .program(value) : .url(value)
        }
    }

    /// Why `value` cannot be `acme.ask`, or nil: a program's absolute path, or an https URL (http
    /// to a loopback address only, as the tenant API's client allows), of visible ASCII, without
    /// a fragment.
    public static func problem(_ value: String) -> String? {
        guard !value.isEmpty, value.utf8.count <= maximumLength, value.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be an https URL or a program's absolute path, of at most \(maximumLength) visible ASCII characters"
        }
        switch Endpoint(value) {
        case .program: return nil
        case .url(let url):
            var request = OutboundRequest(url: url)
            request.allowsPlainHTTPToLoopback = true
            do {
                try OutboundClient.check(request)
            } catch {
                return "must be an https URL (or http to 127.0.0.1, [::1] or localhost) or a program's absolute path"
            }
            if url.contains("#") { return "must have no fragment (#…): the name is added to its query" }
            return nil
        }
    }

    /// `endpoint` with `domain=NAME` added to its query.
    public static func url(_ endpoint: String, name: String) -> String {
        let separator = endpoint.contains("?") ? (endpoint.hasSuffix("?") || endpoint.hasSuffix("&") ? "" : "&") : "?"
        return endpoint + separator + "domain=" + percentEncoded(name)
    }

    /// RFC 3986 §2.3: unreserved bytes as they are, every other byte `%XX`. Names reaching here are
    /// checked host names (letters, digits, '-', '.'), so nothing is encoded in practice; the
    /// encoding is what keeps the query one parameter whatever a caller passes.
    public static func percentEncoded(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Asks `endpoint` about `name`: the answer and, for the log, what was heard.
    package static func ask(
        _ endpoint: Endpoint, name: String, timeoutMilliseconds: Int32 = timeoutMilliseconds,
        isCancelled: (@Sendable () -> Bool)? = nil
    ) -> (answer: ChildLedger.Answer, detail: String) {
        switch endpoint {
        case .url(let base):
            var configuration = OutboundClient.Configuration()
            configuration.connectTimeoutMilliseconds = min(connectTimeoutMilliseconds, Int(timeoutMilliseconds))
            configuration.totalTimeoutMilliseconds = Int(timeoutMilliseconds)
            configuration.maximumBodyBytes = maximumBodyBytes
            configuration.userAgent = userAgent
            configuration.isCancelled = isCancelled
            var request = OutboundRequest(url: url(base, name: name))
            request.allowsPlainHTTPToLoopback = true
            let status: Int
            do {
                status = try OutboundClient(configuration: configuration).perform(request).status
            } catch  where error.kind == .tooLarge && error.status != nil {
                // The status came before the body: it is the answer.
                status = error.status ?? 0
            } catch {
                return (.failed, detail(of: error))
            }
            switch status {
            case 200: return (.yes, "200")
            case 500...: return (.failed, "\(status)")
            default: return (.no, "\(status)")
            }
        case .program(let path):
            do {
                let result = try HookProgram.run(path, [name], timeout: timeoutMilliseconds)
                if result.timedOut { return (.failed, "killed after \(timeoutMilliseconds) ms") }
                guard let status = result.status else { return (.failed, "killed by a signal") }
                return (status == 0 ? .yes : .no, "exit \(status)")
            } catch {
                return (.failed, "\(error)")
            }
        }
    }

    /// A failed ask as the log says it: libcurl's account, which may quote what the endpoint
    /// sent (its certificate's subject name), escaped (`TerminalText`).
    static func detail(of error: OutboundError) -> String { "\(error.kind.rawValue): \(TerminalText.escaped(error.message))" }
}
