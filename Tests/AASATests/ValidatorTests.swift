import Testing

@testable import AASA

@Suite("Validator: spec section 7")
struct ValidatorTests {
    typealias F = AASAFixture

    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        let text: String
        let rule: Rule
        let path: String?
        var testDescription: String { name }
    }

    /// Files that must not be published, with the rule and path that say why.
    static let invalid: [Case] = [
        Case(name: "empty file", text: "", rule: .fileEmpty, path: nil),
        Case(name: "byte-order mark", text: "\u{FEFF}{}", rule: .byteOrderMark, path: nil),
        Case(name: "syntax error", text: #"{"applinks": }"#, rule: .jsonSyntax, path: nil),
        Case(name: "trailing comma", text: F.make(components: #"[{"/": "/a"},]"#), rule: .jsonSyntax, path: nil),
        Case(name: "comment", text: "// hi\n" + F.make(components: "[]"), rule: .jsonSyntax, path: nil),
        Case(name: "top level is an array", text: "[]", rule: .topLevelType, path: "(top level)"),
        Case(name: "top level is a string", text: #""applinks""#, rule: .topLevelType, path: "(top level)"),
        Case(name: "empty object names no service", text: "{}", rule: .noService, path: "(top level)"),
        Case(name: "only unknown services", text: #"{"applink": {}}"#, rule: .noService, path: "(top level)"),
        Case(
            name: "duplicate key at top level",
            text: #"{"webcredentials": {"apps": ["ABCDE12345.a.b"]}, "webcredentials": {"apps": ["ABCDE12345.a.b"]}}"#, rule: .duplicateKey,
            path: "webcredentials"),
        Case(
            name: "duplicate key deep inside", text: F.make(components: #"[{"/": "/a", "/": "/b"}]"#), rule: .duplicateKey,
            path: #"applinks.details[0].components[0]["/"]"#),
        Case(name: "applinks not an object", text: #"{"applinks": []}"#, rule: .wrongType, path: "applinks"),
        Case(
            name: "applinks.apps not an array",
            text: #"{"applinks": {"apps": {}, "details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}}"#, rule: .wrongType,
            path: "applinks.apps"),
        Case(name: "details missing", text: #"{"applinks": {"apps": []}}"#, rule: .missingKey, path: "applinks.details"),
        Case(name: "details empty", text: F.make(details: "[]"), rule: .detailsEmpty, path: "applinks.details"),
        Case(name: "details a string", text: F.make(details: #""x""#), rule: .wrongType, path: "applinks.details"),
        Case(name: "details entry not an object", text: F.make(details: "[1]"), rule: .wrongType, path: "applinks.details[0]"),
        Case(
            name: "entry without appID or appIDs", text: F.make(details: #"[{"paths": ["*"]}]"#), rule: .detailNoApp,
            path: "applinks.details[0]"),
        Case(
            name: "appIDs empty", text: F.make(details: #"[{"appIDs": [], "paths": ["*"]}]"#), rule: .appIDsEmpty,
            path: "applinks.details[0].appIDs"),
        Case(
            name: "appIDs a string", text: F.make(details: #"[{"appIDs": "ABCDE12345.a.b", "paths": ["*"]}]"#), rule: .wrongType,
            path: "applinks.details[0].appIDs"),
        Case(
            name: "appIDs holds a number", text: F.make(details: #"[{"appIDs": [1], "paths": ["*"]}]"#), rule: .wrongType,
            path: "applinks.details[0].appIDs[0]"),
        Case(
            name: "malformed appID", text: F.make(details: #"[{"appID": "ABC.com.x", "paths": ["*"]}]"#), rule: .appIdentifier,
            path: "applinks.details[0].appID"),
        Case(
            name: "malformed appIDs element",
            text: F.make(details: #"[{"appIDs": ["ABCDE12345.com.x", "abcde12345.com.x"], "paths": ["*"]}]"#), rule: .appIdentifier,
            path: "applinks.details[0].appIDs[1]"),
        Case(
            name: "appID not a string", text: F.make(details: #"[{"appID": 5, "paths": ["*"]}]"#), rule: .wrongType,
            path: "applinks.details[0].appID"),
        Case(
            name: "neither paths nor components", text: F.make(details: #"[{"appID": "ABCDE12345.a.b"}]"#), rule: .detailNoPatterns,
            path: "applinks.details[0]"),
        Case(
            name: "paths not an array", text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "paths": "*"}]"#), rule: .wrongType,
            path: "applinks.details[0].paths"),
        Case(
            name: "paths holds a number", text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "paths": [1]}]"#), rule: .wrongType,
            path: "applinks.details[0].paths[0]"),
        Case(name: "components not an array", text: F.make(components: "{}"), rule: .wrongType, path: "applinks.details[0].components"),
        Case(
            name: "component not an object", text: F.make(components: #"["/a"]"#), rule: .wrongType,
            path: "applinks.details[0].components[0]"),
        Case(
            name: "/ not a string", text: F.make(components: #"[{"/": 1}]"#), rule: .wrongType,
            path: #"applinks.details[0].components[0]["/"]"#),
        Case(
            name: "# not a string", text: F.make(components: ##"[{"#": true}]"##), rule: .wrongType,
            path: ##"applinks.details[0].components[0]["#"]"##),
        Case(
            name: "? an array", text: F.make(components: #"[{"?": ["a"]}]"#), rule: .wrongType,
            path: #"applinks.details[0].components[0]["?"]"#),
        Case(
            name: "? dictionary value not a string", text: F.make(components: #"[{"?": {"id": 1}}]"#), rule: .wrongType,
            path: #"applinks.details[0].components[0]["?"].id"#),
        Case(
            name: "exclude a string", text: F.make(components: #"[{"exclude": "true"}]"#), rule: .wrongType,
            path: "applinks.details[0].components[0].exclude"),
        Case(
            name: "caseSensitive a number", text: F.make(components: #"[{"caseSensitive": 0}]"#), rule: .wrongType,
            path: "applinks.details[0].components[0].caseSensitive"),
        Case(
            name: "percentEncoded a string", text: F.make(components: #"[{"percentEncoded": "no"}]"#), rule: .wrongType,
            path: "applinks.details[0].components[0].percentEncoded"),
        Case(
            name: "comment not a string", text: F.make(components: #"[{"comment": 1}]"#), rule: .wrongType,
            path: "applinks.details[0].components[0].comment"),
        Case(
            name: "domain defaults wrong type", text: F.make(components: "[{}]", extraApplinks: #", "defaults": {"caseSensitive": "no"}"#),
            rule: .wrongType, path: "applinks.defaults.caseSensitive"),
        Case(
            name: "entry defaults not an object", text: F.make(components: "[{}]", entryExtras: #", "defaults": true"#), rule: .wrongType,
            path: "applinks.details[0].defaults"),
        Case(
            name: "substitutionVariables not an object", text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": []"#),
            rule: .wrongType, path: "applinks.substitutionVariables"),
        Case(
            name: "variable value not an array",
            text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"food": "taco"}"#), rule: .wrongType,
            path: "applinks.substitutionVariables.food"),
        Case(
            name: "variable value holds a number",
            text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"food": [1]}"#), rule: .wrongType,
            path: "applinks.substitutionVariables.food[0]"),
        Case(
            name: "percentEncoded placed inside substitutionVariables",
            text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"percentEncoded": false}"#), rule: .wrongType,
            path: "applinks.substitutionVariables.percentEncoded"),
        Case(
            name: "empty variable name", text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"": ["a"]}"#),
            rule: .variableName, path: #"applinks.substitutionVariables[""]"#),
        Case(
            name: "variable name with $", text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"a$b": ["a"]}"#),
            rule: .variableName, path: #"applinks.substitutionVariables["a$b"]"#),
        Case(
            name: "variable name with (", text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"a(b": ["a"]}"#),
            rule: .variableName, path: #"applinks.substitutionVariables["a(b"]"#),
        Case(
            name: "variable value using a variable",
            text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"a": ["$(b)"], "b": ["x"]}"#),
            rule: .variableValue, path: "applinks.substitutionVariables.a[0]"),
        Case(
            name: "undefined variable in /", text: F.make(components: #"[{"/": "/$(food)/*"}]"#), rule: .variableUndefined,
            path: #"applinks.details[0].components[0]["/"]"#),
        Case(
            name: "undefined variable in ?", text: F.make(components: #"[{"?": "$(nope)"}]"#), rule: .variableUndefined,
            path: #"applinks.details[0].components[0]["?"]"#),
        Case(
            name: "undefined variable in a query item", text: F.make(components: #"[{"?": {"q": "$(nope)"}}]"#), rule: .variableUndefined,
            path: #"applinks.details[0].components[0]["?"].q"#),
        Case(
            name: "undefined variable in #", text: F.make(components: ##"[{"#": "$(nope)"}]"##), rule: .variableUndefined,
            path: ##"applinks.details[0].components[0]["#"]"##),
        Case(
            name: "undefined variable in a legacy path",
            text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "paths": ["NOT /$(nope)"]}]"#), rule: .variableUndefined,
            path: "applinks.details[0].paths[0]"),
        Case(
            name: "webcredentials not an object", text: #"{"webcredentials": ["ABCDE12345.a.b"]}"#, rule: .wrongType, path: "webcredentials"
        ),
        Case(name: "webcredentials without apps", text: #"{"webcredentials": {}}"#, rule: .missingKey, path: "webcredentials.apps"),
        Case(name: "webcredentials apps empty", text: #"{"webcredentials": {"apps": []}}"#, rule: .appsEmpty, path: "webcredentials.apps"),
        Case(
            name: "appclips malformed app", text: #"{"appclips": {"apps": ["ABCDE12345"]}}"#, rule: .appIdentifier, path: "appclips.apps[0]"
        ),
        Case(
            name: "activitycontinuation apps a string", text: #"{"activitycontinuation": {"apps": "ABCDE12345.a.b"}}"#, rule: .wrongType,
            path: "activitycontinuation.apps"),
        Case(
            name: "legacy dictionary key malformed", text: F.make(details: #"{"com.example.app": {"paths": ["*"]}}"#), rule: .appIdentifier,
            path: #"applinks.details["com.example.app"]"#),
        Case(name: "legacy dictionary empty", text: F.make(details: "{}"), rule: .detailsEmpty, path: "applinks.details"),
    ]

    @Test("invalid files are refused with the rule and JSON path", arguments: invalid)
    func refusesInvalid(_ c: Case) {
        let r = F.validate(c.text)
        #expect(!r.isValid, "accepted: \(c.name)")
        #expect(
            r.has(c.rule, at: c.path, severity: .error), "\(c.name): expected \(c.rule.rawValue) at \(c.path ?? "-"), got:\n\(r.summary)")
    }

    /// Files that are valid but deserve a warning.
    static let warned: [Case] = [
        Case(
            name: "legacy dictionary details", text: F.make(details: #"{"ABCDE12345.com.x": {"paths": ["*"]}}"#), rule: .detailsDictionary,
            path: "applinks.details"),
        Case(
            name: "paths and components together", text: F.make(components: #"[{"/": "/a"}]"#, entryExtras: #", "paths": ["/a"]"#),
            rule: .pathsAndComponents, path: "applinks.details[0]"),
        Case(
            name: "appID beside appIDs",
            text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "appIDs": ["ABCDE12345.a.c"], "paths": ["*"]}]"#), rule: .appIDIgnored,
            path: "applinks.details[0].appID"),
        Case(
            name: "apps missing", text: #"{"applinks": {"details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}}"#,
            rule: .applinksAppsMissing, path: "applinks.apps"),
        Case(
            name: "apps missing, paths in a later entry beside components",
            text:
                #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{}]}, {"appID": "ABCDE12345.a.c", "paths": ["*"]}]}}"#,
            rule: .applinksAppsMissing, path: "applinks.apps"),
        Case(
            name: "apps missing, legacy dictionary details",
            text: #"{"applinks": {"details": {"ABCDE12345.a.b": {"paths": ["*"]}}}}"#, rule: .applinksAppsMissing, path: "applinks.apps"),
        // iOS 13+ ignores applinks.apps; a list there is a warning, not a refusal.
        Case(
            name: "applinks.apps not empty",
            text: #"{"applinks": {"apps": ["ABCDE12345.a.b"], "details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{}]}]}}"#,
            rule: .applinksAppsNotEmpty, path: "applinks.apps"),
        Case(
            name: "applinks.apps not empty, legacy paths",
            text: #"{"applinks": {"apps": ["ABCDE12345.a.b"], "details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}}"#,
            rule: .applinksAppsNotEmpty, path: "applinks.apps"),
        // a ten-digit prefix is the App Store ID pasted for the Team ID, wherever it is.
        Case(
            name: "App Store ID prefix in appIDs",
            text: F.make(details: #"[{"appIDs": ["1234567890.com.example.app"], "components": [{}]}]"#),
            rule: .teamIDLooksLikeAppStoreID, path: "applinks.details[0].appIDs[0]"),
        Case(
            name: "App Store ID prefix in appID", text: F.make(details: #"[{"appID": "6449876543.com.example.app", "paths": ["*"]}]"#),
            rule: .teamIDLooksLikeAppStoreID, path: "applinks.details[0].appID"),
        Case(
            name: "App Store ID prefix as a legacy details key",
            text: F.make(details: #"{"1234567890.com.example.app": {"paths": ["*"]}}"#),
            rule: .teamIDLooksLikeAppStoreID, path: "applinks.details[\"1234567890.com.example.app\"]"),
        Case(
            name: "App Store ID prefix in webcredentials", text: #"{"webcredentials": {"apps": ["1234567890.com.example.app"]}}"#,
            rule: .teamIDLooksLikeAppStoreID, path: "webcredentials.apps[0]"),
        Case(
            name: "App Store ID prefix in appclips", text: #"{"appclips": {"apps": ["1234567890.com.example.app.Clip"]}}"#,
            rule: .teamIDLooksLikeAppStoreID, path: "appclips.apps[0]"),
        Case(
            name: "unknown top-level key",
            text: #"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}, "foo": 1}"#, rule: .unknownKey,
            path: "foo"),
        Case(
            name: "unknown component key (typo)", text: F.make(components: #"[{"/": "/a", "excludes": true}]"#), rule: .unknownKey,
            path: "applinks.details[0].components[0].excludes"),
        Case(
            name: "unknown entry key", text: F.make(components: "[{}]", entryExtras: #", "appId": "x""#), rule: .unknownKey,
            path: "applinks.details[0].appId"),
        Case(name: "empty components", text: F.make(components: "[]"), rule: .patternsEmpty, path: "applinks.details[0].components"),
        Case(
            name: "empty paths", text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "paths": []}]"#), rule: .patternsEmpty,
            path: "applinks.details[0].paths"),
        Case(
            name: "path pattern without leading slash", text: F.make(components: #"[{"/": "buy/*"}]"#), rule: .patternStart,
            path: #"applinks.details[0].components[0]["/"]"#),
        Case(
            name: "legacy path without leading slash", text: F.make(details: #"[{"appID": "ABCDE12345.a.b", "paths": ["NOT buy"]}]"#),
            rule: .patternStart, path: "applinks.details[0].paths[0]"),
        Case(
            name: "unterminated variable", text: F.make(components: #"[{"/": "/$(lang"}]"#), rule: .variableUnterminated,
            path: #"applinks.details[0].components[0]["/"]"#),
        Case(
            name: "variable shadowing a built-in",
            text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"lang": ["en"]}"#), rule: .variableShadowsBuiltIn,
            path: "applinks.substitutionVariables.lang"),
        Case(
            name: "variable without values", text: F.make(components: "[{}]", extraApplinks: #", "substitutionVariables": {"v": []}"#),
            rule: .variableNoValues, path: "applinks.substitutionVariables.v"),
        Case(
            name: "exclude inside defaults", text: F.make(components: "[{}]", extraApplinks: #", "defaults": {"exclude": true}"#),
            rule: .defaultsKeyIgnored, path: "applinks.defaults.exclude"),
        Case(
            name: "app listed twice", text: F.make(details: #"[{"appIDs": ["ABCDE12345.a.b", "ABCDE12345.a.b"], "paths": ["*"]}]"#),
            rule: .duplicateAppIdentifier, path: "applinks.details[0].appIDs[1]"),
    ]

    @Test("suspicious but valid files are served with a warning", arguments: warned)
    func warns(_ c: Case) {
        let r = F.validate(c.text)
        #expect(r.isValid, "\(c.name) refused:\n\(r.summary)")
        #expect(
            r.has(c.rule, at: c.path, severity: .warning), "\(c.name): expected \(c.rule.rawValue) at \(c.path ?? "-"), got:\n\(r.summary)")
    }

    /// Valid files from Apple's documents and the spec's examples.
    static let valid: [(String, String)] = [
        (
            "Apple's current example (S1)",
            ##"""
            {
              "applinks": {
                  "details": [
                       {
                         "appIDs": [ "ABCDE12345.com.example.app", "ABCDE12345.com.example.app2" ],
                         "components": [
                           { "#": "no_universal_links", "exclude": true, "comment": "Matches any URL with a fragment that equals no_universal_links and instructs the system not to open it as a universal link." },
                           { "/": "/buy/*", "comment": "Matches any URL with a path that starts with /buy/." },
                           { "/": "/help/website/*", "exclude": true, "comment": "Matches any URL with a path that starts with /help/website/ and instructs the system not to open it as a universal link." },
                           { "/": "/help/*", "?": { "articleNumber": "????" }, "comment": "Matches any URL with a path that starts with /help/ and that has a query item with name 'articleNumber' and a value of exactly four characters." }
                         ]
                       }
                   ]
               },
               "webcredentials": { "apps": [ "ABCDE12345.com.example.app" ] },
               "appclips": { "apps": ["ABCDE12345.com.example.MyApp.Clip"] }
            }
            """##
        ),
        (
            "legacy iOS 9 file with NOT paths",
            #"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.com.example.app", "paths": ["NOT /videos/wwdc/2010/*", "/videos/wwdc/201?/*", "/"]}]}}"#
        ),
        ("webcredentials only", #"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#),
        ("appclips only, two clips", #"{"appclips": {"apps": ["ABCDE12345.com.example.app.Clip", "ABCDE12345.com.example.app.Clip2"]}}"#),
        ("activitycontinuation only", #"{"activitycontinuation": {"apps": ["ABCDE12345.com.example-app.app"]}}"#),
        (
            "substitution variables and defaults (WWDC20)",
            #"""
            {"applinks": {"apps": [],
              "defaults": {"caseSensitive": false},
              "substitutionVariables": {"food": ["burrito", "taco"], "Canadian food": ["poutine"]},
              "details": [{"appIDs": ["ABCDE12345.com.example.app"],
                           "defaults": {"percentEncoded": false},
                           "components": [{"/": "/$(lang)_$(region)/$(food)/*"}, {"/": "/$(Canadian food)"}]}]}}
            """#
        ),
        ("component {} matches everything", F.make(components: "[{}]")),
        ("empty path pattern for fragment-only links", F.make(components: ##"[{"/": "", "#": "coupon-*"}]"##)),
        ("Unicode in a pattern", F.make(components: #"[{"/": "/café/*", "percentEncoded": false}]"#)),
        ("exactly at the depth a real file uses", F.make(components: #"[{"?": {"a": "b"}}]"#)),
    ]

    @Test("valid files pass without errors", arguments: valid)
    func acceptsValid(name: String, text: String) {
        let r = F.validate(text)
        #expect(r.isValid, "\(name):\n\(r.summary)")
    }

    @Test("Apple's current example has no warning at all")
    func appleExampleIsClean() {
        let r = F.validate(Self.valid[0].1)
        #expect(r.diagnostics.isEmpty, "\(r.summary)")
    }

    // MARK: - findings tuned on deployed files

    /// Files using only `components` get no "apps missing" warning: iOS 12 reads only `paths`, so
    /// `apps` changes nothing for them (a third of deployed files are of this shape).
    @Test(
        "components-only files without applinks.apps get no apps-missing warning",
        arguments: [
            #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{"/": "/a/*"}]}]}}"#,
            #"{"applinks": {"details": [{"appID": "ABCDE12345.a.b", "components": [{}]}]}, "webcredentials": {"apps": ["ABCDE12345.a.b"]}}"#,
            #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": []}]}}"#,
        ])
    func noAppsMissingWarningForComponents(_ text: String) {
        let r = F.validate(text)
        #expect(r.isValid, "\(r.summary)")
        #expect(!r.has(.applinksAppsMissing), "\(r.summary)")
    }

    @Test("applinks.apps present and empty gives no apps warning either way")
    func emptyAppsIsClean() {
        for text in [
            #"{"applinks": {"apps": [], "details": [{"appID": "ABCDE12345.a.b", "paths": ["*"]}]}}"#,
            F.make(components: "[{}]"),
        ] {
            let r = F.validate(text)
            #expect(!r.has(.applinksAppsMissing) && !r.has(.applinksAppsNotEmpty), "\(r.summary)")
        }
    }

    @Test("a non-empty applinks.apps does not hide the errors of the rest of the file")
    func appsNotEmptyKeepsOtherErrors() {
        let r = F.validate(#"{"applinks": {"apps": ["ABCDE12345.a.b"], "details": []}}"#)
        #expect(!r.isValid)
        #expect(r.has(.applinksAppsNotEmpty, at: "applinks.apps", severity: .warning), "\(r.summary)")
        #expect(r.has(.detailsEmpty, at: "applinks.details", severity: .error), "\(r.summary)")
    }

    @Test(
        "a prefix that is not ten digits gives no App Store ID warning",
        arguments: ["ABCDE12345.com.example.app", "123456789A.com.example.app", "A123456789.com.example.app", "0000000000"])
    func noAppStoreIDWarning(_ id: String) {
        let r = F.validate(#"{"webcredentials": {"apps": ["\#(id)"]}}"#)
        #expect(!r.has(.teamIDLooksLikeAppStoreID), "\(r.summary)")
    }

    @Test("the App Store ID warning says where to find the Team ID, and the file stays valid")
    func appStoreIDWarningText() throws {
        let r = F.validate(F.make(details: #"[{"appIDs": ["1234567890.com.example.app"], "components": [{}]}]"#))
        #expect(r.isValid)
        let d = try #require(r.diagnostics.first { $0.rule == .teamIDLooksLikeAppStoreID })
        #expect(d.severity == .warning)
        #expect(d.message.contains("App Store ID"))
        #expect(d.message.contains("Membership"))
        #expect(d.message.contains("10 letters and digits"))
    }

    @Test("an App Store ID prefix with a malformed bundle ID is the existing error, not the warning")
    func appStoreIDWithOtherProblem() {
        let r = F.validate(#"{"webcredentials": {"apps": ["1234567890.com.example_app", "12345678901.com.example.app"]}}"#)
        #expect(r.has(.appIdentifier, at: "webcredentials.apps[0]", severity: .error), "\(r.summary)")
        #expect(r.has(.appIdentifier, at: "webcredentials.apps[1]", severity: .error), "\(r.summary)")
        #expect(!r.has(.teamIDLooksLikeAppStoreID), "\(r.summary)")
    }

    @Test(
        "a trailing comma is refused, saying Apple's own parser would accept it",
        arguments: [F.make(components: #"[{"/": "/a"},]"#), F.make(components: #"[{"/": "/a",}]"#)])
    func trailingCommaMessage(_ text: String) throws {
        let r = F.validate(text)
        #expect(!r.isValid)
        let d = try #require(r.diagnostics.first { $0.rule == .jsonSyntax })
        #expect(d.message.hasPrefix("trailing comma"), "\(d.message)")
        #expect(d.message.contains("JSONSerialization"), "\(d.message)")
        #expect(d.message.contains("safe default"), "\(d.message)")
    }

    @Test("other syntax errors and assetlinks.json trailing commas carry no note about Apple's parser")
    func trailingCommaNoteIsAASAOnly() throws {
        let comment = F.validate("// hi\n" + F.make(components: "[]"))
        #expect(!(comment.diagnostics.first?.message.contains("JSONSerialization") ?? true))
        let android = AssetLinks.validate(Array(#"[{"relation": ["delegate_permission/common.handle_all_urls"],}]"#.utf8))
        let d = try #require(android.diagnostics.first { $0.rule == .jsonSyntax })
        #expect(!d.message.contains("JSONSerialization"), "\(d.message)")
    }

    @Test("an entry with neither paths nor components stays an error, even beside a working one")
    func entryMatchingNothingIsRefused() {
        let r = F.validate(
            #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.a.b"], "components": [{}]}, {"appIDs": ["ABCDE12345.a.c"]}]}}"#)
        #expect(!r.isValid)
        #expect(r.has(.detailNoPatterns, at: "applinks.details[1]", severity: .error), "\(r.summary)")
    }

    @Test("a file of exactly 128 KB is accepted")
    func acceptsFileAtSizeLimit() {
        let skeleton = F.make(components: #"[{"/": "/x"}]"#)
        let padding = AppSiteAssociation.maximumFileSize - skeleton.utf8.count
        let text = skeleton + String(repeating: " ", count: padding)
        #expect(text.utf8.count == AppSiteAssociation.maximumFileSize)
        #expect(F.validate(text).isValid)
    }

    @Test("a file one byte over 128 KB is refused")
    func refusesFileOverSizeLimit() {
        let skeleton = F.make(components: #"[{"/": "/x"}]"#)
        let text = skeleton + String(repeating: " ", count: AppSiteAssociation.maximumFileSize - skeleton.utf8.count + 1)
        let r = F.validate(text)
        #expect(!r.isValid)
        #expect(r.has(.fileTooLarge))
    }

    @Test(
        "UTF-16 files are refused with advice to save as UTF-8",
        arguments: [
            [0xFE, 0xFF, 0x00, 0x7B, 0x00, 0x7D] as [UInt8],
            [0xFF, 0xFE, 0x7B, 0x00, 0x7D, 0x00],
            [0x00, 0x7B, 0x00, 0x7D],
            [0x7B, 0x00, 0x7D, 0x00],
        ])
    func refusesUTF16(bytes: [UInt8]) {
        let r = AppSiteAssociation.validate(bytes)
        #expect(!r.isValid)
        #expect(r.has(.encoding))
    }

    @Test("invalid UTF-8 is refused as an encoding problem")
    func refusesInvalidUTF8() {
        let r = AppSiteAssociation.validate([UInt8](#"{"a":""#.utf8) + [0xC3, 0x28] + [UInt8](#""}"#.utf8))
        #expect(r.has(.encoding, severity: .error))
    }

    @Test("messages say the path, then the value, then the rule and what to do")
    func messageFormat() {
        let r = F.validate(F.make(details: #"[{"appID": "ABC.com.x", "paths": ["*"]}]"#))
        let d = r.diagnostics.first { $0.rule == .appIdentifier }
        #expect(
            d?.description.hasPrefix(#"applinks.details[0].appID: "ABC.com.x" — the team ID prefix must be 10 characters"#) == true,
            "\(d?.description ?? "none")")
        #expect(d?.location?.line == 1)
    }

    @Test("a typo in a key suggests the known key")
    func suggestsKnownKey() {
        let r = F.validate(F.make(components: #"[{"/": "/a", "caseSensitve": false}]"#))
        #expect(r.diagnostics.contains { $0.message.contains(#"did you mean "caseSensitive"?"#) })
    }

    @Test("an undefined variable suggests a near name")
    func suggestsVariable() {
        let r = F.validate(F.make(components: #"[{"/": "/$(langs)/*"}]"#))
        #expect(r.diagnostics.contains { $0.message.contains("did you mean $(lang)?") })
    }

    @Test("every problem of a file is reported in one run")
    func reportsAllProblems() {
        let r = F.validate(F.make(details: #"[{"appID": "bad", "paths": ["*"]}, {"appIDs": [], "components": [{"exclude": "yes"}]}]"#))
        #expect(r.has(.appIdentifier, at: "applinks.details[0].appID"))
        #expect(r.has(.appIDsEmpty, at: "applinks.details[1].appIDs"))
        #expect(r.has(.wrongType, at: "applinks.details[1].components[0].exclude"))
    }

    @Test("many patterns give a warning past the named bound")
    func warnsAboutPatternCount() {
        let n = AppSiteAssociation.largePatternCount
        let at = F.make(components: "[" + Array(repeating: #"{"/": "/a"}"#, count: n).joined(separator: ",") + "]")
        let over = F.make(components: "[" + Array(repeating: #"{"/": "/a"}"#, count: n + 1).joined(separator: ",") + "]")
        #expect(!F.validate(at).has(.patternCount))
        #expect(F.validate(over).has(.patternCount, severity: .warning))
    }

    @Test("a hostile file cannot produce an unbounded report")
    func boundsDiagnostics() {
        let text = F.make(components: "[" + Array(repeating: #"{"x": 1}"#, count: 3_000).joined(separator: ",") + "]")
        let r = F.validate(text)
        #expect(r.diagnostics.count <= DocumentDecoder.maximumDiagnostics + 1)
        #expect(r.has(.moreFindings))
    }

    @Test("the model keeps what the file says, in order")
    func decodesModel() throws {
        let r = F.validate(Self.valid[5].1)
        let applinks = try #require(r.document?.applinks)
        #expect(applinks.defaults == PatternDefaults(caseSensitive: false))
        #expect(applinks.substitutionVariables.map(\.name) == ["food", "Canadian food"])
        #expect(applinks.details[0].defaults == PatternDefaults(percentEncoded: false))
        #expect(applinks.details[0].components?.map(\.path) == ["/$(lang)_$(region)/$(food)/*", "/$(Canadian food)"])
    }

    @Test("appIDs wins over appID even when empty (spec §1.3)")
    func appIDsWins() throws {
        let d = Detail(appID: "ABCDE12345.a.b", appIDs: [])
        #expect(d.apps.isEmpty)
        #expect(Detail(appID: "ABCDE12345.a.b").apps == ["ABCDE12345.a.b"])
    }
}
