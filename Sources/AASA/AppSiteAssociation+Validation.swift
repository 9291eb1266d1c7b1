import StrictJSON

// Longer than 400 lines on purpose: the decoder reads top-down as spec §7 does (services, details,
// substitution variables, patterns), and its key tables are shared by all four parts.

extension AppSiteAssociation {
    /// Apple ignores files larger than 128 KB uncompressed (iOS 9.3.1+, spec §1.11).
    public static let maximumFileSize = 131_072

    /// Patterns in one file above which a warning is given: each URL is matched against them in
    /// order on every device, and WWDC20 warns that matching cost grows quickly.
    public static let largePatternCount = 1_000

    /// Reads and validates a file's bytes (spec §7). The result's `document` is set whenever the
    /// JSON could be decoded; `isValid` says whether it may be served.
    public static func validate(_ bytes: [UInt8]) -> ValidationResult<AppSiteAssociation> {
        var decoder = DocumentDecoder(bytes: bytes)
        guard
            let json = decoder.readJSON(
                maximumSize: maximumFileSize, fileKind: "an apple-app-site-association file", syntaxNotes: syntaxNotes)
        else {
            return ValidationResult(document: nil, diagnostics: decoder.finishedDiagnostics)
        }
        let document = decoder.decodeAASA(json)
        return ValidationResult(document: document, diagnostics: decoder.finishedDiagnostics)
    }

    /// What the parser's message leaves out for an AASA file, by reason.
    ///
    /// Trailing commas: Apple's Foundation parser accepts them (swift-foundation
    /// `JSONScanner.swift`: "the foundation json implementation does support trailing commas"), so
    /// a device that reads the file directly may use it, while strict parsers refuse it and Apple's
    /// CDN is believed to be one of them (unverified). Refusing is the safe default; the message
    /// says why, since the file may well "work" when its author tries it.
    static let syntaxNotes: [JSONSyntaxError.Reason: String] = [
        .trailingComma:
            "Apple's Foundation parser (JSONSerialization) accepts a trailing comma but strict JSON parsers do not (Apple's CDN is believed to be one), so such a file may work on some paths and fail on others; aasad refuses it as the safe default"
    ]

    /// Convenience for text (tests, `match --file`).
    public static func validate(_ text: String) -> ValidationResult<AppSiteAssociation> {
        validate(Array(text.utf8))
    }
}

extension DocumentDecoder {
    fileprivate static let componentKeys = ["/", "?", "#", "exclude", "caseSensitive", "percentEncoded", "comment"]
    fileprivate static let detailKeys = ["appID", "appIDs", "paths", "components", "defaults"]
    fileprivate static let applinksKeys = ["apps", "details", "defaults", "substitutionVariables"]

    mutating func decodeAASA(_ json: JSONValue) -> AppSiteAssociation? {
        guard let members = json.objectMembers else {
            error(
                .topLevelType, .root, json,
                "the file must be one JSON object keyed by service (\"applinks\", \"webcredentials\", \"appclips\", \"activitycontinuation\"), found \(json.typeName)"
            )
            return nil
        }
        var file = AppSiteAssociation()
        var seen = Set<String>()
        for m in members where seen.insert(m.key).inserted {
            let path = JSONPath.root.appending(m.key)
            switch m.key {
            case "applinks": file.applinks = decodeAppLinks(m.value, path)
            case "webcredentials": file.webcredentials = decodeAppList(m.value, path, service: m.key)
            case "appclips": file.appclips = decodeAppList(m.value, path, service: m.key)
            case "activitycontinuation": file.activitycontinuation = decodeAppList(m.value, path, service: m.key)
            default: break
            }
        }
        warnUnknownKeys(members, .root, known: AppSiteAssociation.serviceKeys, context: "the top level (unknown service)")
        if !members.contains(where: { AppSiteAssociation.serviceKeys.contains($0.key) }) {
            error(
                .noService, .root, nil,
                "the file names no known service, so it associates nothing; add \"applinks\", \"webcredentials\", \"appclips\" or \"activitycontinuation\""
            )
        }
        if let applinks = file.applinks {
            checkPatterns(applinks, json)
        }
        return file
    }

    // MARK: - Services

