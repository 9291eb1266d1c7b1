import StrictJSON

// Longer than 400 lines on purpose: the statement list's decoder and its checks follow the format
// top-down (statements, relations, targets, fingerprints) and share their key tables.

/// A Digital Asset Links statement list, `/.well-known/assetlinks.json` (spec §4).
public struct AssetLinks: Sendable, Equatable {
    public enum Statement: Sendable, Equatable {
        /// `{"relation": […], "target": {…}}`
        case statement(relations: [String], target: Target)
        /// `{"include": "https://…"}`: another list is pulled in.
        case include(String)
    }

    public enum Target: Sendable, Equatable {
        case androidApp(packageName: String, fingerprints: [String])
        case web(site: String)
    }

    public var statements: [Statement]

    /// Android reads at most 1 MiB of the file (AOSP StatementService `StatementRetriever`,
    /// `HTTP_CONTENT_SIZE_LIMIT_IN_BYTES`, spec §4); Apple's 128 KB is for the AASA file only.
    public static let maximumFileSize = 1 << 20

    /// The most digits a port is read with: 65535 has five, so more can only be out of range (and
    /// are never converted, so a long run of digits cannot overflow).
    static let maximumPortDigits = 5

    /// Reads and validates a statement list the way Google's parser does (spec §4, S17's tests).
    public static func validate(_ bytes: [UInt8]) -> ValidationResult<AssetLinks> {
        var decoder = DocumentDecoder(bytes: bytes)
        let tooLarge =
            "the file is larger than 1 MiB (\(maximumFileSize) bytes); Android reads no more than that, so no app is verified for this domain; remove statements or move some into an included list"
        guard let json = decoder.readJSON(maximumSize: maximumFileSize, fileKind: "an assetlinks.json file", tooLarge: tooLarge) else {
            return ValidationResult(document: nil, diagnostics: decoder.finishedDiagnostics)
        }
        let document = decoder.decodeAssetLinks(json)
        return ValidationResult(document: document, diagnostics: decoder.finishedDiagnostics)
    }

    public static func validate(_ text: String) -> ValidationResult<AssetLinks> {
        validate(Array(text.utf8))
    }

