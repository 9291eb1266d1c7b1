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
        #expect(r.diagnostics.contains { $0.message.contains("upper case") })
    }
}