    private mutating func decodeAppList(_ value: JSONValue, _ path: JSONPath, service: String) -> AppList? {
        guard let members = expectObject(value, path, "\"\(service)\"") else { return nil }
        warnUnknownKeys(members, path, known: ["apps"], context: "\"\(service)\"")
        guard let appsValue = member(members, "apps") else {
            error(
                .missingKey, path.appending("apps"), nil,
                "\"\(service)\" needs \"apps\": a list of app identifiers like \"ABCDE12345.com.example.app\"")
            return nil
        }
        let appsPath = path.appending("apps")
        guard let apps = expectStringArray(appsValue, appsPath, "\"apps\"") else { return nil }
        if apps.isEmpty {
            error(
                .appsEmpty, appsPath, appsValue,
                "\"\(service)\".apps is empty, so the service names no app; list at least one app identifier")
        }
        checkAppIdentifiers(appsValue, appsPath)
        return AppList(apps: apps)
    }

    /// Reports malformed and repeated identifiers in an array of app identifiers.
    private mutating func checkAppIdentifiers(_ array: JSONValue, _ path: JSONPath) {
        var seen = Set<String>()
        for (i, element) in (array.arrayValue ?? []).enumerated() {
            guard let id = element.stringValue else { continue }
            if let problem = AppIdentifier.problem(with: id) {
                error(.appIdentifier, path.appending(i), element, problem)
            } else if !seen.insert(id).inserted {
                warning(
                    .duplicateAppIdentifier, path.appending(i), element, "this app identifier is listed twice; the second one has no effect"
                )
            } else {
                warnAppStoreID(id, path.appending(i), element)
            }
        }
    }

    /// A ten-digit prefix is almost always the App Store ID pasted for the Team ID.
    private mutating func warnAppStoreID(_ id: String, _ path: JSONPath, _ value: JSONValue) {
        if let suspicion = AppIdentifier.suspicion(with: id) {
            warning(.teamIDLooksLikeAppStoreID, path, value, suspicion)
        }
    }

    private mutating func decodeAppLinks(_ value: JSONValue, _ path: JSONPath) -> AppLinks? {
        guard let members = expectObject(value, path, "\"applinks\"") else { return nil }
        warnUnknownKeys(members, path, known: Self.applinksKeys, context: "\"applinks\"")

        // applinks.apps is read only by iOS 12 and earlier, which want it present and empty; iOS 13+
        // may omit it (spec §1.2, Apple's Support Universal Links guide and WWDC19 session 717). So
        // neither its absence nor a list in it is a reason to refuse a file whose other sections
        // work.
        var apps: [String]?
        if let appsValue = member(members, "apps") {
            let appsPath = path.appending("apps")
            if let array = expectArray(appsValue, appsPath, "applinks.apps") {
                if !array.isEmpty {
                    warning(
                        .applinksAppsNotEmpty, appsPath, appsValue,
                        "iOS 13 and later ignore applinks.apps, and iOS 12 and earlier expect it empty; write \"apps\": [] and list the apps in \"details\""
                    )
                }
                apps = []
            }
        } else if let detailsValue = member(members, "details"), Self.usesLegacyPaths(detailsValue) {
            // Only a file iOS 12 can use is worse for the missing key: iOS 12 reads "paths" and
            // never "components", so a components-only file associates nothing there either way.
            warning(
                .applinksAppsMissing, path.appending("apps"), nil,
                "\"apps\": [] is missing; iOS 12 and earlier need it present and empty to read \"paths\" (iOS 13+ does not)")
        }

        var details: [Detail] = []
        var form = AppLinks.DetailsForm.array
        let detailsPath = path.appending("details")
        if let detailsValue = member(members, "details") {
            switch detailsValue.kind {
            case .array(let entries):
                if entries.isEmpty {
                    error(
                        .detailsEmpty, detailsPath, detailsValue,
                        "\"details\" is empty, so no URL opens an app; add an entry with appIDs and components")
                }
                for (i, entry) in entries.enumerated() {
                    if let d = decodeDetail(entry, detailsPath.appending(i), legacyAppID: nil) {
                        details.append(d)
                    }
                }
            case .object(let entries):
                form = .dictionary
                warning(
                    .detailsDictionary, detailsPath, nil,
                    "the dictionary form of \"details\" (keyed by app ID) is the iOS 9–12 format; write an array of {\"appIDs\": […], \"components\": […]} entries"
                )
                if entries.isEmpty {
                    error(.detailsEmpty, detailsPath, detailsValue, "\"details\" is empty, so no URL opens an app")
                }
                var seen = Set<String>()
                for entry in entries where seen.insert(entry.key).inserted {
                    let entryPath = detailsPath.appending(entry.key)
                    let key = JSONValue(.string(entry.key), at: entry.keyOffset)
                    if let problem = AppIdentifier.problem(with: entry.key) {
                        error(.appIdentifier, entryPath, key, problem)
                    } else {
                        warnAppStoreID(entry.key, entryPath, key)
                    }
                    if let d = decodeDetail(entry.value, entryPath, legacyAppID: entry.key) {
                        details.append(d)
                    }
                }
            default:
                error(.wrongType, detailsPath, detailsValue, "\"details\" must be an array of entries, found \(detailsValue.typeName)")
            }
        } else {
            error(
                .missingKey, detailsPath, nil,
                "\"applinks\" needs \"details\": an array of {\"appIDs\": […], \"components\": […]} entries")
        }

        let defaults = member(members, "defaults").flatMap { decodeDefaults($0, path.appending("defaults")) }
        let variables =
            member(members, "substitutionVariables").map {
                decodeVariables($0, path.appending("substitutionVariables"))
            } ?? []
        return AppLinks(apps: apps, details: details, detailsForm: form, defaults: defaults, substitutionVariables: variables)
    }

