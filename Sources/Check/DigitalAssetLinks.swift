public import AASA
import Hashing
public import Outbound
import SafeText
import StrictJSON

/// One app as Android's verifier pairs it with a site: a package and one signing certificate's
/// SHA-256 fingerprint (32 upper-case hex pairs joined by `:`). Google's API lists one statement
/// per pair, so both sides are compared as sets of pairs.
public struct AndroidApp: Sendable, Hashable, Comparable, Encodable {
    public var packageName: String
    public var fingerprint: String

    public init(packageName: String, fingerprint: String) {
        self.packageName = packageName
        self.fingerprint = fingerprint
    }

    public static func < (a: AndroidApp, b: AndroidApp) -> Bool {
        (a.packageName, a.fingerprint) < (b.packageName, b.fingerprint)
    }

    public var description: String { "\(packageName) \(fingerprint)" }
}

/// What Google's Digital Asset Links API says its verifier sees for a site, read from one
/// `statements:list` answer (https://developers.google.com/digital-asset-links/reference/rest/v1/statements/list):
/// `{"statements": [{"source": {"web": {"site": …}}, "relation": …, "target": {"androidApp":
/// {"packageName": …, "certificate": {"sha256Fingerprint": …}}}}], "maxAge": "599.9s",
/// "debugString": …}`. The answer comes from a server this program does not control (a proxy, a
/// test server, an API that changed), so every value is checked before it is kept, and one that
/// is not what the API documents makes the whole answer an error, never printed as it came.
public struct DALListing: Sendable, Equatable {
    /// The `handle_all_urls` apps listed, without repeats.
    public var apps: Set<AndroidApp>
    /// `maxAge` as the API gave it (`599.998s`), when it has that form.
    public var maxAge: String?
    /// `debugString`, escaped for a terminal (`TerminalText`) and cut at `maximumDebugBytes`.
    public var debugString: String?

    public init(apps: Set<AndroidApp>, maxAge: String? = nil, debugString: String? = nil) {
        self.apps = apps
        self.maxAge = maxAge
        self.debugString = debugString
    }

    /// The relation App Links verification asks about (Android's `autoVerify`).
    public static let relation = "delegate_permission/common.handle_all_urls"

    /// The most statements read from one answer: an assetlinks.json holds far fewer (Android
    /// reads 1 MiB of it, `AssetLinks.maximumFileSize`, and a statement per app and certificate
    /// takes about 250 bytes of the API's answer, so 256 KB of answer, `CDNProbe.maximumBodyBytes`,
    /// holds about 1,000). More is refused rather than compared partly.
    public static let maximumStatements = 1_000
    /// The longest `debugString` kept: Google's is a few hundred bytes of errors and notes; the
    /// rest would only fill the report.
    public static let maximumDebugBytes = 4_096
    /// Android package names are at most 255 bytes (the file name limit of the app's data
    /// directory, `PackageManager`); a longer value is no package name.
    public static let maximumPackageNameBytes = 255
    /// `maxAge` is a protobuf Duration in JSON: seconds with up to nine decimals and `s`; at most
    /// 12 integer digits here (thousands of years), so a long run of digits is no duration.
    static let maximumAgeDigits = 12

    /// Why an answer was not read.
    public struct Refusal: Error, Sendable, Equatable {
        public var message: String

        public init(message: String) { self.message = message }
    }

