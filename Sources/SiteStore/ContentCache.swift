import HTTPCore
import Hashing
import Served
import Synchronization

/// Prepared contents by digest, counted, so that identical files share one body and one gzip and
/// a content no site uses any more is dropped.
public struct ContentCache: Sendable {
    private var entries: [String: (content: PreparedContent, uses: Int)] = [:]
    /// The contents prepared by the reads of one batch (`ConfigLoader.examine`), when this is that
    /// batch's view of the registry's cache: a read takes the content another read of the batch
    /// made for the same bytes (`keep`). Nil in the registry's own cache.
    var batch: BatchContents?

    /// The prepared file for a valid site file (nil for an invalid one), sharing content, served
    /// with `modified` as its Last-Modified. Throws, holding nothing, when the options cannot
    /// make a head.
    mutating func prepare<D>(_ file: SiteFile<D>, modified: Int64, options: ServingOptions) throws(PreparedFile.InvalidField)
        -> PreparedFile?
    {
        guard file.isValid else { return nil }
        // What the read prepared (on every core) is used when it was made with this time and these
        // options, with the content already held when another site serves the same bytes; its
        // content (gzip, ETag) is used in any case.
        // Only a form of these very bytes is taken (the same buffer, shared by the read: the
        // comparison is then one identity check).
        let ready = file.prepared.flatMap { $0.content.body == file.bytes ? $0 : nil }
        if let ready, ready.lastModified == modified, ready.options == options {
            // Counted, or made, in one lookup of the digest (a first load makes most entries).
            let held = { (entry: inout (content: PreparedContent, uses: Int)) -> PreparedContent in
                entry.uses += 1
                return entry.content
            }(&entries[ready.content.digest, default: (ready.content, 0)])
            // The read took the content held already (`ConfigLoader.siteFile`): its file is the one.
            return ready.content === held ? ready : PreparedFile(ready, sharing: held)
        }
        try PreparedFile.check(options)
        let content: PreparedContent
        let digest = ready?.content.digest ?? Hex.string(file.sha256 ?? Digest.sha256(file.bytes))
        if let entry = entries[digest] {
            content = entry.content
            entries[digest]!.uses += 1
        } else {
            content = ready?.content ?? PreparedContent(body: file.bytes, sha256: file.sha256)
            entries[digest] = (content, 1)
        }
        return try PreparedFile(content: content, modified: modified, options: options)
    }

    /// A prepared file's content under other options (the settings changed while the file's new
    /// version is invalid or unreadable): one more use of the same content.
    /// `modified`: another Last-Modified (a restamped page); nil keeps the file's.
    mutating func reprepare(_ file: PreparedFile, options: ServingOptions, modified: Int64? = nil) throws(PreparedFile.InvalidField)
        -> PreparedFile
    {
        let prepared = try PreparedFile(content: file.content, modified: modified ?? file.lastModified, options: options)
        if entries[file.content.digest] != nil { entries[file.content.digest]!.uses += 1 }
        return prepared
    }

    /// The content held for these bytes (`digest`: their SHA-256, hex), if any; the bytes are
    /// compared too, so that only the same bytes are ever shared.
    /// The contents of the batch under way (`batch`) count too.
    func content(digest: String, bytes: [UInt8]) -> PreparedContent? {
        guard let content = entries[digest]?.content ?? batch?.content(digest: digest), Self.same(content.body, bytes) else { return nil }
        return content
    }

    /// The content a read of a batch serves for `content`'s bytes: one another read of the batch
    /// kept first, or `content` itself, kept for the next reads (outside a batch: `content`).
    func keep(_ content: PreparedContent) -> PreparedContent {
        batch?.keep(content) ?? content
    }