    /// `kind/detail`, e.g. `delegate_permission/common.handle_all_urls`: both parts match
    /// `[a-z0-9_.]+` (AOSP StatementService `Relation`: `KIND_PATTERN`, `DETAIL_PATTERN`; Google's
    /// comptest 2107-2125). Nil when valid, else what is wrong.
    static func relationProblem(_ s: String) -> String? {
        let parts = s.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return "a relation is kind/detail with one \"/\"" }
        if !isRelationPart(parts[0]) { return "the kind (before \"/\") must be lower-case letters, digits, \"_\" or \".\"" }
        if !isRelationPart(parts[1]) { return "the detail (after \"/\") must be lower-case letters, digits, \"_\" or \".\"" }
        return nil
    }

    private static func isRelationPart(_ part: Substring) -> Bool {
        !part.isEmpty
            && part.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }
    }

    /// The parts of an `http[s]://host[:port]…` URL that Google's parser checks.
    struct WebURL: Equatable {
        /// `http` or `https`, lower case.
        var scheme: String
        var host: Substring
        /// The port written after the host, when there is one (already range-checked).
        var port: Int?
        /// Whatever follows the authority: empty, or starting with `/`, `?` or `#`.
        var rest: Substring

        /// True when the port is the scheme's default: Google and Android treat the URL as the
        /// one without it (details.md "if no port given, default port for scheme is assumed";
        /// AOSP `WebAsset` normalises the port).
        var hasDefaultPort: Bool { port == (scheme == "https" ? 443 : 80) }
    }

    /// Reads a web site or include URL the way Google's parser does (comptest 2207-2216,
    /// 5010-5011; AOSP `WebAsset.create`): an http or https scheme in any case, no user info, a
    /// fully qualified domain name (a trailing dot is fine, comptest 2204), an optional port in
    /// 1-65535. Returns what is wrong as a sentence when it cannot be read.
    static func parseWebURL(_ s: String) -> Result<WebURL, URLProblem> {
        guard let colon = s.firstIndex(of: ":"), s[colon...].hasPrefix("://") else {
            return .failure(URLProblem("has no scheme; write it as https://host"))
        }
        let scheme = s[..<colon].lowercased()
        guard scheme == "https" || scheme == "http" else {
            return .failure(URLProblem("is not an http or https URL"))
        }
        let afterScheme = s[s.index(colon, offsetBy: 3)...]
        let delimiters: Set<Character> = ["/", "?", "#"]
        let authorityEnd = afterScheme.firstIndex(where: delimiters.contains) ?? afterScheme.endIndex
        let authority = afterScheme[..<authorityEnd]
        if authority.contains("@") {
            return .failure(URLProblem("carries login information (user@); Google refuses it"))
        }
        var host = authority
        var port: Int?
        if authority.first == "[" {
            return .failure(URLProblem("names an IP address, not a fully qualified domain"))
        }
        if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                return .failure(URLProblem("has a port that is not a number"))
            }
            let significant = digits.drop { $0 == "0" }
            guard significant.utf8.count <= maximumPortDigits, let value = Int(significant.isEmpty ? "0" : significant),
                (1...65535).contains(value)
            else {
                return .failure(URLProblem("has a port outside 1-65535"))
            }
            port = value
        }
        if let problem = hostProblem(host) { return .failure(URLProblem(problem)) }
        return .success(WebURL(scheme: scheme, host: host, port: port, rest: afterScheme[authorityEnd...]))
    }

    /// A fully qualified domain name, ASCII (details.md: "only fully qualified domain names are
    /// permitted"): dot-separated labels of letters, digits and `-`, one trailing dot allowed.
    private static func hostProblem(_ host: Substring) -> String? {
        if host.isEmpty { return "has no host name" }
        // RFC 1035 §2.3.4: at most 253 characters, 63 per label.
        if host.utf8.count > 254 { return "has a host name longer than 253 characters" }
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count > 1 && labels.last == "" { labels.removeLast() }
        // A last label of digits alone is an IPv4 address (or no domain at all).
        if let last = labels.last, !last.isEmpty, last.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
            return "names an IP address, not a fully qualified domain"
        }
        let valid = labels.allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy {
                    (0x61...0x7A).contains($0) || (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D
                }
        }
        if valid { return nil }
        if host.unicodeScalars.contains(where: { !$0.isASCII }) {
            return "has a host name that is not ASCII; write its punycode (xn--) form"
        }
        return "does not name a fully qualified domain (letters, digits, \"-\" and dots; no IP literal)"
    }

    /// Why a URL cannot be read, as the end of a sentence that starts with the URL.
    struct URLProblem: Error, Equatable {
        var reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// A Java package name as Android requires for an application ID: two or more dot-separated
    /// identifiers, each starting with a letter, then letters, digits or `_`.
    static func isPackageName(_ s: String) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count >= 2 else { return false }
        return parts.allSatisfy { part in
            guard let first = part.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first) else { return false }
            return part.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_"
            }
        }
    }

    /// 32 upper-case hex octets separated by `:` (95 characters); lower case is refused as a
    /// malformed certificate by Google's parser (spec §4, S17 tests 2304–2314).
    static func isFingerprint(_ s: String) -> Bool {
        let octets = s.split(separator: ":", omittingEmptySubsequences: false)
        return octets.count == 32
            && octets.allSatisfy { o in
                o.utf8.count == 2 && o.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || ("A"..."F").contains($0) }
            }
    }
}