    /// Reads a 200 answer for `host` (the site asked about: `https://HOST`).
    public static func read(_ body: [UInt8], host: String) -> Result<DALListing, Refusal> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            return .failure(Refusal(message: "the API's answer is not JSON (\(TerminalText.escaped(error.description)))"))
        }
        guard let members = value.objectMembers else {
            return .failure(Refusal(message: "the API's answer is \(value.typeName), not an object"))
        }
        var listing = DALListing(apps: [])
        if let age = member(members, "maxAge") {
            guard let text = age.stringValue, isDuration(text) else {
                return .failure(Refusal(message: "the API's maxAge \(quoted(age)) is not a duration such as \"599.5s\""))
            }
            listing.maxAge = text
        }
        if let debug = member(members, "debugString") {
            guard let text = debug.stringValue else {
                return .failure(Refusal(message: "the API's debugString is \(debug.typeName), not a string"))
            }
            listing.debugString = TerminalText.escaped(utf8: Array(text.utf8.prefix(maximumDebugBytes)))
        }
        guard let list = member(members, "statements") else { return .success(listing) }
        guard let statements = list.arrayValue else {
            return .failure(Refusal(message: "the API's statements is \(list.typeName), not a list"))
        }
        guard statements.count <= maximumStatements else {
            return .failure(
                Refusal(message: "the API lists \(statements.count) statements; more than \(maximumStatements) are not compared"))
        }
        for (index, statement) in statements.enumerated() {
            switch readStatement(statement, host: host) {
            case .failure(let refusal):
                return .failure(Refusal(message: "statements[\(index)]: \(refusal.message)"))
            case .success(let app?):
                listing.apps.insert(app)
            case .success(nil):
                continue
            }
        }
        return .success(listing)
    }

    /// One statement: its app, nil for a statement of another relation or about a web target
    /// (a site's link to another site: not what App Links verifies).
    private static func readStatement(_ statement: JSONValue, host: String) -> Result<AndroidApp?, Refusal> {
        guard let members = statement.objectMembers else { return .failure(Refusal(message: "\(statement.typeName), not an object")) }
        // Every statement must be about the site asked for: an answer about another site (a
        // caching proxy mixing answers up, a stand-in that ignores the query) says nothing about
        // this one, and comparing it would report differences that are not there.
        guard let site = string(members, "source", "web", "site") else {
            return .failure(Refusal(message: "no source.web.site"))
        }
        guard isSite(site, host: host) else {
            return .failure(Refusal(message: "the statement is about \(JSONValue.quote(cut(site))), not https://\(host)"))
        }
        guard string(members, "relation") == relation else { return .success(nil) }
        guard let target = member(members, "target")?.objectMembers else { return .failure(Refusal(message: "no target")) }
        guard member(target, "androidApp") != nil else { return .success(nil) }
        guard let package = string(target, "androidApp", "packageName"), isPackageName(package) else {
            let shown = string(target, "androidApp", "packageName").map { JSONValue.quote(cut($0)) } ?? "missing"
            return .failure(Refusal(message: "target.androidApp.packageName \(shown) is no Android package name"))
        }
        guard let fingerprint = string(target, "androidApp", "certificate", "sha256Fingerprint"), isFingerprint(fingerprint) else {
            let shown = string(target, "androidApp", "certificate", "sha256Fingerprint").map { JSONValue.quote(cut($0)) } ?? "missing"
            return .failure(
                Refusal(
                    message:
                        "target.androidApp.certificate.sha256Fingerprint \(shown) is no SHA-256 fingerprint (32 hex pairs joined by ':')"))
        }
        return .success(AndroidApp(packageName: package, fingerprint: fingerprint.uppercased()))
    }

    /// The apps a served assetlinks.json gives `handle_all_urls` to, and whether it includes
    /// other lists (whose apps Google also lists, but this program does not fetch).
    public static func served(_ document: AssetLinks) -> (apps: Set<AndroidApp>, includes: Bool) {
        var apps = Set<AndroidApp>()
        var includes = false
        for statement in document.statements {
            switch statement {
            case .include:
                includes = true
            case .statement(let relations, .androidApp(let package, let fingerprints)) where relations.contains(relation):
                for fingerprint in fingerprints { apps.insert(AndroidApp(packageName: package, fingerprint: fingerprint.uppercased())) }
            case .statement:
                continue
            }
        }
        return (apps, includes)
    }

    /// What the CDN watch keeps of a set of apps (`CDNWatchSchedule.Target.digest`, the copy's
    /// digest): SHA-256 of the pairs sorted, one `package fingerprint` line each, so that the
    /// served file's apps and the API's compare as sets.
    public static func digest(_ apps: Set<AndroidApp>) -> [UInt8] {
        Digest.sha256(Array(apps.sorted().map { $0.description + "\n" }.joined().utf8))
    }

    /// `https://HOST` as Google writes a site: the host in lower case, maybe with the root's
    /// trailing dot (`https://example.com.`), no port, path or user.
    static func isSite(_ site: String, host: String) -> Bool {
        var name = Substring(site.lowercased())
        guard name.hasPrefix("https://") else { return false }
        name = name.dropFirst("https://".count)
        if name.hasSuffix(".") { name = name.dropLast() }
        return name == host.lowercased()
    }

    /// Letters, digits, `_` and `.`, as Android's package names are (PackageParser's
    /// `validateName`), 255 bytes at most.
    static func isPackageName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumPackageNameBytes
            && name.utf8.allSatisfy {
                ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                    || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
            }
    }

    /// 32 hex pairs joined by `:` (95 bytes), in either case.
    static func isFingerprint(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 95 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 3 == 2 {
                guard byte == UInt8(ascii: ":") else { return false }
            } else if HexDigit.value(byte) == nil {
                return false
            }
        }
        return true
    }

    /// A protobuf Duration's JSON form: digits, optionally `.` and one to nine digits, then `s`.
    static func isDuration(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.last == UInt8(ascii: "s") else { return false }
        let number = bytes.dropLast().split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        let isDigits = { (part: ArraySlice<UInt8>) in part.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") } }
        switch number.count {
        case 1: return !number[0].isEmpty && number[0].count <= maximumAgeDigits && isDigits(number[0])
        case 2:
            return !number[0].isEmpty && number[0].count <= maximumAgeDigits && isDigits(number[0]) && (1...9).contains(number[1].count)
                && isDigits(number[1])
        default: return false
        }
    }

    private static func member(_ members: [JSONMember], _ key: String) -> JSONValue? {
        members.last { $0.key == key }?.value
    }

    /// The string at a path of object keys, nil when any step is missing or of another type.
    private static func string(_ members: [JSONMember], _ keys: String...) -> String? {
        var current = members
        for key in keys.dropLast() {
            guard let next = member(current, key)?.objectMembers else { return nil }
            current = next
        }
        return member(current, keys[keys.count - 1])?.stringValue
    }

    /// At most 100 characters of a value quoted into a message.
    private static func cut(_ text: String) -> String {
        text.unicodeScalars.count > 100 ? String(String.UnicodeScalarView(text.unicodeScalars.prefix(100))) + "…" : text
    }

    private static func quoted(_ value: JSONValue) -> String {
        value.stringValue.map { JSONValue.quote(cut($0)) } ?? value.typeName
    }
}

