import Served

/// One site as the registry keeps it between reloads. A dictionary keeps its values inline in
/// every bucket, used or not: the site as read and its settings (hundreds of bytes) live behind
/// one reference each, so that 100,000 records cost their buckets' few words rather than a
/// kilobyte each.
struct SiteRecord {
    var host: HostName
    /// The site as last read from disk, until it is applied: serve keeps none of it after
    /// (`dropSource`; at 100,000 sites the emptied sources alone were 60 MB), the reporting
    /// commands keep it all.
    var source: SiteSource {
        get { boxedSource?.value ?? SiteSource(host: host, directory: "", aliases: [], problems: []) }
        set { boxedSource = Boxed(newValue) }
    }
    private var boxedSource: Boxed<SiteSource>?

    mutating func dropSource() { boxedSource = nil }

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
    var errors: [String] = []
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
    var fallbackCounts: FallbackCounts?
    /// Answers per route, while the site has routes.
    var routeCounts: RouteCounts?

    init(host: HostName, source: SiteSource) {
        self.host = host
        boxedSource = Boxed(source)
    }

    /// How the site stands: serving, serving its last good version, or refused.
    var state: SiteState { served == nil ? .refused : (errors.isEmpty ? .serving : .servingLastGood) }
}

extension SiteRecord {
    /// The Last-Modified last served for each of a site's files (a dictionary per site cost
    /// a few hundred bytes at 100,000 sites).
    struct LastModified {
        var aasa: Int64?
        var assetLinks: Int64?
        /// Every page of the site: the latest Last-Modified any of them was served with.
        var page: Int64?

        subscript(file: FileKind) -> Int64? {
            get {
                switch file {
                case .aasa: aasa
                case .assetLinks: assetLinks
                case .page: page
                }
            }
            set {
                switch file {
                case .aasa: aasa = newValue
                case .assetLinks: assetLinks = newValue
                case .page: page = newValue
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
