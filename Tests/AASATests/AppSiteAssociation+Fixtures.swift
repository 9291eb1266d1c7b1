@testable import AASA

/// Builders for test files: a valid skeleton with one part replaced.
enum AASAFixture {
    static let appID = "ABCDE12345.com.example.app"

    /// A file whose `applinks.details` is the given JSON array text.
    static func make(details: String, extraApplinks: String = "", extraTop: String = "") -> String {
        #"{"applinks": {"apps": [], "details": \#(details)\#(extraApplinks)}\#(extraTop)}"#
    }

    /// A file with one details entry holding the given components array text.
    static func make(components: String, extraApplinks: String = "", entryExtras: String = "") -> String {
        make(details: #"[{"appIDs": ["\#(appID)"], "components": \#(components)\#(entryExtras)}]"#, extraApplinks: extraApplinks)
    }

    static func validate(_ text: String) -> ValidationResult<AppSiteAssociation> {
        AppSiteAssociation.validate(text)
    }
}

extension ValidationResult {
    func has(_ rule: Rule, at path: String? = nil, severity: Diagnostic.Severity? = nil) -> Bool {
        diagnostics.contains { d in
            d.rule == rule && (path == nil || d.path?.description == path) && (severity == nil || d.severity == severity)
        }
    }

    var summary: String { diagnostics.map { "\($0.severity) \($0.rule.rawValue) \($0)" }.joined(separator: "\n") }
}
