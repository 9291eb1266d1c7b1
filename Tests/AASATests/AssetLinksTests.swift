import Testing

@testable import AASA

@Suite("assetlinks.json (spec §4)")
struct AssetLinksTests {
    static let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"

    static func statement(
        package: String = "com.example", fingerprints: String = "[\"\(fingerprint)\"]",
        relation: String = #"["delegate_permission/common.handle_all_urls"]"#
    ) -> String {
        #"{"relation": \#(relation), "target": {"namespace": "android_app", "package_name": "\#(package)", "sha256_cert_fingerprints": \#(fingerprints)}}"#
    }

    @Test("Android's documented statement list is valid")
    func validList() {
        let r = AssetLinks.validate("[\(Self.statement())]")
        #expect(r.isValid, "\(r.summary)")
        #expect(r.document?.statements.count == 1)
    }

    @Test("web targets and include statements are valid")
    func otherStatements() {
        let r = AssetLinks.validate(
            #"[{"relation": ["delegate_permission/common.get_login_creds"], "target": {"namespace": "web", "site": "https://example.com"}}, {"include": "https://example.com/more.json"}]"#
        )
        #expect(r.isValid, "\(r.summary)")
    }

    @Test(
        "invalid lists are refused with their rule",
        arguments: [
            ("{}", Rule.topLevelType),
            ("[]", .assetLinksEmpty),
            ("42", .topLevelType),
            ("[\(statement()),]", .jsonSyntax),
            ("[\(statement(package: ""))]", .packageName),
            ("[\(statement(package: "com"))]", .packageName),
            ("[\(statement(package: "com.1example"))]", .packageName),
            ("[\(statement(fingerprints: "[]"))]", .certificateFingerprint),
            ("[\(statement(fingerprints: "\"\(fingerprint)\""))]", .wrongType),
            ("[\(statement(fingerprints: "[\"\(fingerprint.lowercased())\"]"))]", .certificateFingerprint),
            ("[\(statement(fingerprints: "[\"14:6D\"]"))]", .certificateFingerprint),
            ("[\(statement(relation: "[]"))]", .relation),
            ("[\(statement(relation: #"["handle_all_urls"]"#))]", .relation),
            ("[\(statement(relation: #"["delegate_permission/Common"]"#))]", .relation),
            ("[\(statement(relation: #"[1]"#))]", .wrongType),
            (#"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "ios_app"}}]"#, .namespace),
            (#"[{"relation": ["delegate_permission/common.handle_all_urls"]}]"#, .missingKey),
            (#"[{"target": {"namespace": "web", "site": "https://e.com"}}]"#, .missingKey),
            (#"[{"include": "http://e.com/x.json"}]"#, .includeStatement),
            (#"[{"include": "https://e.com/x.json", "relation": []}]"#, .includeStatement),
            (#"[{"relation": ["a/b"], "target": {"namespace": "web", "site": "example.com"}}]"#, .site),
        ])
    func invalid(_ text: String, _ rule: Rule) {
        let r = AssetLinks.validate(text)
        #expect(!r.isValid, "accepted \(text)")
        #expect(r.has(rule, severity: .error), "\(text):\n\(r.summary)")
    }

    @Test("lower-case fingerprints get the advice to write upper case")
    func lowerCaseAdvice() {
        let r = AssetLinks.validate("[\(Self.statement(fingerprints: "[\"\(Self.fingerprint.lowercased())\"]"))]")
        #expect(r.diagnostics.contains { $0.message.contains("upper-case") })
    }

    // MARK: - Google's compatibility tests (google/digitalassetlinks
    // compatibility-tests/v1, "comptest" numbers) and Android's StatementService.

    static func web(_ site: String, relation: String = "delegate_permission/common.get_login_creds") -> String {
        #"[{"relation": ["\#(relation)"], "target": {"namespace": "web", "site": "\#(site)"}}]"#
    }

    @Test(
        "web sites Google's parser accepts are valid (comptest 2201, 2203, 2204, 2205)",
        arguments: [
            "https://target.digitalassetlinks.org",  // 2201
            "https://target.digitalassetlinks.org.",  // 2204: fully qualified, trailing dot
            "HtTpS://target.digitalassetlinks.org",  // 2205: mixed-case scheme
            "http://example.com",  // http is a supported scheme (details.md)
            "https://example.com:8443",  // 2203: a non-standard port
            "https://example.com:1",  // port bounds, N
            "https://example.com:65535",
        ])
    func validSite(_ site: String) {
        let r = AssetLinks.validate(Self.web(site))
        #expect(r.isValid, "\(site):\n\(r.summary)")
        #expect(r.diagnostics.isEmpty, "\(site):\n\(r.summary)")
    }

    @Test(
        "web sites Google's parser refuses are errors (comptest 2207-2216; AOSP WebAsset.create)",
        arguments: [
            "https://target.digitalassetlinks.org:999999",  // 2207: port out of range
            "mailto://user@digitalassetlinks.org",  // 2208: not http(s)
            "https://x:y@target.digitalassetlinks.org",  // 2209: login information
            "https://target.digitalassetlinks.org?bar",  // 2210: query
            "https://target.digitalassetlinks.org#bar",  // 2211: fragment
            "https://target.digitalassetlinks.org/",  // 2212: even a bare "/" is a path
            "https://target.digitalassetlinks.org/XXX",  // 2213
            "https://target.digitalassetlinks.org/XXX/",  // 2214
            "https://target.digitalassetlinks.org/*",  // 2215
            "target.digitalassetlinks.org",  // 2216: no scheme
            "https://example.com:0",  // port bounds, N+1 on each side
            "https://example.com:65536",
            "https://example.com:",  // an empty port
            "https://example.com:44a",
            "https://example.com:-443",
            "https://example.com:99999999999999999999999999",  // no overflow on a long port
            "https://",  // no host
            "https://exa mple.com",  // not a host name
            "https://a..b.com",
            "https://[::1]",  // only fully qualified domain names (details.md)
            "ftp://example.com",
        ])
    func invalidSite(_ site: String) {
        let r = AssetLinks.validate(Self.web(site))
        #expect(!r.isValid, "accepted \(site)")
        #expect(r.has(.site, at: "[0].target.site", severity: .error), "\(site):\n\(r.summary)")
    }

    @Test(
        "an explicit default port is a warning: Google and Android treat it as the site without it (details.md, WebAsset)",
        arguments: ["https://example.com:443", "http://example.com:80", "HTTPS://example.com:0443"])
    func defaultPort(_ site: String) {
        let r = AssetLinks.validate(Self.web(site))
        #expect(r.isValid, "\(site):\n\(r.summary)")
        #expect(r.has(.siteDefaultPort, at: "[0].target.site", severity: .warning), "\(site):\n\(r.summary)")
    }

    @Test("a port that is the other scheme's default is not flagged")
    func otherDefaultPort() {
        for site in ["http://example.com:443", "https://example.com:80"] {
            let r = AssetLinks.validate(Self.web(site))
            #expect(r.diagnostics.isEmpty, "\(site):\n\(r.summary)")
        }
    }

    @Test(
        "include URLs Google follows are valid (comptest 5001, 2005: other non-standard fields allowed)",
        arguments: [
            #"[{"include": "https://example.com/more.json"}]"#,
            #"[{"include": "https://example.com:8443/a/b.json?v=1"}]"#,
            #"[{"magicfield": {"foo": "bar"}, "include": "https://example.com/includefile.json"}]"#,
        ])
    func validInclude(_ text: String) {
        let r = AssetLinks.validate(text)
        #expect(r.isValid, "\(text):\n\(r.summary)")
        #expect(r.document?.statements.count == 1)
    }

    @Test(
        "include URLs Google refuses are errors (comptest 5006, 5010, 5011, 2004)",
        arguments: [
            #"[{"include": "http://example.com/x.json"}]"#,  // 5006: insecure include from a secure site
            #"[{"include": "https://target.digitalassetlinks.org:999999"}]"#,  // 5010
            #"[{"include": "mailto://user@digitalassetlinks.org"}]"#,  // 5011
            #"[{"include": "https://example.com:0/x.json"}]"#,
            #"[{"include": "example.com/x.json"}]"#,
            #"[{"include": "https:///x.json"}]"#,
            #"[{"include": "https://u:p@example.com/x.json"}]"#,
            #"[{"include": "https://example.com/x.json", "target": {"namespace": "web", "site": "https://e.com"}}]"#,  // 2004
            #"[{"include": "https://example.com/x.json", "relation": ["delegate_permission/common.handle_all_urls"]}]"#,
        ])
    func invalidInclude(_ text: String) {
        let r = AssetLinks.validate(text)
        #expect(!r.isValid, "accepted \(text)")
        #expect(r.has(.includeStatement, severity: .error), "\(text):\n\(r.summary)")
    }

    @Test("an include URL with the default port gets the same warning as a site")
    func includeDefaultPort() {
        let r = AssetLinks.validate(#"[{"include": "https://example.com:443/x.json"}]"#)
        #expect(r.isValid, "\(r.summary)")
        #expect(r.has(.siteDefaultPort, at: "[0].include", severity: .warning), "\(r.summary)")
    }

    @Test(
        "relations Google and Android accept are valid (comptest 2101-2105; AOSP Relation KIND_PATTERN [a-z0-9_.]+)",
        arguments: [
            "delegate_permission/common.handle_all_urls",  // 2101
            "delegate_permission/write_on_the_walls",  // 2102
            "delegate_permission/org.digitalassetlinks.write_on_the_walls",  // 2103
            "navigate/yellow_brick_road",  // 2104: other kinds parse
            "delegate_permission/get_login_creds",  // 2105
            "kind.v2/detail_9",  // Android's kind pattern allows digits and dots
        ])
    func validRelation(_ relation: String) {
        let r = AssetLinks.validate(Self.web("https://example.com", relation: relation))
        #expect(r.isValid, "\(relation):\n\(r.summary)")
        #expect(!r.has(.relation), "\(relation):\n\(r.summary)")
    }

    @Test(
        "relations Google and Android refuse are errors (comptest 2107, 2110-2125)",
        arguments: [
            "",  // 2107
            "delegate_permission/*",  // 2110
            "INVALID_KIND/write_on_the_walls",  // 2111
            "/write_on_the_walls",  // 2112
            "/",  // 2113
            "write_on_the_walls",  // 2114
            "delegate_permission",  // 2115
            "delegate_permission/write_on_the_walls/foo",  // 2116
            "delegate_permission,write_on_the_walls",  // 2117
            "delegate_permission/",  // 2118
            "delegate_permission/write on the walls",  // 2119
            "delegate_permission/write+on+the+walls",  // 2120
            "delegate_permission/write_on_the_walls!",  // 2121
            "delegate_permission/write_on_the_WALLS",  // 2122
            "delegate_permission/write_on_the_walls ",  // 2123
            " delegate_permission/write_on_the_walls",  // 2124
            "delegate_permission / write_on_the_walls",  // 2125
            "kind-x/detail",  // outside Android's KIND_PATTERN
        ])
    func invalidRelation(_ relation: String) {
        let r = AssetLinks.validate(Self.web("https://example.com", relation: relation))
        #expect(!r.isValid, "accepted \(relation)")
        #expect(r.has(.relation, at: "[0].relation[0]", severity: .error), "\(relation):\n\(r.summary)")
    }

    static let extra =
        #""relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "web", "site": "https://example.com"}"#

    @Test(
        "numbers and nulls anywhere in a statement, or booleans in an array, fail the whole file on Android (AOSP JsonParser.parse)",
        arguments: [
            #"[{\#(extra), "comment": 1}]"#,
            #"[{\#(extra), "note": null}]"#,
            #"[{\#(extra), "tags": [true]}]"#,
            #"[{\#(extra), "meta": {"n": 1.5}}]"#,
            #"[{\#(extra), "meta": [{"deep": [null]}]}]"#,
            #"[{"include": "https://example.com/x.json", "x": null}]"#,
            #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "web", "site": "https://example.com", "v": 2}}]"#,
            #"[{\#(extra), "relation_extensions": 0}]"#,
        ])
    func androidValueTypes(_ text: String) {
        let r = AssetLinks.validate(text)
        #expect(!r.isValid, "accepted \(text)")
        #expect(r.has(.androidValueType, severity: .error), "\(text):\n\(r.summary)")
        #expect(r.diagnostics.contains { $0.message.contains("Android") }, "\(r.summary)")
    }

    @Test(
        "strings, objects, arrays and booleans (not in arrays) in extra fields pass Android's parser (AOSP JsonParser.parse)",
        arguments: [
            #"[{\#(extra), "magic": {"foo": "bar"}}]"#,
            #"[{\#(extra), "flag": true}]"#,
            #"[{\#(extra), "list": ["a", {"b": "c", "d": false}, []]}]"#,
        ])
    func androidValueTypesAccepted(_ text: String) {
        let r = AssetLinks.validate(text)
        #expect(r.isValid, "\(text):\n\(r.summary)")
        #expect(!r.has(.androidValueType), "\(text):\n\(r.summary)")
    }

    static func dynamic(_ extensions: String) -> String {
        "[{\(extra), \"relation_extensions\": \(extensions)}]"
    }

    @Test("Android's documented dynamic rules are valid (configure-assetlinks, AOSP StatementParser.parseDynamicAppLinkComponents)")
    func validDynamicRules() {
        let r = AssetLinks.validate(
            Self.dynamic(
                ##"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"?": {"dl": "*"}}, {"#": "app"}, {"/": "/products/*"}, {"/": "/shoes", "?": {"in_app": "true"}}, {"/": "*", "exclude": true, "comments": "everything else"}]}}"##
            ))
        #expect(r.isValid, "\(r.summary)")
        #expect(r.diagnostics.isEmpty, "\(r.summary)")
    }

    @Test(
        "malformed dynamic rules are errors (Android discards them or fails the file)",
        arguments: [
            #""rules""#,
            #"{"delegate_permission/common.handle_all_urls": []}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": {"/": "/a"}}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": ["/a"]}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": ["/a"]}]}}"#,
            ##"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"#": {}}]}}"##,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"?": "dl=1"}]}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"?": {"dl": ["1"]}}]}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": "/a", "exclude": "true"}]}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": "/a", "comments": ["x"]}]}}"#,
        ])
    func invalidDynamicRules(_ extensions: String) {
        let text = Self.dynamic(extensions)
        let r = AssetLinks.validate(text)
        #expect(!r.isValid, "accepted \(text)")
        #expect(r.has(.relationExtensions, severity: .error), "\(text):\n\(r.summary)")
    }

    @Test(
        "doubtful dynamic rules are warnings",
        arguments: [
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": []}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": "/a", "comment": "Apple's spelling"}]}}"#,
            #"{"delegate_permission/common.get_login_creds": {}}"#,
            #"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_component": []}}"#,
        ])
    func doubtfulDynamicRules(_ extensions: String) {
        let text = Self.dynamic(extensions)
        let r = AssetLinks.validate(text)
        #expect(r.isValid, "\(text):\n\(r.summary)")
        #expect(!r.diagnostics.warnings.isEmpty, "\(text):\n\(r.summary)")
    }

    @Test("Apple's \"comment\" key in a dynamic rule gets the advice to write \"comments\"")
    func commentSpelling() {
        let r = AssetLinks.validate(
            Self.dynamic(#"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": "/a", "comment": "x"}]}}"#)
        )
        #expect(r.diagnostics.contains { $0.message.contains(#"did you mean "comments""#) }, "\(r.summary)")
    }

    @Test(
        "IP addresses and over-long names are no fully qualified domain, with that reason (details.md; RFC 1035 §2.3.4)",
        arguments: [
            "https://[::1]", "https://[::1]:443", "https://1.2.3.4", "https://127.0.0.1:8443",
            "https://" + String(repeating: "a", count: 64) + ".example.com",
            "https://" + Array(repeating: String(repeating: "a", count: 60), count: 5).joined(separator: ".") + ".com",
        ])
    func hostBounds(_ site: String) {
        let r = AssetLinks.validate(Self.web(site))
        #expect(!r.isValid, "accepted \(site)")
        #expect(r.diagnostics.allSatisfy { !$0.message.contains("not a number") }, "\(r.summary)")
        // A 63-character label is a host name.
        #expect(AssetLinks.validate(Self.web("https://" + String(repeating: "a", count: 63) + ".example.com")).isValid)
    }

    @Test("an include statement beside relation or target gets the one error, not also an unknown-key warning (comptest 2004)")
    func includeWithRelation() {
        let r = AssetLinks.validate(
            Array(#"[{"include": "https://a.example/x.json", "relation": ["delegate_permission/common.handle_all_urls"]}]"#.utf8))
        #expect(!r.isValid)
        #expect(!r.diagnostics.contains { $0.rule == .unknownKey }, "\(r.summary)")
    }

    @Test("a 1 MiB file of duplicate keys is reported in one pass: capped findings, each at its right line and column")
    func duplicateKeysAtScale() {
        let unit = #""a":1,"#
        let count = ((1 << 20) - 16) / unit.utf8.count
        let bytes = Array(("[{" + String(repeating: unit, count: count) + #""a":1}]"#).utf8)
        let r = AssetLinks.validate(bytes)
        #expect(!r.isValid)
        let first = r.diagnostics.first { $0.rule == .duplicateKey }
        #expect(first?.location == SourceLocation(offset: 8, in: bytes), "the second \"a\"")
        #expect(r.diagnostics.count <= 501)
    }

    /// A statement list padded with spaces to exactly `size` bytes.
    static func padded(to size: Int) -> String {
        let body = "[\(statement())"
        return body + String(repeating: " ", count: size - body.utf8.count - 1) + "]"
    }

    @Test("a file of exactly 1 MiB is valid: Android reads up to 1 MiB (AOSP StatementRetriever HTTP_CONTENT_SIZE_LIMIT_IN_BYTES)")
    func sizeLimit() {
        #expect(AssetLinks.maximumFileSize == 1 << 20)
        let text = Self.padded(to: AssetLinks.maximumFileSize)
        #expect(text.utf8.count == AssetLinks.maximumFileSize)
        let r = AssetLinks.validate(text)
        #expect(r.isValid, "\(r.summary)")
        // Apple's 128 KB limit is for the AASA file only.
        #expect(AssetLinks.validate(Self.padded(to: 131_073)).isValid)
    }

    @Test("a file one byte over 1 MiB is refused, with Android's limit and no AASA advice")
    func sizeLimitPlusOne() {
        let r = AssetLinks.validate(Self.padded(to: AssetLinks.maximumFileSize + 1))
        #expect(!r.isValid)
        #expect(r.has(.fileTooLarge, severity: .error), "\(r.summary)")
        let message = r.diagnostics.map(\.message).joined()
        #expect(message.contains("Android") && message.contains("1 MiB"), "\(message)")
        #expect(!message.contains("pattern") && !message.contains("128 KB"), "\(message)")
    }

    @Test("a lower-case fingerprint's message says why (comptest 2312, AndroidAppAssetMatcher) and gives the fixed value")
    func lowerCaseFingerprintMessage() {
        let r = AssetLinks.validate("[\(Self.statement(fingerprints: "[\"\(Self.fingerprint.lowercased())\"]"))]")
        #expect(r.has(.certificateFingerprint, at: "[0].target.sha256_cert_fingerprints[0]", severity: .error))
        let message = r.diagnostics.map(\.message).joined()
        #expect(message.contains(JSONValue.quote(Self.fingerprint)), "\(message)")
        #expect(message.contains("Android") && message.contains("Google"), "\(message)")
    }

    @Test("no finding about an assetlinks.json file gives Apple's advice")
    func noAppleAdvice() {
        let inputs = [
            Self.padded(to: AssetLinks.maximumFileSize + 1), "{}", "[]", "[1]", Self.web("https://e.com/"),
            "[\(Self.statement(fingerprints: "[\"\(Self.fingerprint.lowercased())\"]"))]",
            Self.dynamic(#"{"delegate_permission/common.handle_all_urls": {"dynamic_app_link_components": [{"/": 1}]}}"#),
        ]
        for text in inputs {
            for d in AssetLinks.validate(text).diagnostics {
                for word in ["AASA", "Apple", "iOS", "pattern", "128 KB"] {
                    #expect(!d.message.contains(word), "\(d.message)")
                }
            }
        }
    }
}