    /// True when some details entry has "paths", the pattern syntax of iOS 12 and earlier (the
    /// dictionary form of "details" has nothing else).
    fileprivate static func usesLegacyPaths(_ details: JSONValue) -> Bool {
        let entries: [JSONValue]
        switch details.kind {
        case .array(let list): entries = list
        case .object(let members): entries = members.map(\.value)
        default: return false
        }
        return entries.contains { entry in entry.objectMembers?.contains { $0.key == "paths" } == true }
    }

    // MARK: - Details

    private mutating func decodeDetail(_ value: JSONValue, _ path: JSONPath, legacyAppID: String?) -> Detail? {
        guard let members = expectObject(value, path, "each entry of \"details\"") else { return nil }
        warnUnknownKeys(
            members, path, known: legacyAppID == nil ? Self.detailKeys : ["paths", "components", "defaults"], context: "a details entry")
        var detail = Detail()

        if let legacyAppID {
            detail.appID = legacyAppID
        } else {
            let appIDValue = member(members, "appID")
            let appIDsValue = member(members, "appIDs")
            if let appIDsValue {
                let p = path.appending("appIDs")
                if let ids = expectStringArray(appIDsValue, p, "\"appIDs\"") {
                    detail.appIDs = ids
                    if ids.isEmpty {
                        error(
                            .appIDsEmpty, p, appIDsValue,
                            "\"appIDs\" is empty, so this entry speaks for no app (and \"appID\" is ignored when \"appIDs\" is present); list the app identifiers"
                        )
                    }
                    checkAppIdentifiers(appIDsValue, p)
                }
                if appIDValue != nil {
                    warning(
                        .appIDIgnored, path.appending("appID"), nil,
                        "\"appID\" is ignored when \"appIDs\" is present; move the identifier into \"appIDs\"")
                }
            }
            if let appIDValue {
                let p = path.appending("appID")
                if let id = expectString(appIDValue, p, "\"appID\"") {
                    if let problem = AppIdentifier.problem(with: id) {
                        error(.appIdentifier, p, appIDValue, problem)
                    } else {
                        warnAppStoreID(id, p, appIDValue)
                    }
                    detail.appID = id
                }
            }
            if appIDValue == nil && appIDsValue == nil {
                error(
                    .detailNoApp, path, nil,
                    "the entry has neither \"appIDs\" nor \"appID\", so the system ignores it; add \"appIDs\": [\"ABCDE12345.com.example.app\"]"
                )
            }
        }

        if let pathsValue = member(members, "paths") {
            detail.paths = expectStringArray(pathsValue, path.appending("paths"), "\"paths\"")
            if detail.paths?.isEmpty == true && member(members, "components") == nil {
                warning(.patternsEmpty, path.appending("paths"), pathsValue, "\"paths\" is empty, so this entry matches no URL")
            }
        }
        if let componentsValue = member(members, "components") {
            let p = path.appending("components")
            if let list = expectArray(componentsValue, p, "\"components\"") {
                var components: [Component] = []
                for (i, element) in list.enumerated() {
                    if let c = decodeComponent(element, p.appending(i)) { components.append(c) }
                }
                detail.components = components
                if list.isEmpty {
                    warning(
                        .patternsEmpty, p, componentsValue,
                        "\"components\" is empty, so this entry matches no URL (and its \"paths\", if any, are ignored)")
                }
            }
        }
        if member(members, "paths") != nil && member(members, "components") != nil {
            warning(
                .pathsAndComponents, path, nil,
                "the entry has both \"paths\" and \"components\": iOS 13+ uses only \"components\" and iOS 12 only \"paths\"; keep them equivalent, or drop \"paths\" if you no longer support iOS 12"
            )
        }
        if member(members, "paths") == nil && member(members, "components") == nil {
            error(
                .detailNoPatterns, path, nil,
                "the entry has neither \"components\" nor \"paths\", so it matches no URL; add \"components\": [{\"/\": \"/*\"}] to match every path"
            )
        }
        if let defaultsValue = member(members, "defaults") {
            detail.defaults = decodeDefaults(defaultsValue, path.appending("defaults"))
        }
        return detail
    }

