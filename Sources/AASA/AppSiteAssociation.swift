/// A parsed apple-app-site-association file (spec §1). Everything keeps document order, since the
/// order of `details`, of patterns and of `appIDs` decides which app opens a URL.
public struct AppSiteAssociation: Sendable, Equatable {
    /// Universal links.
    public var applinks: AppLinks?
    /// Shared web credentials, Password AutoFill and passkeys.
    public var webcredentials: AppList?
    /// App Clips.
    public var appclips: AppList?
    /// Handoff.
    public var activitycontinuation: AppList?

    public init(
        applinks: AppLinks? = nil, webcredentials: AppList? = nil, appclips: AppList? = nil,
        activitycontinuation: AppList? = nil
    ) {
        self.applinks = applinks
        self.webcredentials = webcredentials
        self.appclips = appclips
        self.activitycontinuation = activitycontinuation
    }

    /// The service keys the system knows (spec §1.1).
    public static let serviceKeys = ["applinks", "webcredentials", "appclips", "activitycontinuation"]
}

/// `{"apps": [appID, …]}` as `webcredentials`, `appclips` and `activitycontinuation` hold it.
public struct AppList: Sendable, Equatable {
    public var apps: [String]

    public init(apps: [String]) {
        self.apps = apps
    }
}

/// The `applinks` service (spec §1.2).
public struct AppLinks: Sendable, Equatable {
    /// How `details` was written: the current array, or the iOS 9–12 dictionary keyed by app ID.
    public enum DetailsForm: String, Sendable, Equatable {
        case array
        case dictionary
    }

    /// The legacy `apps` key; nil when absent (it must be `[]` when present).
    public var apps: [String]?
    public var details: [Detail]
    public var detailsForm: DetailsForm
    /// Domain-level defaults (iOS 14+).
    public var defaults: PatternDefaults?
    /// Custom substitution variables in document order (iOS 13.5+).
    public var substitutionVariables: [SubstitutionVariable]

    public init(
        apps: [String]? = nil, details: [Detail], detailsForm: DetailsForm = .array,
        defaults: PatternDefaults? = nil, substitutionVariables: [SubstitutionVariable] = []
    ) {
        self.apps = apps
        self.details = details
        self.detailsForm = detailsForm
        self.defaults = defaults
        self.substitutionVariables = substitutionVariables
    }
}

/// One named variable and its values, `"$(name)"` in a pattern (spec §1.9).
public struct SubstitutionVariable: Sendable, Equatable {
    public var name: String
    public var values: [String]

    public init(name: String, values: [String]) {
        self.name = name
        self.values = values
    }
}

/// One entry of `details` (spec §1.3).
public struct Detail: Sendable, Equatable {
    public var appID: String?
    public var appIDs: [String]?
    /// Legacy patterns (`"NOT "` prefix for exclusion). Ignored when `components` is present.
    public var paths: [String]?
    public var components: [Component]?
    /// App-level defaults (iOS 14+).
    public var defaults: PatternDefaults?

    public init(
        appID: String? = nil, appIDs: [String]? = nil, paths: [String]? = nil, components: [Component]? = nil,
        defaults: PatternDefaults? = nil
    ) {
        self.appID = appID
        self.appIDs = appIDs
        self.paths = paths
        self.components = components
        self.defaults = defaults
    }

    /// The apps this entry speaks for: `appIDs` when present (even empty, spec §1.3: `appID` is
    /// then ignored), else `appID`.
    public var apps: [String] {
        if let appIDs { return appIDs }
        if let appID { return [appID] }
        return []
    }

    /// Which list the system evaluates: `components` wins over `paths` (spec §1.5).
    public var patternSource: PatternSource? {
        if components != nil { return .components }
        if paths != nil { return .paths }
        return nil
    }

    /// The patterns the system evaluates, as components: legacy paths are converted, `"NOT x"`
    /// becoming an exclusion (spec §1.4, §6 step 3).
    public var effectiveComponents: [Component] {
        if let components { return components }
        return (paths ?? []).map(Component.init(legacyPath:))
    }
}

/// The list a pattern came from.
public enum PatternSource: String, Sendable, Equatable, Codable {
    case components
    case paths
}

/// A component dictionary (spec §1.5). A nil key means "not specified" (it then matches anything).
public struct Component: Sendable, Equatable {
    /// The `?` key: a pattern for the whole query, or patterns per query item (document order).
    public enum Query: Sendable, Equatable {
        case whole(String)
        case items([(name: String, pattern: String)])

        public static func == (a: Query, b: Query) -> Bool {
            switch (a, b) {
            case (.whole(let x), .whole(let y)): return x == y
            case (.items(let x), .items(let y)):
                return x.count == y.count && zip(x, y).allSatisfy { $0.name == $1.name && $0.pattern == $1.pattern }
            default: return false
            }
        }
    }

    public var path: String?
    public var query: Query?
    public var fragment: String?
    public var exclude: Bool?
    public var caseSensitive: Bool?
    public var percentEncoded: Bool?
    public var comment: String?

    public init(
        path: String? = nil, query: Query? = nil, fragment: String? = nil, exclude: Bool? = nil,
        caseSensitive: Bool? = nil, percentEncoded: Bool? = nil, comment: String? = nil
    ) {
        self.path = path
        self.query = query
        self.fragment = fragment
        self.exclude = exclude
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
        self.comment = comment
    }

    /// A legacy `paths` string as a component: `"NOT "` (capitals, one space) excludes.
    public init(legacyPath: String) {
        if legacyPath.hasPrefix("NOT ") {
            self.init(path: String(legacyPath.dropFirst(4)), exclude: true)
        } else {
            self.init(path: legacyPath)
        }
    }
}

/// `defaults` at domain or app level (spec §1.8). Only these two keys have an effect.
public struct PatternDefaults: Sendable, Equatable {
    public var caseSensitive: Bool?
    public var percentEncoded: Bool?

    public init(caseSensitive: Bool? = nil, percentEncoded: Bool? = nil) {
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
    }
}
