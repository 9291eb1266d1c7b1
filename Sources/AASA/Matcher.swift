import StrictJSON

/// Which app opens a URL under an AASA file, and which rule decided (spec §6, the algorithm
/// `aasad match` and `swcutil verify` follow).
public struct Matcher: Sendable {
    /// Work allowed for one URL (see `PatternEngine.defaultBudget`).
    public static let defaultBudget = PatternEngine.defaultBudget

    public let file: AppSiteAssociation
    private let variables: [String: [Pattern]]
    private let compiled: [[CompiledComponent]]

    public init(_ file: AppSiteAssociation) {
        self.file = file
        var variables: [String: [Pattern]] = [:]
        for v in file.applinks?.substitutionVariables ?? [] where variables[v.name] == nil {
            variables[v.name] = v.values.map { Pattern($0, allowVariables: false) }
        }
        self.variables = variables
        compiled = (file.applinks?.details ?? []).map { detail in
            detail.effectiveComponents.map(CompiledComponent.init)
        }
    }

    /// Evaluates one URL: every app's decision, and the app that opens it.
    public func evaluate(_ url: LinkURL, budget: Int = Matcher.defaultBudget) throws(MatchError) -> MatchResult {
        guard let applinks = file.applinks else {
            return MatchResult(url: url, apps: [], opener: nil)
        }
        var engine = PatternEngine(variables: variables, budget: budget)
        let subjects = URLSubjects(url)
        var decisions: [String: MatchResult.App] = [:]
        var order: [String] = []
        var listed = Set<String>()
        var opener: MatchResult.App?

        for (di, detail) in applinks.details.enumerated() {
            let apps = detail.apps
            for app in apps where listed.insert(app).inserted { order.append(app) }
            guard !apps.isEmpty, let source = detail.patternSource else { continue }
            // An entry only matters for apps it can still decide (spec §1.10: the first entry that
            // decides an app wins for that app).
            guard apps.contains(where: { decisions[$0] == nil }) else { continue }
            let detailPath = Self.detailPath(applinks, di, detail)
            let caseDefault = detail.defaults?.caseSensitive ?? applinks.defaults?.caseSensitive ?? true
            let percentDefault = detail.defaults?.percentEncoded ?? applinks.defaults?.percentEncoded ?? true
            var entryDecision: (MatchResult.Decision, MatchResult.Reference)?
            for (pi, component) in compiled[di].enumerated() {
                let patternPath = detailPath.appending(source.rawValue).appending(pi)
                let ci = !(component.component.caseSensitive ?? caseDefault)
                let encoded = component.component.percentEncoded ?? percentDefault
                if try component.matches(subjects, encoded: encoded, caseInsensitive: ci, engine: &engine, path: patternPath) {
                    let reference = MatchResult.Reference(
                        detail: di, pattern: pi, source: source, path: patternPath,
                        rule: source == .paths ? JSONValue.quote(detail.paths![pi]) : component.component.jsonText)
                    entryDecision = (component.component.exclude == true ? .block : .match, reference)
                    break
                }
            }
            guard let (decision, reference) = entryDecision else { continue }
            for app in apps where decisions[app] == nil {
                let result = MatchResult.App(appID: app, decision: decision, decidedBy: reference)
                decisions[app] = result
                if decision == .match && opener == nil { opener = result }
            }
        }
        let apps = order.map { decisions[$0] ?? MatchResult.App(appID: $0, decision: .none, decidedBy: nil) }
        return MatchResult(url: url, apps: apps, opener: opener)
    }

    static func detailPath(_ applinks: AppLinks, _ index: Int, _ detail: Detail) -> JSONPath {
        let base = JSONPath.root.appending("applinks").appending("details")
        switch applinks.detailsForm {
        case .array: return base.appending(index)
        case .dictionary: return base.appending(detail.appID ?? "")
        }
    }
}

/// The answer for one URL.
public struct MatchResult: Sendable {
    public enum Decision: String, Sendable, Codable {
        /// The app opens the URL.
        case match
        /// An `exclude` component or `NOT` path stops the app from opening it.
        case block
        /// No pattern of the app's entries matched.
        case none
    }

    /// The pattern that decided: its entry, its index, its list and the rule as written.
    public struct Reference: Sendable, Equatable {
        public var detail: Int
        public var pattern: Int
        public var source: PatternSource
        public var path: JSONPath
        /// The component as compact JSON, or the legacy path string quoted.
        public var rule: String
    }