extension DocumentDecoder {
    mutating func decodeAssetLinks(_ json: JSONValue) -> AssetLinks? {
        guard let list = json.arrayValue else {
            error(
                .topLevelType, .root, json,
                "assetlinks.json must be a JSON array of statements, found \(json.typeName); wrap the statement in [ ]")
            return nil
        }
        if list.isEmpty {
            error(.assetLinksEmpty, .root, json, "the statement list is empty, so it associates no app; add a statement")
        }
        var statements: [AssetLinks.Statement] = []
        for (i, element) in list.enumerated() {
            let path = JSONPath.root.appending(i)
            guard let members = expectObject(element, path, "each statement") else { continue }
            if let include = member(members, "include") {
                // Google allows other non-standard fields beside "include" (comptest 2005), but
                // Android parses them too.
                // relation and target are an error below, not also an unknown key.
                warnUnknownKeys(members, path, known: ["include", "relation", "target"], context: "an include statement")
                checkAndroidValues(members, path, known: ["include", "relation", "target"])
                if member(members, "relation") != nil || member(members, "target") != nil {
                    error(
                        .includeStatement, path, nil,
                        "an include statement may not also carry \"relation\" or \"target\" (Google refuses the list, comptest 2004; Android ignores them); make them two statements"
                    )
                }
                if let url = expectString(include, path.appending("include"), "\"include\"") {
                    checkIncludeURL(url, include, path.appending("include"))
                    statements.append(.include(url))
                }
                continue
            }
            warnUnknownKeys(members, path, known: ["relation", "target", "relation_extensions"], context: "a statement")
            checkAndroidValues(members, path, known: ["relation", "target", "relation_extensions"])
            var relations: [String] = []
            if let relation = member(members, "relation") {
                let p = path.appending("relation")
                relations = expectStringArray(relation, p, "\"relation\"") ?? []
                if relation.arrayValue?.isEmpty == true {
                    error(.relation, p, relation, "\"relation\" is empty; App Links use [\"delegate_permission/common.handle_all_urls\"]")
                }
                for (j, r) in (relation.arrayValue ?? []).enumerated() {
                    if let s = r.stringValue, let problem = AssetLinks.relationProblem(s) {
                        error(
                            .relation, p.appending(j), r,
                            "\(problem), e.g. \"delegate_permission/common.handle_all_urls\"; Android's verifier rejects the whole file over one bad relation"
                        )
                    }
                }
            } else {
                error(
                    .missingKey, path.appending("relation"), nil,
                    "the statement needs \"relation\", e.g. [\"delegate_permission/common.handle_all_urls\"]")
            }
            if let extensions = member(members, "relation_extensions") {
                checkRelationExtensions(extensions, path.appending("relation_extensions"))
            }
            guard let targetValue = member(members, "target") else {
                error(
                    .missingKey, path.appending("target"), nil,
                    "the statement needs \"target\": {\"namespace\": \"android_app\", \"package_name\": …, \"sha256_cert_fingerprints\": […]}"
                )
                continue
            }
            if let target = decodeTarget(targetValue, path.appending("target")) {
                statements.append(.statement(relations: relations, target: target))
            }
        }
        return AssetLinks(statements: statements)
    }

    private mutating func decodeTarget(_ value: JSONValue, _ path: JSONPath) -> AssetLinks.Target? {
        guard let members = expectObject(value, path, "\"target\"") else { return nil }
        guard let nsValue = member(members, "namespace") else {
            error(.namespace, path.appending("namespace"), nil, "the target needs \"namespace\": \"android_app\" or \"web\"")
            return nil
        }
        guard let namespace = expectString(nsValue, path.appending("namespace"), "\"namespace\"") else { return nil }
        switch namespace {
        case "android_app":
            warnUnknownKeys(
                members, path, known: ["namespace", "package_name", "sha256_cert_fingerprints"], context: "an android_app target")
            checkAndroidValues(members, path, known: ["namespace", "package_name", "sha256_cert_fingerprints"])
            var package = ""
            if let p = member(members, "package_name") {
                package = expectString(p, path.appending("package_name"), "\"package_name\"") ?? ""
                if p.stringValue != nil && !AssetLinks.isPackageName(package) {
                    error(
                        .packageName, path.appending("package_name"), p,
                        "not a valid Android package name (dot-separated identifiers, e.g. \"com.example.app\")")
                }
            } else {
                error(
                    .missingKey, path.appending("package_name"), nil,
                    "an android_app target needs \"package_name\"" + Self.androidRejectsFile)
            }
            var fingerprints: [String] = []
            let fp = path.appending("sha256_cert_fingerprints")
            if let f = member(members, "sha256_cert_fingerprints") {
                fingerprints = expectStringArray(f, fp, "\"sha256_cert_fingerprints\"") ?? []
                if f.arrayValue?.isEmpty == true {
                    error(
                        .certificateFingerprint, fp, f, "at least one signing certificate fingerprint is needed" + Self.androidRejectsFile)
                }
                for (j, e) in (f.arrayValue ?? []).enumerated() {
                    guard let s = e.stringValue, !AssetLinks.isFingerprint(s) else { continue }
                    if AssetLinks.isFingerprint(s.uppercased()) {
                        // Google's parser calls lower case a malformed certificate (comptest
                        // 2312); Android compares the text with the upper-case hex it computes
                        // (AOSP AndroidAppAssetMatcher, StatementUtils.HEX_DIGITS).
                        error(
                            .certificateFingerprint, fp.appending(j), e,
                            "the fingerprint is in lower case: Google's parser refuses it as a malformed certificate and Android compares it with the upper-case form, so the app is never verified; write \(JSONValue.quote(s.uppercased()))"
                        )
                    } else {
                        error(
                            .certificateFingerprint, fp.appending(j), e,
                            "a SHA-256 fingerprint is 32 upper-case hex pairs separated by ':' (as keytool -list prints it)")
                    }
                }
            } else {
                error(.missingKey, fp, nil, "an android_app target needs \"sha256_cert_fingerprints\"" + Self.androidRejectsFile)
            }
            return .androidApp(packageName: package, fingerprints: fingerprints)
        case "web":
            warnUnknownKeys(members, path, known: ["namespace", "site"], context: "a web target")
            checkAndroidValues(members, path, known: ["namespace", "site"])
            guard let siteValue = member(members, "site") else {
                error(.missingKey, path.appending("site"), nil, "a web target needs \"site\", e.g. \"https://example.com\"")
                return nil
            }
            guard let site = expectString(siteValue, path.appending("site"), "\"site\"") else { return nil }
            checkSite(site, siteValue, path.appending("site"))
            return .web(site: site)
        default:
            error(
                .namespace, path.appending("namespace"), nsValue,
                "unknown namespace; use \"android_app\" or \"web\"" + Self.androidRejectsFile)
            return nil
        }
    }