    /// Whether two buffers hold the same bytes: the same buffer, or memcmp (Array's `==` compares
    /// element by element, 3.4 instructions a byte in callgrind, for every file many sites share).
    static func same(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in a.equals(b) }
    }

    /// Gives back a prepared file's use of its content.
    mutating func release(_ file: PreparedFile?) {
        guard let digest = file?.content.digest, let entry = entries[digest] else { return }
        if entry.uses <= 1 { entries[digest] = nil } else { entries[digest]!.uses -= 1 }
    }

    /// Distinct contents held (for tests).
    var count: Int { entries.count }
}

/// The contents made by the reads of one batch, by digest, shared by its reading threads. The
/// registry applies a batch only once it is read whole (and a load other than a first one updates
/// its sites only once every batch is read; docs/architecture.md, "A start's load"): without this,
/// each read of a file that many sites serve kept its own buffer, digest and ETag until the
/// registry's cache replaced them, and those buffers, freed late and between allocations that
/// stay, were most of the heap's holes (docs/benchmarks.md, "What a restart at 100,000 sites holds").
/// With it, such a read lets its own buffer go on the reading thread as soon as it has the digest.
/// Only the same bytes are ever shared: the digest finds a candidate, the bytes decide.
final class BatchContents: Sendable {
    private let table = Mutex<[String: PreparedContent]>([:])

    /// The content kept for `digest`, if any (the caller compares the bytes).
    func content(digest: String) -> PreparedContent? {
        table.withLock { $0[digest] }
    }

    /// The content kept for these bytes, or `content` after keeping it when there is none. A
    /// content kept for other bytes under the same digest is neither returned nor replaced.
    func keep(_ content: PreparedContent) -> PreparedContent {
        let held = table.withLock { table in
            if let held = table[content.digest] { return held }
            table[content.digest] = content
            return content
        }
        return held === content || ContentCache.same(held.body, content.body) ? held : content
    }

    /// Contents kept (for tests).
    var count: Int { table.withLock { $0.count } }
}

/// Which version of a site's file is served: the new one when valid, else the last good one,
/// with the Last-Modified rule; the contents come from (and are shared through) the cache.
extension ContentCache {
    /// The pages to serve, by name: those the settings in force name (`SiteSettings.pageNames`),
    /// each chosen like the other files, as `text/html; charset=utf-8` with the site's options.
    /// A page the read did not look at (its site.yaml was broken or refused, and named other
    /// pages) keeps its last good version. `restamp`: which page a path takes has changed, so
    /// every page gets this one new Last-Modified (`restampTime`; see `choose`).
    mutating func choosePages(
        _ source: SiteSource, settings: SiteSettings, restamp: Int64?, record: inout SiteRecord, validity: inout ValidityCache,
        options: ServingOptions, errors: inout [String]
    ) -> [String: PreparedFile] {
        let names = settings.pageNames.prefix(SiteSettings.maximumPages)
        guard !names.isEmpty else { return [:] }
        let read = Set(source.settings.pageNames)
        var options = options
        options.contentType = ServingOptions.html
        // Platforms with their own redirect get it, the others the page: the same URL answers by
        // User-Agent (the same rule as the redirects' own Vary).
        // With routes, a preview or an interstitial, the page's URL may answer a crawler or an
        // in-app browser otherwise too.
        options.varyUserAgent =
            PreparedFallback.variesByUserAgent(settings.fallback, hasPage: true) || settings.links.variesByUserAgent
        var pages: [String: PreparedFile] = [:]
        // One floor for the pass: each new page is later than any page had before it, not than
        // the page chosen just before it (which would add a second per page read together).
        let floor = record.lastModified[.page]
        var newest = floor
        defer { record.lastModified[.page] = newest }
        for name in names {
            record.lastModified[.page] = floor
            defer { if let time = record.lastModified[.page] { newest = max(newest ?? time, time) } }
            let previous = record.served?.pages[name]
            guard read.contains(name) else {
                pages[name] = previous
                continue
            }
            let before = errors.count
            pages[name] = choose(
                source.pages[name], name: name, file: .page, unreadable: source.unreadable, previous: previous, restamp: restamp,
                record: &record, validity: &validity, options: options, errors: &errors)
            // An invalid page: say what takes it.
            for i in before..<errors.count { errors[i] += " (it is \(settings.takers(of: name)))" }
        }
        return pages
    }