    public struct App: Sendable, Equatable {
        public var appID: String
        public var decision: Decision
        public var decidedBy: Reference?
    }

    public var url: LinkURL
    /// Every app the file names for applinks, in the order they first appear.
    public var apps: [App]
    /// The app that opens the URL: the first, in the order entries decide, whose decision is match.
    public var opener: App?
}

/// The parts of one URL as the patterns see them, raw and decoded.
struct URLSubjects {
    let path: String
    let query: String?
    let fragment: String?

    init(_ url: LinkURL) {
        path = url.path
        query = url.query
        fragment = url.fragment
    }

    /// Subjects are cached per text, so a path tested by many patterns builds its masks once.
    final class Cache {
        var subjects: [String: Subject] = [:]
        func subject(_ text: String) -> Subject {
            if let s = subjects[text] { return s }
            let s = Subject(text)
            subjects[text] = s
            return s
        }
    }

    let subjects = Cache()

    func path(encoded: Bool) -> Subject { subjects.subject(encoded ? path : LinkURL.percentDecode(path)) }
    /// A URL without a query is matched as the empty query (spec §1.6).
    func query(encoded: Bool) -> Subject { subjects.subject(encoded ? (query ?? "") : LinkURL.percentDecode(query ?? "")) }
    func fragment(encoded: Bool) -> Subject { subjects.subject(encoded ? (fragment ?? "") : LinkURL.percentDecode(fragment ?? "")) }
    func items(encoded: Bool) -> [(name: String, value: String)] { LinkURL.queryItems(query, decoded: !encoded) }
}

/// A component with its patterns split into tokens once.
struct CompiledComponent: Sendable {
    let component: Component
    let path: Pattern?
    let fragment: Pattern?
    let wholeQuery: Pattern?
    let queryItems: [(name: String, pattern: Pattern)]?

    init(_ component: Component) {
        self.component = component
        path = component.path.map { Pattern($0) }
        fragment = component.fragment.map { Pattern($0) }
        switch component.query {
        case .whole(let q):
            wholeQuery = Pattern(q)
            queryItems = nil
        case .items(let items):
            wholeQuery = nil
            queryItems = items.map { ($0.name, Pattern($0.pattern)) }
        case nil:
            wholeQuery = nil
            queryItems = nil
        }
    }

    /// A component matches when every key it specifies matches (spec §1.5).
    func matches(
        _ url: URLSubjects, encoded: Bool, caseInsensitive ci: Bool, engine: inout PatternEngine, path at: JSONPath
    ) throws(MatchError) -> Bool {
        if let path, try !engine.matches(path, url.path(encoded: encoded), caseInsensitive: ci, at: at) { return false }
        if let wholeQuery, try !engine.matches(wholeQuery, url.query(encoded: encoded), caseInsensitive: ci, at: at) {
            return false
        }
        if let queryItems {
            let items = url.items(encoded: encoded)
            for (name, pattern) in queryItems {
                // Every instance of a repeated item must match; a missing item is the empty string
                // (spec §1.6). Names compare exactly.
                let values = items.filter { $0.name == name }.map(\.value)
                for value in values.isEmpty ? [""] : values {
                    if try !engine.matches(pattern, url.subjects.subject(value), caseInsensitive: ci, at: at) { return false }
                }
            }
        }
        if let fragment, try !engine.matches(fragment, url.fragment(encoded: encoded), caseInsensitive: ci, at: at) {
            return false
        }
        return true
    }
}

extension Component {
    /// The component as compact JSON in a fixed key order, for explanations.
    public var jsonText: String {
        var parts: [String] = []
        if let path { parts.append("\"/\": \(JSONValue.quote(path))") }
        switch query {
        case .whole(let q): parts.append("\"?\": \(JSONValue.quote(q))")
        case .items(let items):
            let inner = items.map { "\(JSONValue.quote($0.name)): \(JSONValue.quote($0.pattern))" }.joined(separator: ", ")
            parts.append("\"?\": {\(inner)}")
        case nil: break
        }
        if let fragment { parts.append("\"#\": \(JSONValue.quote(fragment))") }
        if let exclude { parts.append("\"exclude\": \(exclude)") }
        if let caseSensitive { parts.append("\"caseSensitive\": \(caseSensitive)") }
        if let percentEncoded { parts.append("\"percentEncoded\": \(percentEncoded)") }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}