    /// `target.site` is `http[s]://host[:port]` and nothing else (comptest 2207-2216): Google
    /// refuses a path (even a bare `/`), a query, a fragment or user info.
    /// AOSP's `AssetFactory`, `WebAsset.create` and `AndroidAppAsset.create` throw on these; the
    /// exception escapes `parseStatementList`, and `DomainVerifier` fails the whole domain.
    static let androidRejectsFile = "; Android's verifier then rejects the whole file, not just this statement"

    private mutating func checkSite(_ site: String, _ value: JSONValue, _ path: JSONPath) {
        switch AssetLinks.parseWebURL(site) {
        case .failure(let problem):
            error(
                .site, path, value,
                "the site \(problem.reason); a web target is \"https://host\" or \"https://host:port\"" + Self.androidRejectsFile)
        case .success(let url):
            if let first = url.rest.first {
                let part = first == "/" ? "a path (even a trailing \"/\")" : first == "?" ? "a query" : "a fragment"
                error(
                    .site, path, value,
                    "a web target names a whole site: Google refuses \(part) here (Android tolerates only a bare \"/\"); write \(JSONValue.quote(origin(site, url)))"
                )
            } else if url.hasDefaultPort {
                defaultPortWarning(site, url, value, path)
            }
        }
    }

    /// An include URL is https (an https site may not include an http list, comptest 5006) and
    /// readable (comptest 5010, 5011).
    private mutating func checkIncludeURL(_ string: String, _ value: JSONValue, _ path: JSONPath) {
        switch AssetLinks.parseWebURL(string) {
        case .failure(let problem):
            error(.includeStatement, path, value, "the included list's URL \(problem.reason); write https://host/path")
        case .success(let url):
            if url.scheme != "https" {
                error(
                    .includeStatement, path, value,
                    "an included list must be fetched over https://: Google and Android refuse an http list included from an https site")
            } else if url.hasDefaultPort {
                defaultPortWarning(string, url, value, path)
            }
        }
    }

    private mutating func defaultPortWarning(_ string: String, _ url: AssetLinks.WebURL, _ value: JSONValue, _ path: JSONPath) {
        warning(
            .siteDefaultPort, path, value,
            ":\(url.port ?? 0) is the default port of \(url.scheme); Google and Android read the URL as the one without it, and Google's documentation omits it: write \(JSONValue.quote(origin(string, url) + (url.rest.count > 200 ? "…" : url.rest)))"
        )
    }

    /// `scheme://host[:port]` as written, without a default port.
    private func origin(_ string: String, _ url: AssetLinks.WebURL) -> String {
        let scheme = string.prefix { $0 != ":" }
        let port = url.port.map { url.hasDefaultPort ? "" : ":\($0)" } ?? ""
        return "\(scheme)://\(url.host)\(port)"
    }

    /// Android parses every statement with its own reader (AOSP StatementService
    /// `JsonParser.parse`): an object's members may be strings, arrays, objects or booleans, an
    /// array's elements strings, arrays or objects. Anything else throws, which fails the whole
    /// file, not just the statement, so no link on the domain is verified. Walks the members not
    /// in `known` (those are type-checked where they are decoded).
    private mutating func checkAndroidValues(_ members: [JSONMember], _ path: JSONPath, known: [String]) {
        for m in members where !known.contains(m.key) {
            checkAndroidValue(m.value, path.appending(m.key), inArray: false)
        }
    }