/// Asks Google's Digital Asset Links API for a site's statements through the one outbound client
/// (its bounds: verified TLS, the client's timeouts, 256 KB of body, no redirect followed: the
/// API answers in place, and a redirect would be a proxy's). `aasad check --dal` and the CDN
/// watch's Google part (`cdn-watch.google`) both ask through here.
public struct DALProbe: Sendable {
    /// Google's `statements:list` endpoint.
    public static let google = "https://digitalassetlinks.googleapis.com/v1/statements:list"
    /// The longest message kept from an error answer's `error.message`.
    static let maximumErrorMessageBytes = 512
    /// The longest API key taken: Google's keys are 39 bytes (`AIza` and 35 more); a key of
    /// kilobytes is no key and would only lengthen every request line.
    public static let maximumKeyBytes = 256

    let client: OutboundClient
    /// The endpoint; the query is appended.
    public let base: String
    /// curl's connect-to entries for the API's requests (a test server).
    public let connectTo: [String]
    /// Google's API key, sent as the `key` query parameter (the form Google's APIs take it in,
    /// https://cloud.google.com/docs/authentication/api-keys-use); nil: none (the quota is then
    /// per address). Never in a report, a log line or an error: `url(_:)` leaves it out and
    /// messages are redacted (`redacted(_:)`).
    let key: String?

    public init(client: OutboundClient, base: String, connectTo: [String] = [], key: String? = nil) {
        self.client = client
        self.base = base
        self.connectTo = connectTo
        self.key = key
    }

    /// Why `text` cannot be the endpoint (nil when it can): an https URL of visible ASCII, at
    /// most 2 KB, without a query or fragment of its own (the query is appended).
    public static func urlProblem(_ text: String) -> String? {
        guard text.lowercased().hasPrefix("https://"), text.utf8.count <= 2_048, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
            !text.contains("?"), !text.contains("#")
        else {
            return "must be an https URL without a query, e.g. \(google), not \"\(TerminalText.escaped(text))\""
        }
        return nil
    }

