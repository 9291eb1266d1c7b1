/// Every rule the validator checks, named after spec section 7 (`shared/spec/aasa-spec.md`).
/// The raw value is the stable identifier shown in `validate --format json`.
public enum Rule: String, Sendable, Codable, CaseIterable {
    // Bytes (spec §1.11, §7)
    case fileEmpty = "file-empty"
    case fileTooLarge = "file-too-large"
    case byteOrderMark = "byte-order-mark"
    case encoding = "encoding"
    // JSON (RFC 8259, spec §7)
    case jsonSyntax = "json-syntax"
    case duplicateKey = "duplicate-key"
    // Structure
    case topLevelType = "top-level-type"
    case noService = "no-service"
    case unknownKey = "unknown-key"
    case wrongType = "wrong-type"
    case missingKey = "missing-key"
    case appsEmpty = "apps-empty"
    case appIdentifier = "app-identifier"
    case duplicateAppIdentifier = "duplicate-app-identifier"
    case applinksAppsNotEmpty = "applinks-apps-not-empty"
    case applinksAppsMissing = "applinks-apps-missing"
    case detailsEmpty = "details-empty"
    case detailsDictionary = "details-dictionary"
    case detailNoApp = "detail-no-app"
    case appIDsEmpty = "appids-empty"
    case appIDIgnored = "appid-ignored"
    case detailNoPatterns = "detail-no-patterns"
    case pathsAndComponents = "paths-and-components"
    case patternsEmpty = "patterns-empty"
    case patternStart = "pattern-start"
    case patternCount = "pattern-count"
    case defaultsKeyIgnored = "defaults-key-ignored"
    // Substitution variables (spec §1.9)
    case variableName = "variable-name"
    case variableValue = "variable-value"
    case variableNoValues = "variable-no-values"
    case variableShadowsBuiltIn = "variable-shadows-built-in"
    case variableUndefined = "variable-undefined"
    case variableUnterminated = "variable-unterminated"
    // Digital Asset Links (spec §4)
    case assetLinksEmpty = "assetlinks-empty"
    case relation = "relation"
    case namespace = "namespace"
    case packageName = "package-name"
    case certificateFingerprint = "certificate-fingerprint"
    case includeStatement = "include-statement"
    case site = "site"
    // The report itself
    case moreFindings = "more-findings"
    // AASA findings that are likely mistakes rather than errors
    /// A team ID prefix of ten digits: almost always the App Store ID pasted by mistake (a warning,
    /// since a real Team ID of ten digits is possible, if rare).
    case teamIDLooksLikeAppStoreID = "team-id-app-store-id"
    // assetlinks.json
    /// `:443` on https or `:80` on http: the same site as without it (spec §4).
    case siteDefaultPort = "site-default-port"
    /// A number or null in a statement, or a boolean in an array: Android's parser fails the file.
    case androidValueType = "android-value-type"
    /// `relation_extensions` (Android 15+ dynamic rules) not in the documented shape.
    case relationExtensions = "relation-extensions"
    // A site's page (Sources/Served/Fallback.swift, LandingPage)
    /// The page holds a PEM private key: whatever path led to it, it is never served.
    case pagePrivateKey = "page-private-key"
}