    private mutating func decodeComponent(_ value: JSONValue, _ path: JSONPath) -> Component? {
        guard let members = expectObject(value, path, "each component") else { return nil }
        warnUnknownKeys(members, path, known: Self.componentKeys, context: "a component")
        var c = Component()
        decodeComponentKeys(members, path, into: &c)
        return c
    }

    /// The keys a component and a `defaults` object share, with their types (spec §1.5).
    private mutating func decodeComponentKeys(_ members: [JSONMember], _ path: JSONPath, into c: inout Component) {
        if let v = member(members, "/") { c.path = expectString(v, path.appending("/"), "\"/\"") }
        if let v = member(members, "#") { c.fragment = expectString(v, path.appending("#"), "\"#\"") }
        if let v = member(members, "comment") { _ = expectString(v, path.appending("comment"), "\"comment\""); c.comment = v.stringValue }
        if let v = member(members, "exclude") { c.exclude = expectBool(v, path.appending("exclude"), "\"exclude\"") }
        if let v = member(members, "caseSensitive") {
            c.caseSensitive = expectBool(v, path.appending("caseSensitive"), "\"caseSensitive\"")
        }
        if let v = member(members, "percentEncoded") {
            c.percentEncoded = expectBool(v, path.appending("percentEncoded"), "\"percentEncoded\"")
        }
        if let v = member(members, "?") {
            let p = path.appending("?")
            switch v.kind {
            case .string(let s):
                c.query = .whole(s)
            case .object(let items):
                var out: [(name: String, pattern: String)] = []
                var seen = Set<String>()
                for item in items where seen.insert(item.key).inserted {
                    if let s = expectString(item.value, p.appending(item.key), "a query item pattern") {
                        out.append((item.key, s))
                    }
                }
                c.query = .items(out)
            default:
                error(
                    .wrongType, p, v,
                    "\"?\" must be a string (the whole query) or an object of query item names to patterns, found \(v.typeName)")
            }
        }
    }

    private mutating func decodeDefaults(_ value: JSONValue, _ path: JSONPath) -> PatternDefaults? {
        guard let members = expectObject(value, path, "\"defaults\"") else { return nil }
        warnUnknownKeys(members, path, known: Self.componentKeys, context: "\"defaults\"")
        var c = Component()
        decodeComponentKeys(members, path, into: &c)
        for m in members where ["/", "?", "#", "exclude"].contains(m.key) {
            warning(
                .defaultsKeyIgnored, path.appending(m.key), nil,
                "only \"caseSensitive\" and \"percentEncoded\" have an effect in \"defaults\"; put \(JSONValue.quote(m.key)) in a component"
            )
        }
        return PatternDefaults(caseSensitive: c.caseSensitive, percentEncoded: c.percentEncoded)
    }

    // MARK: - Substitution variables