    /// The one Last-Modified every page of a site gets when which page a path takes changed:
    /// later than any the site's pages had (`floor`), but never past a second after `now`, so
    /// that many restamps in a row (or many pages) never push it into the future.
    static func restampTime(floor: Int64?, now: Int64) -> Int64 {
        let floor = floor ?? 0
        return min(max(now, floor == .max ? floor : floor + 1), now == .max ? now : now + 1)
    }

    /// The file to serve: the new one when valid; the previous one when the new one is invalid
    /// or cannot be read (only a file that is gone stops being served); none when it is gone.
    ///
    /// Last-Modified rule: it moves whenever the content (and so the ETag) changes,
    /// and only then. A new content gets the file's time (the later of mtime and ctime, see
    /// `ConfigLoader.readFile`), but never a time at or before the one last served for that
    /// file: then the last one plus a second. Two edits within a second, or a roll-back whose
    /// ctime ties, still move forward, and a client's If-Modified-Since of an older version
    /// never gets 304 for a newer one. Unchanged content keeps its Last-Modified (a chmod or a
    /// touch changes nothing a client sees). Across restarts the ctime carries the rule.
    /// A site's pages share one `which` (`.page`), since one URL may take one page, then another
    /// (a route's page changed, a page renamed): a page's new content is later than any page of
    /// the site had, and `restamp` gives every page, unchanged or not, one such time, for when the
    /// URLs' pages changed (an If-Modified-Since of one page then never gets 304 for another).
    mutating func choose<D>(
        _ file: SiteFile<D>?, name: String, file which: SiteRecord.FileKind, kind: KnownValid.Kind? = nil, unreadable: Set<String>,
        previous: PreparedFile?, restamp: Int64? = nil, record: inout SiteRecord, validity: inout ValidityCache,
        options: ServingOptions, errors: inout [String]
    ) -> PreparedFile? {
        // A time later than any served for `which`.
        func later(_ time: Int64) -> Int64 {
            guard let last = record.lastModified[which], time <= last else { return time }
            // Times are at most now when read (`ConfigLoader.readFile`); saturating all the same.
            return last == .max ? last : last + 1
        }
        // The last good version, under the options in force now: a changed cache-control, or a
        // page that now varies by User-Agent, applies to it too.
        func kept() -> PreparedFile? {
            guard let previous else { return nil }
            if let restamp, let restamped = try? reprepare(previous, options: options, modified: restamp) {
                record.lastModified[which] = max(record.lastModified[which] ?? restamp, restamp)
                return restamped
            }
            guard previous.options != options else { return previous }
            return (try? reprepare(previous, options: options)) ?? previous
        }
        guard let file else { return unreadable.contains(name) ? kept() : nil }
        guard file.isValid else {
            for d in file.result.diagnostics.errors { errors.append("\(file.relativePath): \(d)") }
            return kept()
        }
        var modified = file.modified
        if let restamp {
            modified = max(restamp, file.modified)
        } else if let previous, previous.content.body == file.bytes {
            if previous.options == options { return previous }
            modified = previous.lastModified
        } else {
            modified = later(modified)
        }
        do {
            let prepared = try prepare(file, modified: modified, options: options)
            if let prepared {
                record.lastModified[which] = max(record.lastModified[which] ?? prepared.lastModified, prepared.lastModified)
                if let kind, !file.verdictKnown { validity.insert(kind, digestHex: prepared.content.digest) }
            }
            return prepared
        } catch {
            // The settings' checks refuse such a value first; never build a head from one.
            errors.append("\(file.relativePath): not served: \(error)")
            return previous
        }
    }
}
