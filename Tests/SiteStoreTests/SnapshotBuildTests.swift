import HTTPCore
import Testing

@testable import Served

/// A first load publishes every site into an empty snapshot at once, its map by directory built on
/// one core while the other sorts the names, and its map of exact names made from the map by
/// directory (`Snapshot.replaceInPlace(_:generation:)`): the snapshot must answer as one built a
/// site at a time does, whatever the batch holds, and be built at once unless the order decides or a
/// directory comes twice.
@Suite("A snapshot built at once")
struct SnapshotBuildTests {
    private static func site(_ directory: String, _ hosts: [String]) throws -> ServedSite {
        let aasa = try PreparedFile(body: Array("{}".utf8), modified: 1, options: ServingOptions())
        return ServedSite(
            directory: directory, hosts: try hosts.map { try HostName(parsing: $0) }, aasa: aasa, assetLinks: nil, certificate: nil,
            loadedAt: 1)
    }

    /// The answers a snapshot gives for every directory and host the batch names.
    private static func answers(_ snapshot: Snapshot, _ batch: [(String, ServedSite?)], hosts: [String]) -> [String] {
        batch.map { directory, _ in "\(directory)=\(snapshot.sites[directory].map { "\(ObjectIdentifier($0))" } ?? "-")" }
            + hosts.map { host in "\(host)=\(snapshot.site(forHost: host).map { "\(ObjectIdentifier($0))" } ?? "-")" }
    }

    @Test(
        "unique directories, names two sites claim, wildcards, unserved directories, directories not a name of theirs; one repeated; one unserved then served; a directory's name claimed by another site"
    )
    func sameAsOneAtATime() throws {
        let count = Snapshot.parallelBuild + 100
        var batch: [(String, ServedSite?)] = []
        var hosts: [String] = []
        for i in 0..<count {
            batch.append(("s\(i).test", try Self.site("s\(i).test", ["s\(i).test", "*.w\(i).test", "shared\(i % 7).test"])))
            hosts += ["s\(i).test", "x.w\(i).test", "w\(i).test"]
            if i % 1000 == 0 { batch.append(("gone\(i).test", nil)) }
            if i % 500 == 0 {
                // Directories that are not a name of their site: another name, a wildcard only,
                // the name in another case.
                batch.append(("d\(i).test", try Self.site("d\(i).test", ["x\(i).test"])))
                batch.append(("o\(i).test", try Self.site("o\(i).test", ["*.o\(i).test"])))
                batch.append(("C\(i).test", try Self.site("C\(i).test", ["c\(i).test"])))
                hosts += ["d\(i).test", "x\(i).test", "o\(i).test", "y.o\(i).test", "C\(i).test", "c\(i).test"]
            }
        }
        hosts += (0..<7).map { "shared\($0).test" }
        let repeated = batch + [("s5.test", try Self.site("s5.test", ["other5.test"]))]
        let servedLater = [("s9.test", nil)] + batch.filter { $0.0 != "s9.test" } + [("s9.test", try Self.site("s9.test", ["late9.test"]))]
        let removedLater = batch + [("s11.test", nil)]
        // A name one site holds as its directory's and another claims too, the other after it or before it.
        let claimedAfter = batch + [("t3.test", try Self.site("t3.test", ["t3.test", "s3.test"]))]
        let claimedBefore = [("t4.test", try Self.site("t4.test", ["s4.test"]))] + batch
        // The other claims a directory name whose site does not hold it: no contest.
        let claimedUnheld = batch + [("t0.test", try Self.site("t0.test", ["d0.test"]))]
        // A wildcard another site holds too, after it and before it; a site naming one host twice;
        // an unserved directory twice.
        let sameWildcard =
            [("u2.test", try Self.site("u2.test", ["u2.test", "*.w2.test"]))] + batch
            + [("u1.test", try Self.site("u1.test", ["u1.test", "*.w1.test"]))]
        let twice = batch + [("v1.test", try Self.site("v1.test", ["v1.test", "vv1.test", "vv1.test"]))]
        let unservedTwice = batch + [("gone0.test", nil)]
        // Whether each batch is built at once: only an order that decides, or a directory named
        // twice (served or not, as the build checks it), falls back.
        for (label, many, atOnceExpected) in [
            ("unique", batch, true), ("repeated", repeated, false), ("served later", servedLater, false),
            ("removed later", removedLater, false), ("claimed after", claimedAfter, false), ("claimed before", claimedBefore, false),
            ("claimed unheld", claimedUnheld, true), ("same wildcard", sameWildcard, true), ("a host twice", twice, true),
            ("unserved twice", unservedTwice, false),
        ] {
            let atOnce = Snapshot(generation: 0, sites: [], defaultCertificate: nil)
            #expect(atOnce.replaceInPlace(many, generation: 7) == atOnceExpected, "\(label)")
            let oneByOne = Snapshot(generation: 0, sites: [], defaultCertificate: nil)
            for (directory, site) in many { oneByOne.replaceInPlace(directory, with: site, generation: 7) }
            let names = hosts + ["other5.test", "late9.test", "t3.test", "t4.test", "t0.test", "u1.test", "u2.test", "v1.test", "vv1.test"]
            #expect(Self.answers(atOnce, many, hosts: names) == Self.answers(oneByOne, many, hosts: names), "\(label)")
            #expect(atOnce.sites.count == oneByOne.sites.count, "\(label)")
            #expect(atOnce.generation == 7)
        }
    }
}
