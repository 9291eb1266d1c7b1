import Reactor

/// A first load's reads (a start, or the first load of a registry with no sites): the registry's
/// thread applies and updates one chunk of sites while the next two are read on the other cores,
/// instead of reading every chunk with all cores, then updating every site on one
/// (docs/architecture.md, "A start's load"). Later loads keep the order of reading each chunk,
/// applying it, and updating every site once all are read: their records are shared with the
/// reads, which a change made meanwhile would copy whole.
final class FirstLoad {
    private let reading: @Sendable ([String]) -> [ConfigLoader.Entry]
    /// The chunks read ahead, in the order they are applied, with their names.
    private var ahead: [(names: [String], read: Parallel.Ahead<[ConfigLoader.Entry]>)] = []
    /// Set once the whole load has been applied; a load that ends without it was given up.
    var applied = false
    /// The pairs waiting for their late check as the load started, given back if it is given up.
    let late: LateCertificateChecks

    /// `reading`: reads a chunk's entries with what the registry held as the load started
    /// (`SiteRegistry.examiner`); `late`: the registry's pairs waiting for their late check then.
    init(reading: @escaping @Sendable ([String]) -> [ConfigLoader.Entry], late: LateCertificateChecks) {
        self.reading = reading
        self.late = late
    }

    /// The entries of the chunk `names`: the read started by `readAhead`, waited for, or a read
    /// now on every core.
    func read(_ names: [String]) -> [ConfigLoader.Entry] {
        guard !ahead.isEmpty else { return reading(names) }
        let next = ahead.removeFirst()
        precondition(next.names == names, "a first load read ahead another chunk than the one it applies")
        return next.read.wait()
    }

    /// Chunks read ahead at most: two, so that the other cores start the one after next while
    /// this thread still applies one (with one, they waited for it at every chunk's end).
    static let depth = 2

    /// Starts reading the chunks of `ordered` after the one at `start` not read yet, up to
    /// `depth` ahead, each of `size` names; `read` returns them in order.
    func readAhead(after start: Int, in ordered: [String], size: Int) {
        let reading = reading
        var next = start + size * (1 + ahead.count)
        while ahead.count < Self.depth && next < ordered.count {
            let names = Array(ordered[next..<min(ordered.count, next + size)])
            ahead.append((names, Parallel.Ahead { reading(names) }))
            next += size
        }
    }

    /// Waits for the reads still running (a load given up between chunks); returns whether the
    /// load was given up.
    func end() -> Bool {
        let running = ahead
        ahead = []
        for chunk in running { _ = chunk.read.wait() }
        return !applied
    }
}

extension SiteRegistry {
    /// `examine` for a first load's chunks, read while this thread applies others (`FirstLoad`):
    /// with what the registry held as the load started (no records; the verdicts and contents of
    /// before), never what this thread changes meanwhile. The verdicts and contents are values
    /// shared with the reads, so the first change this thread makes copies each once (never once a
    /// chunk). The records the load makes are not passed: a chunk's names are in no other chunk,
    /// and a link whose target is one of them finds a directory there with one `lstat`.
    func examiner() -> @Sendable ([String]) -> [ConfigLoader.Entry] {
        let (sitesPath, known, check, options) = (sitesPath, preparer.validity.known, preparer.checkCertificate, options)
        let (defers, contents, watchTLS) = (preparer.late.defers, preparer.contents, watchesTLS)
        return { names in
            ConfigLoader.examine(
                names, sitesPath: sitesPath, records: [:], known: known, check: check, options: options, deferChecks: defers,
                shared: contents, watchTLS: watchTLS)
        }
    }

    /// A first load given up: every record it made is forgotten (there were none before it), with
    /// the names they claimed, the contents their versions held and the pairs they took unchecked
    /// (`late`: those waiting as it started); none was published.
    func discardFirstLoad(late: LateCertificateChecks) {
        preparer.late = late
        for (name, record) in records {
            tracking.move(from: record.state, to: nil)
            claims.ownership.remove(name)
            preparer.release(record.served)
        }
        records.removeAll(keepingCapacity: true)
    }
}