    private mutating func checkAndroidValue(_ value: JSONValue, _ path: JSONPath, inArray: Bool) {
        switch value.kind {
        case .object(let members):
            for m in members { checkAndroidValue(m.value, path.appending(m.key), inArray: false) }
        case .array(let elements):
            for (i, e) in elements.enumerated() { checkAndroidValue(e, path.appending(i), inArray: true) }
        case .string:
            break
        case .bool:
            if inArray {
                error(
                    .androidValueType, path, value,
                    "Android's verifier accepts no boolean inside an array and then rejects the whole file; quote it or remove it")
            }
        case .number, .null:
            error(
                .androidValueType, path, value,
                "Android's verifier accepts only strings, arrays, objects and booleans in a statement; \(value.typeName) here makes it reject the whole file; quote it or remove it"
            )
        }
    }

    /// Android 15+ dynamic rules (developer.android.com configure-assetlinks; AOSP
    /// `StatementParser.parseDynamicAppLinkComponents`): `{"delegate_permission/common.handle_all_urls":
    /// {"dynamic_app_link_components": [{"/": s, "#": s, "?": {name: s}, "exclude": b, "comments": s}]}}`.
    /// Android discards rules of another shape (and fails the file on a component that is not an
    /// object), so a shape error is an error. Numbers and nulls are reported once, by the walk.
    private mutating func checkRelationExtensions(_ value: JSONValue, _ path: JSONPath) {
        checkAndroidValue(value, path, inArray: false)
        let handleAllURLs = "delegate_permission/common.handle_all_urls"
        let components = "dynamic_app_link_components"
        guard let members = shapeObject(value, path, "\"relation_extensions\"") else { return }
        for m in members where m.key != handleAllURLs {
            warning(
                .relationExtensions, path.appending(m.key), nil,
                "Android reads extensions of \(JSONValue.quote(handleAllURLs)) only; this one is ignored")
        }
        guard let handle = member(members, handleAllURLs),
            let handleMembers = shapeObject(handle, path.appending(handleAllURLs), "the handle_all_urls extension")
        else { return }
        warnUnknownKeys(handleMembers, path.appending(handleAllURLs), known: [components], context: "the handle_all_urls extension")
        let listPath = path.appending(handleAllURLs).appending(components)
        guard let list = member(handleMembers, components) else { return }
        guard let elements = list.arrayValue else {
            if list.isStringArrayOrObject {
                error(.relationExtensions, listPath, list, "\"\(components)\" must be an array of objects; Android ignores it otherwise")
            }
            return
        }
        if elements.isEmpty {
            warning(.relationExtensions, listPath, list, "no dynamic rules: an empty list changes nothing; remove it or add a rule")
        }
        for (i, element) in elements.enumerated() {
            let p = listPath.appending(i)
            guard let rule = shapeObject(element, p, "each dynamic rule") else { continue }
            warnUnknownKeys(rule, p, known: ["/", "?", "#", "exclude", "comments"], context: "a dynamic rule")
            for key in ["/", "#", "comments"] {
                if let v = member(rule, key), v.stringValue == nil, v.isStringArrayOrObject || v.boolValue != nil {
                    error(.relationExtensions, p.appending(key), v, "\(JSONValue.quote(key)) must be a string, found \(v.typeName)")
                }
            }
            if let query = member(rule, "?"), let entries = shapeObject(query, p.appending("?"), "\"?\" (parameter name to value)") {
                for e in entries where e.value.stringValue == nil && (e.value.isStringArrayOrObject || e.value.boolValue != nil) {
                    error(
                        .relationExtensions, p.appending("?").appending(e.key), e.value,
                        "each query parameter's value must be a string, found \(e.value.typeName)")
                }
            }
            if let exclude = member(rule, "exclude"), exclude.boolValue == nil, exclude.isStringArrayOrObject {
                let hint = exclude.stringValue.map { ["true", "false"].contains($0) ? "; write \($0) without quotes" : "" } ?? ""
                error(
                    .relationExtensions, p.appending("exclude"), exclude,
                    "\"exclude\" must be true or false, found \(exclude.typeName)\(hint)")
            }
        }
    }

    /// The members of an object in the dynamic rules; anything else but a number or null (those
    /// the walk reports) is a shape error.
    private mutating func shapeObject(_ value: JSONValue, _ path: JSONPath, _ what: String) -> [JSONMember]? {
        if let members = value.objectMembers { return members }
        if value.isStringArrayOrObject || value.boolValue != nil {
            error(.relationExtensions, path, value, "\(what) must be an object, found \(value.typeName); Android ignores it otherwise")
        }
        return nil
    }
}

extension JSONValue {
    /// A string, array or object: the kinds whose wrong use is a shape error rather than one
    /// Android's reader already fails on.
    fileprivate var isStringArrayOrObject: Bool {
        switch kind {
        case .string, .array, .object: true
        default: false
        }
    }
}
