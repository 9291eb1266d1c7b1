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

    /// No size limit is documented for assetlinks.json; aasad applies Apple's 128 KB (spec §4, policy).
    public static let maximumFileSize = 131_072

    /// Reads and validates a statement list the way Google's parser does (spec §4, S17's tests).
    public static func validate(_ bytes: [UInt8]) -> ValidationResult<AssetLinks> {
        var decoder = DocumentDecoder(bytes: bytes)
        guard let json = decoder.readJSON(maximumSize: maximumFileSize, fileKind: "an assetlinks.json file") else {
            return ValidationResult(document: nil, diagnostics: decoder.finishedDiagnostics)
        }
        let document = decoder.decodeAssetLinks(json)
        return ValidationResult(document: document, diagnostics: decoder.finishedDiagnostics)
    }

    public static func validate(_ text: String) -> ValidationResult<AssetLinks> {
        validate(Array(text.utf8))
    }

    /// `kind/detail`, e.g. `delegate_permission/common.handle_all_urls`.
    static func isRelation(_ s: String) -> Bool {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return false }
        let kindOK = parts[0].unicodeScalars.allSatisfy { ("a"..."z").contains($0) || $0 == "_" }
        let detailOK = parts[1].unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" || $0 == "." }
        return kindOK && detailOK
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
                warnUnknownKeys(members, path, known: ["include"], context: "an include statement")
                if member(members, "relation") != nil || member(members, "target") != nil {
                    error(
                        .includeStatement, path, nil,
                        "an include statement may not also carry \"relation\" or \"target\"; make them two statements")
                }
                if let url = expectString(include, path.appending("include"), "\"include\"") {
                    if !url.lowercased().hasPrefix("https://") {
                        error(.includeStatement, path.appending("include"), include, "an included list must be fetched over https://")
                    }
                    statements.append(.include(url))
                }
                continue
            }
            warnUnknownKeys(members, path, known: ["relation", "target", "relation_extensions"], context: "a statement")
            var relations: [String] = []
            if let relation = member(members, "relation") {
                let p = path.appending("relation")
                relations = expectStringArray(relation, p, "\"relation\"") ?? []
                if relation.arrayValue?.isEmpty == true {
                    error(.relation, p, relation, "\"relation\" is empty; App Links use [\"delegate_permission/common.handle_all_urls\"]")
                }
                for (j, r) in (relation.arrayValue ?? []).enumerated() {
                    if let s = r.stringValue, !AssetLinks.isRelation(s) {
                        error(
                            .relation, p.appending(j), r,
                            "a relation is kind/detail in lower case, e.g. \"delegate_permission/common.handle_all_urls\"")
                    }
                }
            } else {
                error(
                    .missingKey, path.appending("relation"), nil,
                    "the statement needs \"relation\", e.g. [\"delegate_permission/common.handle_all_urls\"]")
            }
            if let extensions = member(members, "relation_extensions") {
                _ = expectObject(extensions, path.appending("relation_extensions"), "\"relation_extensions\"")
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
            var package = ""
            if let p = member(members, "package_name") {
                package = expectString(p, path.appending("package_name"), "\"package_name\"") ?? ""
                if p.stringValue != nil && !AssetLinks.isPackageName(package) {
                    error(
                        .packageName, path.appending("package_name"), p,
                        "not a valid Android package name (dot-separated identifiers, e.g. \"com.example.app\")")
                }
            } else {
                error(.missingKey, path.appending("package_name"), nil, "an android_app target needs \"package_name\"")
            }
            var fingerprints: [String] = []
            let fp = path.appending("sha256_cert_fingerprints")
            if let f = member(members, "sha256_cert_fingerprints") {
                fingerprints = expectStringArray(f, fp, "\"sha256_cert_fingerprints\"") ?? []
                if f.arrayValue?.isEmpty == true {
                    error(.certificateFingerprint, fp, f, "at least one signing certificate fingerprint is needed")
                }
                for (j, e) in (f.arrayValue ?? []).enumerated() {
                    guard let s = e.stringValue, !AssetLinks.isFingerprint(s) else { continue }
                    let hint = AssetLinks.isFingerprint(s.uppercased()) ? "; write the hex digits in upper case" : ""
                    error(
                        .certificateFingerprint, fp.appending(j), e,
                        "a SHA-256 fingerprint is 32 upper-case hex pairs separated by ':' (as keytool -list prints it)\(hint)")
                }
            } else {
                error(.missingKey, fp, nil, "an android_app target needs \"sha256_cert_fingerprints\"")
            }
            return .androidApp(packageName: package, fingerprints: fingerprints)
        case "web":
            warnUnknownKeys(members, path, known: ["namespace", "site"], context: "a web target")
            guard let siteValue = member(members, "site") else {
                error(.missingKey, path.appending("site"), nil, "a web target needs \"site\", e.g. \"https://example.com\"")
                return nil
            }
            guard let site = expectString(siteValue, path.appending("site"), "\"site\"") else { return nil }
            let lower = site.lowercased()
            if !(lower.hasPrefix("https://") || lower.hasPrefix("http://")) || site.dropFirst(lower.hasPrefix("https://") ? 8 : 7).isEmpty {
                error(.site, path.appending("site"), siteValue, "\"site\" must be a web origin such as \"https://example.com\"")
            }
            return .web(site: site)
        default:
            error(.namespace, path.appending("namespace"), nsValue, "unknown namespace; use \"android_app\" or \"web\"")
            return nil
        }
    }
}
