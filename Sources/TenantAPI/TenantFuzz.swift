import HTTP1
import SafeText
import Served
import SiteStore
import StrictJSON

/// The checks of the tenant API's two fuzz targets (scripts/fuzz.sh `tokens` and `api`; the entry
/// point is Fuzz/Tenant/main.swift), shared with the replay tests (TenantFuzzReplayTests) so that
/// every corpus input and saved failure is asserted on in the normal test run. No socket and no
/// file: the parts that read outside bytes are driven as functions.
package enum TenantFuzz {
    /// What went wrong with one tokens file; empty when every check holds. Besides not crashing
    /// (AddressSanitizer watches libyaml underneath), an accepted file holds only tokens within
    /// the rules of docs/api.md: valid names and digests, each used once, patterns that are host
    /// names in their normal form, `*.suffix` never covering `suffix` itself; a refused one says
    /// why without a control or bidi character.
    package static func tokens(_ bytes: [UInt8]) -> [String] {
        var failures: [String] = []
        let text = String(decoding: bytes, as: UTF8.self)
        do {
            let tokens = try APITokensFile.parse(text)
            if tokens.count > APITokensFile.maximumTokens { failures.append("accepted \(tokens.count) tokens") }
            var names = Set<String>()
            var digests = Set<[UInt8]>()
            for token in tokens {
                if !APITokensFile.validName(token.name) { failures.append("a token name outside the rule: \(token.name.debugDescription)") }
                if !names.insert(token.name).inserted { failures.append("the name \(token.name) twice") }
                if token.digest.count != 32 { failures.append("\(token.name): a digest of \(token.digest.count) bytes") }
                if !digests.insert(token.digest).inserted { failures.append("\(token.name): a digest twice") }
                if token.hosts.isEmpty || token.hosts.count > APITokensFile.maximumPatterns {
                    failures.append("\(token.name): \(token.hosts.count) patterns")
                }
                for pattern in token.hosts { failures += patternFailures(pattern) }
            }
        } catch {
            if error.description.unicodeScalars.contains(where: TerminalText.isEscaped) {
                failures.append("a message with a control or bidi character: \(error.description.debugDescription)")
            }
        }
        // The same bytes as a pattern, and as a host against patterns.
        if case .success(let pattern) = APIHostPattern.parse(text) { failures += patternFailures(pattern) }
        if APIHostName.problem(Substring(text)) == nil {
            for pattern in [APIHostPattern.below("example.com"), .exact("example.com"), .below("com")] where pattern.matches(text) {
                let suffix = pattern.description.hasPrefix("*.") ? String(pattern.description.dropFirst(1)) : pattern.description
                if !text.hasSuffix(suffix) { failures.append("\(pattern) matches \(text.debugDescription)") }
            }
        }
        return failures
    }

    private static func patternFailures(_ pattern: APIHostPattern) -> [String] {
        var failures: [String] = []
        switch pattern {
        case .any:
            break
        case .exact(let name):
            if APIHostName.problem(Substring(name)) != nil || name.hasPrefix("*.") {
                failures.append("an exact pattern that is not a host: \(name.debugDescription)")
            }
            if !pattern.matches(name) { failures.append("\(name) does not match itself") }
        case .below(let suffix):
            if APIHostName.problem(Substring(suffix)) != nil || suffix.contains("*") {
                failures.append("a wildcard pattern whose suffix is not a host: \(suffix.debugDescription)")
            }
            if pattern.matches(suffix) { failures.append("*.\(suffix) covers \(suffix) itself") }
            if suffix.utf8.count <= HostName.maximumLength - 2, !pattern.matches("a." + suffix) {
                failures.append("*.\(suffix) does not cover a.\(suffix)")
            }
            if pattern.matches("a" + suffix) { failures.append("*.\(suffix) covers a\(suffix)") }
        }
        switch APIHostPattern.parse(pattern.description) {
        case .success(let again) where again == pattern: break
        default: failures.append("the pattern \(pattern.description.debugDescription) does not read back as itself")
        }
        return failures
    }

    /// The entity tag the request checks compare against.
    static let someETag = "\"" + String(repeating: "ab", count: 32) + "\""

    /// What went wrong with one request's bytes; empty when every check holds. The bytes are read
    /// as the listener reads a request (`APIConnection.read`), and what it passes goes through
    /// everything the handler parses before it touches a file: the route and `{host}`, the
    /// `Authorization` value, the list's query, If-Match and If-None-Match, and the PUT body. The
    /// same bytes are also given to each of those parts alone, so that the fuzzer reaches them
    /// without first forming a request. Every refusal must be an answer the listener can send.
    package static func request(_ bytes: [UInt8]) -> [String] {
        var failures: [String] = []
        switch APIConnection.read(bytes, limits: APIListenerLimits()) {
        case .incomplete:
            break
        case .refused(let response):
            failures += sendable(response, "listener")
        case .request(let request, let consumed):
            if consumed > bytes.count || request.body.count > APIListenerLimits().maximumBodyBytes {
                failures.append("the listener took \(consumed) bytes of \(bytes.count), a body of \(request.body.count)")
            }
            failures += passed(request)
            failures += handled(request)
        }
        let text = String(decoding: bytes, as: UTF8.self)
        let field = String(decoding: bytes.filter { ($0 >= 0x20 && $0 <= 0x7E) || $0 == 9 }, as: UTF8.self)
        let target = String(decoding: bytes.filter { $0 > 0x20 && $0 < 0x7F }, as: UTF8.self)
        failures += handled(
            APIRequest(
                method: "PUT", target: "/v1/sites/" + target,
                headers: [("authorization", field), ("if-match", field), ("if-none-match", field)], body: bytes))
        failures += handled(APIRequest(method: "GET", target: "/v1/sites?" + target))
        if text.utf8.elementsEqual(bytes) { failures += handled(APIRequest(method: "GET", target: text)) }
        return failures
    }

    /// What the listener promises the handler (APIRequest's documentation).
    private static func passed(_ request: APIRequest) -> [String] {
        var failures: [String] = []
        if request.method.isEmpty || !request.method.utf8.allSatisfy(HTTP1Parser.isTokenChar) {
            failures.append("a method that is not a token: \(request.method.debugDescription)")
        }
        if request.target.utf8.first != UInt8(ascii: "/") || !request.target.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
            failures.append("a target that is not origin-form: \(request.target.debugDescription)")
        }
        for (name, value) in request.headers {
            if name.isEmpty || !name.utf8.allSatisfy({ HTTP1Parser.isTokenChar($0) && !(0x41...0x5A).contains($0) }) {
                failures.append("a field name that is not a lower-case token: \(name.debugDescription)")
            }
            let bytes = Array(value.utf8)
            if !bytes.allSatisfy({ ($0 >= 0x20 && $0 <= 0x7E) || $0 == 9 }) || [0x20, 0x09].contains(bytes.first ?? 0)
                || [0x20, 0x09].contains(bytes.last ?? 0)
            {
                failures.append("a field value outside visible ASCII or with surrounding space: \(value.debugDescription)")
            }
        }
        return failures
    }

    /// Everything the handler parses of `request` before it acts.
    private static func handled(_ request: APIRequest) -> [String] {
        var failures: [String] = []
        let parts = request.target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = parts.first ?? ""
        switch TenantAPI.route(path) {
        case .refused(let response):
            failures += sendable(response, "route")
        case .list:
            if path != "/v1/sites" { failures.append("\(path.debugDescription) routed to the list") }
        case .site(let host), .verification(let host):
            // The name becomes a directory under sites/: one component, in the loader's own form.
            if APIHostName.problem(Substring(host)) != nil || host.contains("/") || host == "." || host == ".."
                || host.contains("%") || (try? HostName(parsing: host))?.name != host
            {
                failures.append("\(path.debugDescription) names the host \(host.debugDescription)")
            }
        }
        if let field = request.header("authorization"), let presented = TenantAPI.bearer(field) {
            if presented.isEmpty || presented.utf8.count > TenantAPI.maximumTokenLength || presented.first?.isWhitespace == true
                || presented.last?.isWhitespace == true
            {
                failures.append("a bearer token \(presented.debugDescription)")
            }
        }
        switch TenantAPI.listQuery(parts.count > 1 ? String(parts[1]) : "", token: "fuzz") {
        case .success(let query):
            if !(1...TenantAPI.maximumPageSize).contains(query.limit) { failures.append("a page of \(query.limit)") }
            if query.after != nil { failures.append("a cursor opened that this process never sealed") }
        case .failure(let refusal):
            failures += sendable(refusal.response, "query")
        }
        for current in [nil, someETag] {
            if let response = TenantAPI.preconditionFails(request, current: current) { failures += sendable(response, "precondition") }
        }
        var matching = request
        matching.headers = [("if-match", someETag)]
        if TenantAPI.preconditionFails(matching, current: someETag) != nil { failures.append("If-Match of the current ETag failed") }
        failures += body(request.body)
        return failures
    }

    /// A PUT body: accepted ones become files that read back as what they claim to be.
    private static func body(_ bytes: [UInt8]) -> [String] {
        switch SiteBody.parse(bytes) {
        case .failure(let problem):
            let json = Array("{\"problems\":[\(problem.json)]}".utf8)
            if (try? JSONParser.parse(json)) == nil { return ["a 422 body that is not JSON: \(problem)"] }
            return []
        case .success(let site):
            var failures: [String] = []
            for name in site.files.keys where !SiteFiles.names.contains(name) { failures.append("a body wrote \(name.debugDescription)") }
            for (name, kind) in [(SiteFiles.aasa, "object"), (SiteFiles.assetLinks, "array")] {
                guard let file = site.files[name] else { continue }
                guard let value = try? JSONParser.parse(file) else {
                    failures.append("\(name) is not JSON: \(String(decoding: file, as: UTF8.self).debugDescription)")
                    continue
                }
                let isKind = kind == "object" ? value.objectMembers != nil : value.arrayValue != nil
                if !isKind { failures.append("\(name) is not an \(kind)") }
                if !Array(SiteBody.text(value).utf8).elementsEqual(file) { failures.append("\(name) does not write back as itself") }
            }
            if site.files[SiteFiles.aasa] == nil { failures.append("a body without aasa was taken") }
            if let yaml = site.files[SiteFiles.settings] {
                let text = String(decoding: yaml, as: UTF8.self)
                let (settings, _) = SiteSettings.parse(text, file: SiteFiles.settings)
                if (site.files[SiteFiles.page] != nil) != (settings.page == SiteFiles.page) {
                    failures.append("the page file and site.yaml's page disagree: \(text.debugDescription)")
                }
            } else if site.files[SiteFiles.page] != nil {
                failures.append("a page without site.yaml naming it")
            }
            return failures
        }
    }

    /// Whether the listener can send `response` as it is: the fields pass its check, the body is
    /// JSON, and the head it writes is CRLF lines only.
    private static func sendable(_ response: APIResponse, _ part: String) -> [String] {
        var failures: [String] = []
        if let bad = APIConnection.badField(response) { failures.append("\(part): a field the listener refuses: \(bad.debugDescription)") }
        if (try? JSONParser.parse(response.body)) == nil {
            failures.append("\(part): a body that is not JSON: \(String(decoding: response.body, as: UTF8.self).debugDescription)")
        }
        let wire = APIConnection.serialize(response, withBody: false, close: true)
        for (i, byte) in wire.enumerated() {
            let bare = (byte == 0x0D && wire[safeIndex: i + 1] != 0x0A) || (byte == 0x0A && wire[safeIndex: i - 1] != 0x0D)
            if bare { failures.append("\(part): a bare CR or LF in the head") }
        }
        return failures
    }
}

extension Array where Element == UInt8 {
    fileprivate subscript(safeIndex index: Int) -> UInt8? { indices.contains(index) ? self[index] : nil }
}
