import Served

/// One site as the registry keeps it between reloads, in a dictionary that keeps its values
/// inline in every bucket, used or not: 64 bytes, the key's 16 beside them (a record laid out in
/// full was 112, heaptrack at 10,000 sites). What every site has is inline; what a site has only
/// between a read and its apply (the source), while it has errors, or while it has a fallback or
/// routes (their counts) is behind one reference, nil for most sites; the settings in force are
/// behind one reference, the shared defaults for every site without site.yaml. A copy of a
/// record (`examine` shares them with the reading threads) retains four references.
struct SiteRecord {
    var host: HostName
    /// The site as last read from disk, until it is applied: serve keeps none of it after
    /// (its apply takes it out, `takeSource`; at 100,000 sites the emptied sources alone were
    /// 60 MB), the reporting commands keep it all.
    var source: SiteSource {
        get { rare?.value.source ?? SiteSource(host: host, directory: "", aliases: [], problems: []) }
        set { changeRare { $0.source = newValue } }
    }

    mutating func dropSource() {
        guard rare?.value.source != nil else { return }
        changeRare { $0.source = nil }
    }

    /// The source, moved out of the record, which keeps none: what serve's apply takes, so that
    /// its parts are neither retained for a copy nor released by a second one (a full load takes
    /// every site's). A box another copy of the record shares is left as it is: its source is
    /// copied out.
    mutating func takeSource() -> SiteSource {
        guard rare?.value.source != nil else { return source }
        guard isKnownUniquelyReferenced(&rare) else {
            defer { dropSource() }
            return source
        }
        var taken: SiteSource?
        swap(&taken, &rare!.value.source)
        if rare!.value.isEmpty { rare = nil }
        return taken ?? source
    }

    /// The site's directory `sites/<name>` could not be examined: nothing read, everything kept.
    /// The update that follows keeps every last good file, the certificate in service and the
    /// settings in force, with `problem` as the site's error.
    mutating func keepEverything(_ name: String, _ problem: ConfigProblem) {
        var kept = SiteSource(host: host, directory: "sites/\(name)", aliases: [], problems: [problem])
        kept.settings = settings
        kept.unreadable = ConfigLoader.siteEntries
        source = kept
    }
    /// The last good version, with all its claimed hosts.
    var served: ServedSite?
    /// Problems of the version on disk.
    var errors: [String] {
        get { rare?.value.errors ?? [] }
        set {
            guard !(newValue.isEmpty && (rare?.value.errors.isEmpty ?? true)) else { return }
            changeRare { $0.errors = newValue }
        }
    }
    /// The site.yaml settings in force (the last that parsed).
    var settings: SiteSettings {
        get { boxedSettings.value }
        // Every apply sets the settings in force: a site without site.yaml (most of them) keeps
        // the one shared box of defaults rather than a box of its own (344 bytes a site, measured
        // with heaptrack at 10,000 sites).
        set { boxedSettings = newValue == noSettingsBox.value ? noSettingsBox : Boxed(newValue) }
    }
    private var boxedSettings = noSettingsBox
    /// The Last-Modified last served for each file, kept when the file is deleted: a later
    /// content of that file is always served with a later one (see `choose`).
    var lastModified = LastModified()
    /// Fallback answers by platform, across the site's versions; made when the site first
    /// has a fallback (most sites never do: no allocation for them).
    var fallbackCounts: FallbackCounts? {
        get { rare?.value.fallbackCounts }
        set {
            guard newValue !== rare?.value.fallbackCounts else { return }
            changeRare { $0.fallbackCounts = newValue }
        }
    }
    /// Answers per route, while the site has routes.
    var routeCounts: RouteCounts? {
        get { rare?.value.routeCounts }
        set {
            guard newValue !== rare?.value.routeCounts else { return }
            changeRare { $0.routeCounts = newValue }
        }
    }
    /// What few records have at a time; nil when it would be empty.
    private var rare: RareBox?

    /// The parts of a record that most sites do not have once applied.
    private struct Rare {
        var source: SiteSource?
        var errors: [String] = []
        var fallbackCounts: FallbackCounts?
        var routeCounts: RouteCounts?

        var isEmpty: Bool { source == nil && errors.isEmpty && fallbackCounts == nil && routeCounts == nil }
    }

    /// The rare parts' box: changed in place only by `takeSource`, when no other copy of the
    /// record holds it; every other change makes a new one.
    private final class RareBox {
        var value: Rare
        init(_ value: Rare) { self.value = value }
    }

    /// Changes a rare part: a new box (copies of the record never share a change), none when
    /// every rare part is gone.
    private mutating func changeRare(_ change: (inout Rare) -> Void) {
        var value = rare?.value ?? Rare()
        rare = nil
        change(&value)
        rare = value.isEmpty ? nil : RareBox(value)
    }

    init(host: HostName, source: SiteSource) {
        self.host = host
        rare = RareBox(Rare(source: source))
    }

    /// How the site stands: serving, serving its last good version, or refused.
    var state: SiteState { served == nil ? .refused : (errors.isEmpty ? .serving : .servingLastGood) }
}

extension SiteRecord {
    /// The Last-Modified last served for each of a site's files (a dictionary per site cost
    /// a few hundred bytes at 100,000 sites), none kept as `Int64.min` (an optional per file was
    /// 16 bytes, not 8).
    struct LastModified {
        private var aasa = Int64.min
        private var assetLinks = Int64.min
        /// Every page of the site: the latest Last-Modified any of them was served with.
        private var page = Int64.min

        subscript(file: FileKind) -> Int64? {
            get {
                let time =
                    switch file {
                    case .aasa: aasa
                    case .assetLinks: assetLinks
                    case .page: page
                    }
                return time == .min ? nil : time
            }
            set {
                // `Int64.min` is no time a file is served with: Last-Modified is after 1970.
                let time = newValue ?? .min
                switch file {
                case .aasa: aasa = time
                case .assetLinks: assetLinks = time
                case .page: page = time
                }
            }
        }
    }

    /// The files of a site that are served.
    enum FileKind {
        case aasa, assetLinks, page
    }

    /// An immutable value behind a reference; a record replaces the box to change it, so copies of
    /// a record never share a change.
    final class Boxed<Value> {
        let value: Value
        init(_ value: Value) { self.value = value }
    }
}

/// Default settings, one box for every record that has no site.yaml (never changed: records
/// replace their box).
nonisolated(unsafe) private let noSettingsBox = SiteRecord.Boxed(SiteSettings())
