import Testing

@testable import AASA

/// Builds a matcher from file text (which must be valid) and answers one URL.
private func verdict(_ text: String, _ url: String) throws -> MatchResult {
    let r = AppSiteAssociation.validate(text)
    let file = try #require(r.document, "invalid: \(r.summary)")
    #expect(r.isValid, "\(r.summary)")
    return try Matcher(file).evaluate(try LinkURL(parsing: url))
}

/// True when the single app of a one-entry file opens the URL.
private func opens(_ text: String, _ url: String) throws -> Bool {
    try verdict(text, url).opener != nil
}

private func components(_ list: String, applinks: String = "", entry: String = "") -> String {
    AASAFixture.make(components: list, extraApplinks: applinks, entryExtras: entry)
}

private func paths(_ list: String) -> String {
    AASAFixture.make(details: #"[{"appID": "ABCDE12345.com.example.app", "paths": \#(list)}]"#)
}

@Suite("Pattern language (spec §1.7)")
struct PatternLanguageTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let pattern: String
        let path: String
        let matches: Bool
        var testDescription: String { "\(pattern) \(matches ? "matches" : "does not match") \(path)" }
    }

    static let rows: [Row] = [
        Row(pattern: "/buy/*", path: "/buy/1", matches: true),
        Row(pattern: "/buy/*", path: "/buy/", matches: true),
        Row(pattern: "/buy/*", path: "/buy", matches: false),  // trailing slash is significant
        Row(pattern: "/buy/*", path: "/buy/a/b/c", matches: true),  // * crosses /
        Row(pattern: "*", path: "/", matches: true),  // * alone is the whole site
        Row(pattern: "*", path: "/anything/at/all", matches: true),
        Row(pattern: "/", path: "/", matches: true),
        Row(pattern: "/", path: "/a", matches: false),
        Row(pattern: "/*/order/", path: "/taco/order/", matches: true),  // WWDC19
        Row(pattern: "/*/order/", path: "/a/b/order/", matches: true),  // backtracking
        Row(pattern: "/*/order/", path: "/taco/order/x", matches: false),  // anchored
        Row(pattern: "/201?/*", path: "/2019/x", matches: true),
        Row(pattern: "/201?/*", path: "/201/x", matches: false),  // ? is exactly one
        Row(pattern: "/a?c", path: "/a/c", matches: true),  // ? matches / (inferred)
        Row(pattern: "/?*", path: "/", matches: false),  // ?* is one or more
        Row(pattern: "/?*", path: "/x", matches: true),
        Row(pattern: "/a.b", path: "/a.b", matches: true),  // . is literal
        Row(pattern: "/a.b", path: "/axb", matches: false),
        Row(pattern: "/[ab]", path: "/a", matches: false),  // no bracket classes
        Row(pattern: "/[ab]", path: "/[ab]", matches: true),
        Row(pattern: "/a+b", path: "/a+b", matches: true),
        Row(pattern: "/Buy", path: "/buy", matches: false),  // case-sensitive by default
        Row(pattern: "/a**b", path: "/ab", matches: true),
        Row(pattern: "", path: "", matches: true),  // empty path, WWDC19 fragment example
        Row(pattern: "", path: "/", matches: false),
        Row(pattern: "/", path: "", matches: false),
    ]

    @Test("wildcards, anchoring and literals", arguments: rows)
    func row(_ r: Row) throws {
        let file = components(#"[{"/": \#(JSONValue.quote(r.pattern))}]"#)
        let url = "https://example.com" + r.path
        #expect(try opens(file, url) == r.matches)
    }

    @Test("a hostile pattern on a long path is decided without exponential work")
    func hostilePatternIsLinear() throws {
        let pattern = "/" + String(repeating: "*a", count: 200) + "*b"
        let file = components(#"[{"/": "\#(pattern)"}]"#)
        let path = "/" + String(repeating: "a", count: 4_000)
        #expect(try opens(file, "https://example.com" + path) == false)
        #expect(try opens(file, "https://example.com" + path + "b") == true)
    }
}

@Suite("Legacy paths (spec §1.4)")
struct LegacyPathTests {
    @Test("NOT excludes and evaluation stops at the first match")
    func notStops() throws {
        let file = paths(#"["NOT /videos/wwdc/2010/*", "/videos/wwdc/201?/*"]"#)
        let blocked = try verdict(file, "https://example.com/videos/wwdc/2010/x")
        #expect(blocked.apps.first?.decision == .block)
        #expect(blocked.apps.first?.decidedBy?.rule == #""NOT /videos/wwdc/2010/*""#)
        let opened = try verdict(file, "https://example.com/videos/wwdc/2011/x")
        #expect(opened.opener?.decidedBy?.pattern == 1)
        #expect(opened.opener?.decidedBy?.source == .paths)
    }

    @Test("only NOT in capitals with one space excludes; other spellings are literal")
    func onlyExactNOT() throws {
        #expect(try verdict(paths(#"["not /a", "*"]"#), "https://e.com/a").apps[0].decision == .match)
        #expect(try verdict(paths(#"["NOT/a", "*"]"#), "https://e.com/a").apps[0].decision == .match)
        #expect(try verdict(paths(#"["NOT /a", "*"]"#), "https://e.com/a").apps[0].decision == .block)
    }

    @Test("paths see only the path: query and fragment are ignored")
    func pathsIgnoreQuery() throws {
        #expect(try opens(paths(#"["/search"]"#), "https://e.com/search?q=x#top"))
        #expect(try !opens(paths(#"["/search?q=*"]"#), "https://e.com/search?q=x"))
    }

    @Test("domain defaults apply to legacy paths (inferred §8.7)")
    func defaultsApplyToPaths() throws {
        let file =
            #"{"applinks": {"apps": [], "defaults": {"caseSensitive": false}, "details": [{"appID": "ABCDE12345.a.b", "paths": ["/Buy/*"]}]}}"#
        #expect(try opens(file, "https://e.com/buy/1"))
    }

    @Test("components win over paths when both are present (spec §1.5)")
    func componentsWin() throws {
        let file = components(#"[{"/": "/new/*"}]"#, entry: #", "paths": ["/old/*"]"#)
        #expect(try opens(file, "https://e.com/new/1"))
        #expect(try !opens(file, "https://e.com/old/1"))
    }

    @Test("empty components still count as present: paths are ignored and nothing matches")
    func emptyComponentsHidePaths() throws {
        let file = components("[]", entry: #", "paths": ["*"]"#)
        let r = try verdict(file, "https://e.com/x")
        #expect(r.apps[0].decision == .none)
    }
}

@Suite("Components (spec §1.5, §1.6)")
struct ComponentTests {
    @Test("every specified key must match; unspecified keys match anything")
    func allKeysMustMatch() throws {
        let file = components(##"[{"/": "/p/*", "?": "a=1", "#": "top"}]"##)
        #expect(try opens(file, "https://e.com/p/x?a=1#top"))
        #expect(try !opens(file, "https://e.com/p/x?a=2#top"))
        #expect(try !opens(file, "https://e.com/p/x?a=1#bottom"))
        #expect(try !opens(file, "https://e.com/q/x?a=1#top"))
    }

    @Test("{} matches every URL and {exclude: true} blocks every URL")
    func emptyComponent() throws {
        #expect(try opens(components("[{}]"), "https://e.com/anything?x#y"))
        #expect(try verdict(components(#"[{"exclude": true}, {}]"#), "https://e.com/x").apps[0].decision == .block)
    }

    @Test("the first matching component wins")
    func firstWins() throws {
        let file = components(#"[{"/": "/help/website/*", "exclude": true}, {"/": "/help/*"}]"#)
        #expect(try verdict(file, "https://e.com/help/website/a").apps[0].decision == .block)
        #expect(try verdict(file, "https://e.com/help/a").opener?.decidedBy?.pattern == 1)
    }

    @Test("a string ? matches the whole query, not a part of it")
    func wholeQuery() throws {
        let file = components(#"[{"?": "key=value"}]"#)
        #expect(try opens(file, "https://e.com/?key=value"))
        #expect(try !opens(file, "https://e.com/?key=value&extra=value"))
    }

    @Test("a dictionary ? ignores items it does not name")
    func dictionaryIgnoresOthers() throws {
        #expect(try opens(components(#"[{"?": {"key": "value"}}]"#), "https://e.com/?key=value&extra=value"))
    }

    @Test("every named item must match")
    func everyItem() throws {
        let file = components(#"[{"?": {"a": "1", "b": "2"}}]"#)
        #expect(try opens(file, "https://e.com/?b=2&a=1"))
        #expect(try !opens(file, "https://e.com/?a=1&b=3"))
    }

    @Test("every instance of a repeated item must match")
    func repeatedItems() throws {
        let file = components(#"[{"?": {"id": "$(digit)"}}]"#)
        #expect(try opens(file, "https://e.com/?id=1&id=2"))
        #expect(try !opens(file, "https://e.com/?id=1&id=x"))
    }

    @Test("a missing item and a valueless item are the empty string")
    func missingIsEmpty() throws {
        let star = components(#"[{"?": {"id": "*"}}]"#)
        let some = components(#"[{"?": {"id": "?*"}}]"#)
        #expect(try opens(star, "https://e.com/x"))
        #expect(try !opens(some, "https://e.com/x"))
        #expect(try !opens(some, "https://e.com/x?id"))
        #expect(try opens(components(#"[{"?": {"id": ""}}]"#), "https://e.com/x?id"))
    }

    @Test("Apple's articleNumber example: exactly four characters")
    func articleNumber() throws {
        let file = components(#"[{"/": "/help/*", "?": {"articleNumber": "????"}}]"#)
        #expect(try opens(file, "https://e.com/help/a?articleNumber=1234"))
        #expect(try !opens(file, "https://e.com/help/a?articleNumber=123"))
    }

    @Test("query item names compare exactly, + is not a space, the value splits at the first =")
    func itemParsing() throws {
        #expect(try !opens(components(#"[{"?": {"ID": "1"}}]"#), "https://e.com/?id=1"))
        #expect(try opens(components(#"[{"?": {"q": "a+b"}}]"#), "https://e.com/?q=a+b"))
        #expect(try opens(components(#"[{"?": {"q": "a=b"}}]"#), "https://e.com/?q=a=b"))
        #expect(try opens(components(#"[{"?": {"q": "1"}}]"#), "https://e.com/?&&q=1&"))
    }

    @Test("a URL without a query or fragment matches them as empty")
    func absentIsEmpty() throws {
        #expect(try opens(components(#"[{"?": ""}]"#), "https://e.com/x"))
        #expect(try opens(components(##"[{"#": ""}]"##), "https://e.com/x"))
        #expect(try !opens(components(##"[{"#": "?*"}]"##), "https://e.com/x"))
    }

    @Test("the fragment-only link of WWDC19 matches an empty path")
    func fragmentOnly() throws {
        let file = components(##"[{"/": "", "#": "coupon-????"}]"##)
        #expect(try opens(file, "https://example.com#coupon-5678"))
        #expect(try !opens(file, "https://example.com/#coupon-5678"))
    }

    @Test("Apple's {/: abc, ?: def} example is anchored: /abc?def does not match (inferred §8.1)")
    func componentsPageSlip() throws {
        #expect(try !opens(components(#"[{"/": "abc", "?": "def"}]"#), "https://www.example.com/abc?def"))
    }
}

@Suite("caseSensitive, percentEncoded and defaults (spec §1.8)")
struct OptionTests {
    @Test("caseSensitive false folds path, query and fragment")
    func caseInsensitive() throws {
        let file = components(##"[{"/": "/Buy/*", "?": {"q": "ABC"}, "#": "Top", "caseSensitive": false}]"##)
        #expect(try opens(file, "https://e.com/bUY/x?q=abc#TOP"))
    }

    @Test("case folding never changes what ? counts")
    func foldingKeepsCounts() throws {
        #expect(try opens(components(#"[{"/": "/?", "caseSensitive": false, "percentEncoded": false}]"#), "https://e.com/%C3%89"))
    }

    @Test("resolution order: component, then entry defaults, then domain defaults, then true")
    func resolution() throws {
        let domainOff = #", "defaults": {"caseSensitive": false}"#
        #expect(try opens(components(#"[{"/": "/A"}]"#, applinks: domainOff), "https://e.com/a"))
        #expect(
            try !opens(
                components(#"[{"/": "/A"}]"#, applinks: domainOff, entry: #", "defaults": {"caseSensitive": true}"#), "https://e.com/a"))
        #expect(
            try opens(
                components(#"[{"/": "/A", "caseSensitive": false}]"#, entry: #", "defaults": {"caseSensitive": true}"#), "https://e.com/a"))
        #expect(try !opens(components(#"[{"/": "/A"}]"#), "https://e.com/a"))
    }

    @Test("percentEncoded true compares the URL as transmitted: one ? cannot match an encoded character")
    func encodedComparison() throws {
        #expect(try !opens(components(#"[{"/": "/caf?"}]"#), "https://e.com/caf%C3%A9"))
        #expect(try opens(components(#"[{"/": "/caf%C3%A9"}]"#), "https://e.com/café"))
        #expect(try !opens(components(#"[{"/": "/search/%2c"}]"#), "https://e.com/search/,"))
    }

    @Test("percentEncoded false decodes the URL and matches Unicode code points")
    func decodedComparison() throws {
        #expect(try opens(components(#"[{"/": "/caf?", "percentEncoded": false}]"#), "https://e.com/caf%C3%A9"))
        #expect(try opens(components(#"[{"/": "/café", "percentEncoded": false}]"#), "https://e.com/caf%C3%A9"))
        #expect(try opens(components(#"[{"/": "/search/,", "percentEncoded": false}]"#), "https://e.com/search/%2c"))
        #expect(try opens(components(#"[{"?": {"q": "a b"}, "percentEncoded": false}]"#), "https://e.com/?q=a%20b"))
        #expect(try opens(components(#"[{"?": {"näme": "x"}, "percentEncoded": false}]"#), "https://e.com/?n%C3%A4me=x"))
    }

    @Test("hex case of escapes is literal when percentEncoded is true (documented choice)")
    func hexCaseLiteral() throws {
        #expect(try !opens(components(#"[{"/": "/caf%c3%a9"}]"#), "https://e.com/caf%C3%A9"))
        #expect(try opens(components(#"[{"/": "/caf%c3%a9", "caseSensitive": false}]"#), "https://e.com/caf%C3%A9"))
    }

    @Test("an escape that is not UTF-8 stays encoded when decoding")
    func invalidEscapeStays() throws {
        #expect(try opens(components(#"[{"/": "/%FF", "percentEncoded": false}]"#), "https://e.com/%FF"))
    }
}

@Suite("Substitution variables (spec §1.9)")
struct VariableTests {
    @Test("a custom variable matches exactly one of its values")
    func customAlternation() throws {
        let file = components(#"[{"/": "/$(food)/order"}]"#, applinks: #", "substitutionVariables": {"food": ["burrito", "taco"]}"#)
        #expect(try opens(file, "https://e.com/taco/order"))
        #expect(try opens(file, "https://e.com/burrito/order"))
        #expect(try !opens(file, "https://e.com/tacoburrito/order"))
        #expect(try !opens(file, "https://e.com/pizza/order"))
    }

    @Test("values may use * and ?")
    func valuesWithWildcards() throws {
        let file = components(#"[{"/": "/$(v)"}]"#, applinks: #", "substitutionVariables": {"v": ["a*", "b?"]}"#)
        #expect(try opens(file, "https://e.com/axyz"))
        #expect(try opens(file, "https://e.com/bx"))
        #expect(try !opens(file, "https://e.com/bxy"))
    }

    @Test("names may contain spaces and are case-sensitive")
    func namesWithSpaces() throws {
        let file = components(#"[{"/": "/$(Canadian food)"}]"#, applinks: #", "substitutionVariables": {"Canadian food": ["poutine"]}"#)
        #expect(try opens(file, "https://e.com/poutine"))
    }

    @Test("values follow caseSensitive")
    func valuesFollowCase() throws {
        let vars = #", "substitutionVariables": {"food": ["taco"]}"#
        #expect(try !opens(components(#"[{"/": "/$(food)"}]"#, applinks: vars), "https://e.com/TACO"))
        #expect(try opens(components(#"[{"/": "/$(food)", "caseSensitive": false}]"#, applinks: vars), "https://e.com/TACO"))
    }

    @Test("variables work in ? and # too (inferred)")
    func variablesEverywhere() throws {
        let vars = #", "substitutionVariables": {"v": ["x"]}"#
        #expect(try opens(components(##"[{"?": {"a": "$(v)"}, "#": "$(v)"}]"##, applinks: vars), "https://e.com/?a=x#x"))
    }

    typealias BuiltIn = PatternLanguageTests.Row

    static let builtIns: [BuiltIn] = [
        BuiltIn(pattern: "/$(alpha)", path: "/q", matches: true),
        BuiltIn(pattern: "/$(alpha)", path: "/Q", matches: true),
        BuiltIn(pattern: "/$(alpha)", path: "/1", matches: false),
        BuiltIn(pattern: "/$(upper)", path: "/Q", matches: true),
        BuiltIn(pattern: "/$(upper)", path: "/q", matches: false),
        BuiltIn(pattern: "/$(lower)", path: "/q", matches: true),
        BuiltIn(pattern: "/$(lower)", path: "/Q", matches: false),
        BuiltIn(pattern: "/$(alnum)", path: "/7", matches: true),
        BuiltIn(pattern: "/$(alnum)", path: "/-", matches: false),
        BuiltIn(pattern: "/$(digit)", path: "/5", matches: true),
        BuiltIn(pattern: "/$(digit)", path: "/55", matches: false),  // one character only
        BuiltIn(pattern: "/$(digit)$(digit)", path: "/55", matches: true),
        BuiltIn(pattern: "/$(digit)*", path: "/555", matches: true),
        BuiltIn(pattern: "/$(xdigit)", path: "/f", matches: true),
        BuiltIn(pattern: "/$(xdigit)", path: "/G", matches: false),
        BuiltIn(pattern: "/$(region)/", path: "/US/", matches: true),
        BuiltIn(pattern: "/$(region)/", path: "/GB/", matches: true),
        BuiltIn(pattern: "/$(region)/", path: "/UK/", matches: false),  // not in isoRegionCodes
        BuiltIn(pattern: "/$(region)/", path: "/us/", matches: false),
        BuiltIn(pattern: "/$(region)/", path: "/001/", matches: false),
        BuiltIn(pattern: "/$(lang)/", path: "/en/", matches: true),
        BuiltIn(pattern: "/$(lang)/", path: "/haw/", matches: true),  // three-letter codes too
        BuiltIn(pattern: "/$(lang)/", path: "/EN/", matches: false),
        BuiltIn(pattern: "/$(lang)/", path: "/xx/", matches: false),
        BuiltIn(pattern: "/$(lang)_$(region)/*", path: "/en_CA/x", matches: true),
    ]

    @Test("built-in variables have their real value sets", arguments: builtIns)
    func builtIn(_ b: BuiltIn) throws {
        #expect(try opens(components(#"[{"/": \#(JSONValue.quote(b.pattern))}]"#), "https://e.com" + b.path) == b.matches)
    }

    @Test("case-insensitive built-ins accept either case")
    func builtInsFoldCase() throws {
        #expect(try opens(components(#"[{"/": "/$(upper)/$(region)/$(lang)", "caseSensitive": false}]"#), "https://e.com/q/us/EN"))
    }

    @Test("a custom variable replaces a built-in of the same name")
    func customShadowsBuiltIn() throws {
        let file = components(#"[{"/": "/$(lang)"}]"#, applinks: #", "substitutionVariables": {"lang": ["klingon"]}"#)
        #expect(try opens(file, "https://e.com/klingon"))
        #expect(try !opens(file, "https://e.com/en"))
    }

    @Test("the region and language tables hold ICU's codes")
    func tables() {
        #expect(ISOCodes.regions.count == 254)
        #expect(ISOCodes.regions.allSatisfy { $0.count == 2 && $0 == $0.uppercased() })
        #expect(!ISOCodes.regions.contains("UK"))
        #expect(ISOCodes.languages.contains("zh") && ISOCodes.languages.contains("ar"))
    }

    @Test("variables cannot make matching blow up: the work budget stops it with an error")
    func budgetStopsHostileVariables() throws {
        let values = (0..<300).map { "\"*\($0)\"" }.joined(separator: ",")
        let pattern = "/" + String(repeating: "$(v)", count: 300)
        let text = components(#"[{"/": "\#(pattern)"}]"#, applinks: #", "substitutionVariables": {"v": [\#(values)]}"#)
        let file = try #require(AppSiteAssociation.validate(text).document)
        let url = try LinkURL(parsing: "https://e.com/" + String(repeating: "1", count: 8_000))
        #expect(throws: MatchError.self) { try Matcher(file).evaluate(url, budget: 1_000_000) }
    }
}

@Suite("Evaluation across details (spec §1.10, §6)")
struct DetailsOrderTests {
    static let a = "ABCDE12345.com.example.a"
    static let b = "ABCDE12345.com.example.b"

    @Test("the first entry that matches opens the URL; later apps get the rest")
    func firstEntryWins() throws {
        let file = AASAFixture.make(details: #"[{"appID": "\#(Self.a)", "paths": ["/a/*"]}, {"appID": "\#(Self.b)", "paths": ["*"]}]"#)
        #expect(try verdict(file, "https://e.com/a/1").opener?.appID == Self.a)
        #expect(try verdict(file, "https://e.com/z").opener?.appID == Self.b)
    }

    @Test("an exclude blocks only the apps of its own entry")
    func excludeIsPerApp() throws {
        let file = AASAFixture.make(
            details: #"[{"appID": "\#(Self.a)", "paths": ["NOT /x/*", "*"]}, {"appID": "\#(Self.b)", "paths": ["/x/*"]}]"#)
        let r = try verdict(file, "https://e.com/x/1")
        #expect(r.apps.map(\.decision) == [.block, .match])
        #expect(r.opener?.appID == Self.b)
    }

    @Test("the same app in two entries: the first entry that decides wins, match then block")
    func matchThenBlock() throws {
        let file = AASAFixture.make(
            details: #"[{"appID": "\#(Self.a)", "paths": ["/x/*"]}, {"appID": "\#(Self.a)", "paths": ["NOT /x/*"]}]"#)
        #expect(
            try verdict(file, "https://e.com/x/1").apps == [
                MatchResult.App(appID: Self.a, decision: .match, decidedBy: try verdict(file, "https://e.com/x/1").apps[0].decidedBy)
            ])
        #expect(try verdict(file, "https://e.com/x/1").apps[0].decidedBy?.detail == 0)
    }

    @Test("block then match: the block stands")
    func blockThenMatch() throws {
        let file = AASAFixture.make(details: #"[{"appID": "\#(Self.a)", "paths": ["NOT /x/*"]}, {"appID": "\#(Self.a)", "paths": ["*"]}]"#)
        #expect(try verdict(file, "https://e.com/x/1").apps[0].decision == .block)
    }

    @Test("no decision in the first entry: a later entry for the same app decides")
    func laterEntryDecides() throws {
        let file = AASAFixture.make(details: #"[{"appID": "\#(Self.a)", "paths": ["/y"]}, {"appID": "\#(Self.a)", "paths": ["/x/*"]}]"#)
        let r = try verdict(file, "https://e.com/x/1")
        #expect(r.opener?.decidedBy?.detail == 1)
    }

    @Test("appIDs share their entry's patterns; each app gets its own line")
    func appIDsShare() throws {
        let file = AASAFixture.make(details: #"[{"appIDs": ["\#(Self.a)", "\#(Self.b)"], "components": [{"/": "/x"}]}]"#)
        let r = try verdict(file, "https://e.com/x")
        #expect(r.apps.map(\.appID) == [Self.a, Self.b])
        #expect(r.apps.allSatisfy { $0.decision == .match })
        #expect(r.opener?.appID == Self.a)
    }

    @Test("the opener is the first app in the order entries decide, not in the order apps are listed")
    func openerInDecisionOrder() throws {
        let file = AASAFixture.make(
            details:
                #"[{"appID": "\#(Self.a)", "paths": ["/nothing"]}, {"appID": "\#(Self.b)", "paths": ["*"]}, {"appID": "\#(Self.a)", "paths": ["*"]}]"#
        )
        let r = try verdict(file, "https://e.com/x")
        #expect(r.apps.map(\.appID) == [Self.a, Self.b])
        #expect(r.opener?.appID == Self.b)
    }

    @Test("legacy dictionary details are evaluated in document order")
    func legacyDictionaryOrder() throws {
        let file = AASAFixture.make(details: #"{"\#(Self.b)": {"paths": ["*"]}, "\#(Self.a)": {"paths": ["*"]}}"#)
        let r = try verdict(file, "https://e.com/x")
        #expect(r.opener?.appID == Self.b)
        #expect(r.opener?.decidedBy?.path.description == #"applinks.details["\#(Self.b)"].paths[0]"#)
    }

    @Test("a file without applinks opens nothing")
    func noApplinks() throws {
        let r = try verdict(#"{"webcredentials": {"apps": ["\#(Self.a)"]}}"#, "https://e.com/x")
        #expect(r.opener == nil && r.apps.isEmpty)
    }

    @Test("host and scheme are not matched: http and https both count")
    func schemeNotMatched() throws {
        let file = components(#"[{"/": "/x"}]"#)
        #expect(try opens(file, "http://other.example/x"))
        #expect(try opens(file, "HTTPS://E.COM/x"))
    }
}
