import Foundation
import Glibc
import Logging
import Synchronization
import TestSupport

@testable import ACME

/// What the replica records' suites share (ReplicaRecordsTests, ReplicaBackoffTests,
/// ReplicaDemandTests): what replicas sharing a storage directory tell each other
/// (`ReplicaRecords`), a failed order's back-off and the names asked for. Two managers on one
/// directory stand for two replicas; their threads are never started, so each step is driven by
/// the test, and the CA (127.0.0.1:1) refuses every connection, which makes an order fail at
/// once, before the budget is spent.
protocol ReplicaRecordsRig {
    /// The storage directory's parent (`storage` in it).
    var folder: TemporaryDirectory { get }
    /// Seconds added to `start`: the managers' clock.
    var offset: TestClock { get }
}

extension ReplicaRecordsRig {
    static var start: Int64 { 1_800_000_000 }

    /// A temporary folder with a storage directory made in it.
    static func storageFolder() throws -> TemporaryDirectory {
        let folder = try TemporaryDirectory(prefix: "acme-replicas")
        _ = try ACMEStorage(root: folder.path("storage"))
        return folder
    }

    func manager(
        rescan: Int64 = CertificateManager.Configuration.defaultRescanInterval, namesPerSite: Int = 100, skew: Int64 = 0,
        log: LogLines? = nil
    ) throws -> CertificateManager {
        let configuration = CertificateManager.Configuration(
            directory: try ACMEURL("https://127.0.0.1:1/dir"), storage: folder.path("storage"), ordersPerHour: 60,
            namesPerSite: namesPerSite, rescanInterval: rescan)
        let offset = self.offset
        return try CertificateManager(
            configuration: configuration, clock: CertificateManager.Clock(now: { Self.start + offset() + skew }, monotonic: { 0 }),
            logger: log?.logger ?? Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        )
    }

    /// The CA's refusal of a name (an authorization it found invalid): what every replica meets.
    static var refusal: ACMEError {
        .invalid(what: "authorization", problem: ACMEProblem(type: ACMEProblem.namespace + "unauthorized"))
    }

    var now: Int64 { Self.start + offset() }
    var records: ReplicaRecords { ReplicaRecords(storage: try! ACMEStorage(root: folder.path("storage"))) }

    /// The demand folder's names as readdir gives them (a name that is not UTF-8 with U+FFFD).
    func demandFiles() -> [String] {
        guard let directory = opendir(folder.path("storage/demand")) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Sets a file's modification time (seconds since the epoch, on the tests' clock).
    func touch(_ path: String, at time: Int64) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(time))], ofItemAtPath: path)
    }
}

extension Array where Element == UInt8 {
    /// A plain write (Foundation's may sync: 255 of them took seconds on a loaded machine).
    func write(to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(fd) }
        guard withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == count else { throw POSIXError(.EIO) }
    }
}