    /// Why `key` cannot be an API key (nil when it can): 1 to `maximumKeyBytes` bytes of
    /// letters, digits, `-`, `_`, `.` and `~` (RFC 3986's unreserved characters, which a query
    /// carries as they are, so no byte of it can end the request line or start another
    /// parameter; Google's keys are letters, digits, `-` and `_`). The message never quotes
    /// the key.
    public static func keyProblem(_ key: String) -> String? {
        let bytes = key.utf8
        let unreserved = bytes.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z"))
                || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_")
                || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "~")
        }
        guard !bytes.isEmpty, bytes.count <= maximumKeyBytes, unreserved else {
            return
                "must be 1 to \(maximumKeyBytes) bytes of letters, digits, '-', '_', '.' and '~' (a Google API key; the value given is not shown)"
        }
        return nil
    }

    /// The request URL for `host` as reports show it: `source.web.site` and the relation,
    /// percent-encoded; without the key.
    public func url(_ host: String) -> String {
        base + "?source.web.site=https%3A%2F%2F\(host)&relation=delegate_permission%2Fcommon.handle_all_urls"
    }

    /// `text` with the key, wherever it appears (an error echoing the request, a proxy's page
    /// quoting it), replaced by `[key]`.
    func redacted(_ text: String) -> String {
        guard let key, !key.isEmpty else { return text }
        return text.replacingOccurrences(of: key, with: "[key]")
    }

    /// An answer's body with the key replaced by `[key]` before anything reads it: what is read
    /// from it is cut (`maximumDebugBytes`, `maximumErrorMessageBytes`, a quoted site's 100
    /// characters), and a cut through the key would leave a prefix that `redacted(_:)` of the
    /// cut text no longer finds.
    func redacted(body: [UInt8]) -> [UInt8] {
        guard let key, !key.isEmpty, body.count >= key.utf8.count else { return body }
        let needle = Array(key.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(body.count)
        var index = 0
        while index < body.count {
            if body[index] == needle[0], index + needle.count <= body.count, body[index..<index + needle.count].elementsEqual(needle) {
                out.append(contentsOf: "[key]".utf8)
                index += needle.count
            } else {
                out.append(body[index])
                index += 1
            }
        }
        return out
    }

    /// One answer: the status (nil when none came) and either the listing or why there is none.
    public func observe(_ host: String) -> (status: Int?, result: Result<DALListing, DALListing.Refusal>) {
        var request = OutboundRequest(url: url(host) + (key.map { "&key=" + $0 } ?? ""))
        request.connectTo = connectTo
        var response: OutboundResponse
        do {
            response = try client.perform(request)
            response.body = redacted(body: response.body)
        } catch {
            return (nil, .failure(DALListing.Refusal(message: redacted(TerminalText.escaped(error.message)))))
        }
        guard response.status == 200 else {
            return (response.status, .failure(DALListing.Refusal(message: redacted(Self.errorMessage(response)))))
        }
        switch DALListing.read(response.body, host: host) {
        case .failure(let refusal): return (200, .failure(DALListing.Refusal(message: redacted(refusal.message))))
        case .success(var listing):
            listing.debugString = listing.debugString.map(redacted)
            return (200, .success(listing))
        }
    }

    /// What an answer other than 200 says: the status, and Google's `error.message` when the body
    /// is its error object (`{"error": {"code": 429, "message": …, "status": …}}`), escaped and cut.
    static func errorMessage(_ response: OutboundResponse) -> String {
        var message = "the API answered \(response.status)"
        if response.status == 429 { message += " (its quota is used up)" }
        if let value = try? JSONParser.parse(response.body), let error = value.objectMembers?.last(where: { $0.key == "error" }),
            let text = error.value.objectMembers?.last(where: { $0.key == "message" })?.value.stringValue
        {
            message += ": " + TerminalText.escaped(utf8: Array(text.utf8.prefix(maximumErrorMessageBytes)))
        }
        return message
    }
}

/// One API answer compared with the served file's apps: the state and the differences.
public struct DALComparison: Sendable {
    public var status: Int?
    public var result: Result<DALListing, DALListing.Refusal>
    public var served: Set<AndroidApp>

    public init(status: Int?, result: Result<DALListing, DALListing.Refusal>, served: Set<AndroidApp>) {
        self.status = status
        self.result = result
        self.served = served
    }

    /// Whether a listing may be the served file's own plus the lists it includes: the file
    /// includes other lists (Google follows them; `check` and the watch do not fetch them) and
    /// every app it names itself is listed. `check` then warns (`dal-include`) instead of
    /// reporting `dal-stale`, and the watch takes the listing as current.
    public static func mayComeFromIncludes(listed: Set<AndroidApp>, served: (apps: Set<AndroidApp>, includes: Bool)) -> Bool {
        served.includes && listed.isSuperset(of: served.apps)
    }

    /// The report for the request `url`.
    public func report(url: String) -> DALReport {
        var report = DALReport(url: url, state: .error)
        report.status = status
        switch result {
        case .failure(let refusal):
            report.error = refusal.message
        case .success(let listing):
            report.maxAge = listing.maxAge
            report.debugString = listing.debugString
            report.listed = listing.apps.sorted()
            report.onlyAtGoogle = listing.apps.subtracting(served).sorted()
            report.onlyServed = served.subtracting(listing.apps).sorted()
            report.state =
                listing.apps.isEmpty ? .missing : report.onlyAtGoogle.isEmpty && report.onlyServed.isEmpty ? .current : .stale
        }
        return report
    }
}
