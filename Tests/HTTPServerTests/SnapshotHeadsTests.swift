import HTTPCore
import Served
import SiteStore
import Testing

@testable import HTTPServer

/// A worker's cache of the last file head written (`FileHeadCache`) holds the file it was written
/// for: when the worker takes a new snapshot, a file that snapshot replaced or removed must not
/// stay alive through it.
@Suite("The worker's head cache across snapshots")
struct SnapshotHeadsTests {
    static func site(_ body: String, modified: Int64) throws -> ServedSite {
        let file = try PreparedFile(body: Array(body.utf8), modified: modified, options: ServingOptions())
        return ServedSite(
            directory: "a.test", hosts: [try HostName(parsing: "a.test")], aasa: file, assetLinks: nil, certificate: nil, loadedAt: 0)
    }

    /// Serves the site's file in both framings, as a worker does, through `context`'s cache.
    static func serve(_ context: inout ConnectionContext<Exchange>) -> Response {
        let response = ExchangeTests.answer(&context.answerer, .get, ExchangeTests.aasaPath, version: .http1)
        var out: [UInt8] = []
        response.serialize(into: &out, dateLine: [], heads: &context.heads)
        if let file = response.head.file { context.heads.holdHTTP2Values(file) }
        return response
    }

    @Test("a file the new snapshot replaced is released by the worker's cache, in both framings")
    func replacedFileReleased() throws {
        let store = SnapshotStore(
            Snapshot(generation: 1, sites: [try Self.site(#"{"applinks":{}}"#, modified: 1)], defaultCertificate: nil))
        weak var old: FileHeadSource?
        var context = ConnectionContext(
            now: 1, milliseconds: 1_000, limits: Limits(),
            answerer: Exchange(
                snapshot: store.snapshot(), counters: WorkerCounters(), fetchLog: nil, accessLog: nil, admin: nil, http01: nil))
        do {
            let response = Self.serve(&context)
            #expect(response.status == .ok)
            old = response.head.file?.source
        }
        // The same snapshot again: nothing is taken, and the cache still holds the file.
        context.refreshSnapshot(from: store)
        #expect(old != nil)

        let replacement = #"{"applinks":{"details":[]}}"#
        store.publish(Snapshot(generation: 2, sites: [try Self.site(replacement, modified: 2)], defaultCertificate: nil))
        context.refreshSnapshot(from: store)
        #expect(context.answerer.snapshot.generation == 2)
        #expect(old == nil, "the replaced file is still held")

        // And the new file is served with its own head.
        let response = Self.serve(&context)
        var out: [UInt8] = []
        response.serialize(into: &out, dateLine: [], heads: &context.heads)
        #expect(String(decoding: out, as: UTF8.self).contains("Content-Length: \(replacement.utf8.count)\r\n"))
    }
}