    private mutating func decodeVariables(_ value: JSONValue, _ path: JSONPath) -> [SubstitutionVariable] {
        guard let members = expectObject(value, path, "\"substitutionVariables\"") else { return [] }
        var out: [SubstitutionVariable] = []
        var seen = Set<String>()
        for m in members where seen.insert(m.key).inserted {
            let p = path.appending(m.key)
            if m.key.isEmpty {
                error(.variableName, p, nil, "a substitution variable needs a name")
            } else if let bad = m.key.unicodeScalars.first(where: { "$()".unicodeScalars.contains($0) }) {
                error(.variableName, p, nil, "a variable name may not contain '\(bad)' (names may use any character but $, ( and ))")
            }
            if BuiltInVariable(rawValue: m.key) != nil {
                warning(
                    .variableShadowsBuiltIn, p, nil, "this variable has the name of a built-in one and replaces it; choose another name")
            }
            guard let values = expectStringArray(m.value, p, "a substitution variable's value") else { continue }
            if values.isEmpty {
                warning(.variableNoValues, p, m.value, "the variable has no values, so a pattern using it never matches")
            }
            for (i, v) in values.enumerated() where v.contains("$(") {
                error(
                    .variableValue, p.appending(i), m.value.arrayValue?[i],
                    "a variable's value may use * and ? but not another variable; write the values out")
            }
            out.append(SubstitutionVariable(name: m.key, values: values))
        }
        return out
    }

    // MARK: - Patterns

    /// Checks every pattern: variables it names must be defined, suspicious starts, the count.
    private mutating func checkPatterns(_ applinks: AppLinks, _ json: JSONValue) {
        let defined = Set(applinks.substitutionVariables.map(\.name))
        var count = 0
        guard let applinksValue = json.objectMembers?.first(where: { $0.key == "applinks" })?.value,
            let detailsValue = member(applinksValue.objectMembers ?? [], "details")
        else { return }
        let base = JSONPath.root.appending("applinks").appending("details")
        var entries: [(JSONPath, JSONValue)] = []
        switch detailsValue.kind {
        case .array(let list): entries = list.enumerated().map { (base.appending($0.offset), $0.element) }
        case .object(let members): entries = members.map { (base.appending($0.key), $0.value) }
        default: break
        }
        for (entryPath, entry) in entries {
            guard let members = entry.objectMembers else { continue }
            if let paths = member(members, "paths")?.arrayValue {
                for (i, p) in paths.enumerated() {
                    guard var s = p.stringValue else { continue }
                    count += 1
                    if s.hasPrefix("NOT ") { s.removeFirst(4) }
                    checkPattern(s, p, entryPath.appending("paths").appending(i), defined, isPath: true)
                }
            }
            if let components = member(members, "components")?.arrayValue {
                for (i, c) in components.enumerated() {
                    guard let keys = c.objectMembers else { continue }
                    count += 1
                    let cPath = entryPath.appending("components").appending(i)
                    for key in ["/", "#"] {
                        if let v = member(keys, key), let s = v.stringValue {
                            checkPattern(s, v, cPath.appending(key), defined, isPath: key == "/")
                        }
                    }
                    if let q = member(keys, "?") {
                        if let s = q.stringValue {
                            checkPattern(s, q, cPath.appending("?"), defined, isPath: false)
                        } else if let items = q.objectMembers {
                            for item in items {
                                if let s = item.value.stringValue {
                                    checkPattern(s, item.value, cPath.appending("?").appending(item.key), defined, isPath: false)
                                }
                            }
                        }
                    }
                }
            }
        }
        if count > AppSiteAssociation.largePatternCount {
            warning(
                .patternCount, base, nil,
                "the file has \(count) patterns; every device matches each link against them in order, so prefer a few wildcard patterns")
        }
    }

    private mutating func checkPattern(_ source: String, _ value: JSONValue, _ path: JSONPath, _ defined: Set<String>, isPath: Bool) {
        let pattern = Pattern(source)
        for name in pattern.variableNames where !defined.contains(name) && BuiltInVariable(rawValue: name) == nil {
            let builtIns = BuiltInVariable.allCases.map(\.rawValue)
            let suggestion = (Self.closest(to: name, in: Array(defined) + builtIns)).map { "; did you mean $(\($0))?" } ?? ""
            error(
                .variableUndefined, path, value,
                "the pattern uses $(\(name)), which is neither defined in applinks.substitutionVariables nor built in, so it never matches\(suggestion)"
            )
        }
        if pattern.hasUnterminatedVariable {
            warning(.variableUnterminated, path, value, "\"$(\" without a closing \")\" is matched literally; close the variable reference")
        }
        if isPath, let first = source.unicodeScalars.first, !["/", "*", "?"].contains(first), !source.hasPrefix("$(") {
            warning(
                .patternStart, path, value,
                "a path pattern should start with '/' or a wildcard; URL paths always start with '/', so this never matches a non-empty path"
            )
        }
    }
}
