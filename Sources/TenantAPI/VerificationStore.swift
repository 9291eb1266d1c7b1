import CAASAOpenSSL
import Foundation
import HeapModule
import Reactor
import SafeText
import Served
import StrictJSON
import Synchronization

/// Why a record or the key could not be read or written.
public struct VerificationError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

/// One name's ownership check (docs/api.md, "Ownership check"): the random token of its URL and
/// what the checker found. Stored as `<config>/.aasad-verify/names/<name>.json` (a name too long for that as a digest:
/// Sources/TenantAPI/VerificationStore+Files.swift).
public struct VerificationRecord: Codable, Sendable, Equatable {
    public var name: String
    /// base64url, `VerificationStore.tokenBytes` random bytes: the last segment of the URL.
    public var token: String
    public var verified: Bool
    public var attempts: Int
    /// Seconds since 1970 of the last check; nil before the first.
    public var lastCheck: Double?
    /// A status and a short reason of aasad's own words, never bytes of the answer.
    public var lastError: String?
    /// Seconds since 1970 when the checker looks again (while not verified).
    public var nextCheck: Double
}

/// The ownership checks of names added over the tenant API, in the config directory (the truth
/// replicas on one volume share) under `.aasad-verify/`: a dot name at the root, which neither
/// the loader nor the watcher reads (Sources/SiteStore/ConfigWatcher.swift watches `sites`, `tls`,
/// `aasad.yaml` and the alias policy only), outside every site directory, so a tenant who can
/// write only its own site directory cannot mark a name verified. Beside the records, `key`: the
/// deployment's HMAC key (32 random bytes, created once with O_EXCL, mode 0600), so every replica
/// answers for every record. The answer at `/.well-known/aasad-verify/<token>` is
/// base64url(HMAC-SHA256(key, "aasad-verify" NUL name NUL token)): a server that echoes the
/// path, or replays the answer for another name or an old token, answers something else.
///
/// Serving threads ask `answer(host:token:)`, which reads memory only; the records are read from
/// disk by `refresh()` (the checker's thread, and each write of this process).
public final class VerificationStore: Sendable {
    /// Random bytes of a token: 256 bits, as ACME's (RFC 8555 §8.3 asks 128 at least).
    public static let tokenBytes = 32
    /// Longest token the public path looks up: a token here is 43 characters; the bound keeps
    /// what a client sends from reaching the lookup at any length.
    public static let maximumTokenLength = 64
    /// HMAC key bytes: SHA-256's block is 64, its output 32; 32 random bytes are its strength.
    public static let keyBytes = 32
    /// Largest record read: a record is some 300 bytes; a larger file was not written here.
    public static let maximumRecordBytes = 4096
    /// Directory at the config root.
    public static let directoryName = ".aasad-verify"

    public let directory: String
    /// The key once read (or made): nil until then. A store opened without `creates` reads it
    /// when first needed, since another replica's API may make the directory later.
    private let key = Mutex<[UInt8]?>(nil)
    /// Whether this store makes the directory and the key (a process whose API writes).
    public let creates: Bool
    private let records = Mutex(Records())
    /// The `lstat` of each record file as `refresh` last read it.
    /// By file component (Sources/TenantAPI/VerificationStore+Files.swift), with the name it was
    /// read as.
    private let stamps = Mutex<[String: (status: FileStatus?, name: String)]>([:])
    /// Record files `refresh` has read (the tests' count of its work).
    let fileReads = Atomic<Int>(0)

    /// Opens `<config>/.aasad-verify/` and reads the records. With `creates` (a process whose API
    /// writes) it makes the directory and the key when absent; without, it makes nothing and
    /// reads what another replica's API makes, whenever it appears: a replica started before
    /// the first API write still holds back the names that write adds.
    public init(configDirectory: String, creates: Bool = true) throws(VerificationError) {
        directory = configDirectory + "/" + Self.directoryName
        self.creates = creates
        if creates {
            do throws(SystemError) {
                try Files.makeDirectory(directory, mode: 0o700)
                try Files.makeDirectory(directory + "/names", mode: 0o700)
            } catch {
                throw VerificationError(description: "\(directory): \(error)")
            }
            let made = try Self.loadKey(directory + "/key")
            key.withLock { $0 = made }
        }
        refresh()
    }

    /// The key: the one read or made; without `creates`, read now if another replica has made
    /// it. When it cannot be had, a random key used for this answer only: nothing verifies
    /// against it (another replica's answer differs), and the next call tries the file again.
    /// Records are written only after their replica made the key, so a record seen here
    /// normally has its key on disk.
    private func currentKey() -> [UInt8] {
        if let known = key.withLock({ $0 }) { return known }
        if let bytes = try? Files.readFile(directory + "/key", limit: Self.keyBytes), bytes.count == Self.keyBytes {
            key.withLock { $0 = bytes }
            return bytes
        }
        var throwaway = [UInt8](repeating: 0, count: Self.keyBytes)
        precondition(RAND_bytes(&throwaway, Int32(Self.keyBytes)) == 1, "no randomness for the verification key")
        return throwaway
    }

    /// The key file: created with O_EXCL by the first process; a replica that loses the race
    /// reads the winner's. A key file of another length is refused (never silently replaced:
    /// every verified record's answer depends on it).
    static func loadKey(_ path: String) throws(VerificationError) -> [UInt8] {
        var fresh = [UInt8](repeating: 0, count: keyBytes)
        precondition(RAND_bytes(&fresh, Int32(keyBytes)) == 1, "no randomness for the verification key")
        do throws(SystemError) {
            let fd = try Files.createExclusive(path, mode: 0o600)
            defer { Files.close(fd) }
            try Files.writeAll(fd, fresh, at: 0)
            try Files.sync(fd)
            return fresh
        } catch  where error.errno == EEXIST {
            // Another process may still be writing it: its bytes are there once it has synced.
            for _ in 0..<50 {
                let bytes = try? Files.readFile(path, limit: keyBytes)
                if let bytes, bytes.count == keyBytes { return bytes }
                usleep(10_000)
            }
            throw VerificationError(description: "\(path) is not a key of \(keyBytes) bytes")
        } catch {
            throw VerificationError(description: "\(path): \(error)")
        }
    }

    /// The answer for `name` and `token`: base64url(HMAC-SHA256(key, "aasad-verify" NUL name NUL token)).
    public func expectedAnswer(name: String, token: String) -> [UInt8] {
        Self.mac(key: currentKey(), name: name, token: token)
    }

    static func mac(key: [UInt8], name: String, token: String) -> [UInt8] {
        let message = Array("aasad-verify".utf8) + [0] + Array(name.utf8) + [0] + Array(token.utf8)
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let done = EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, key, key.count, message, message.count, &out, out.count, &length)
        // HMAC with a valid digest fails only when libcrypto cannot allocate.
        precondition(done != nil && length == 32, "HMAC-SHA256 failed")
        return Array(Base64URL.encode(out).utf8)
    }

    /// What the public path answers (a serving thread: memory only): the HMAC answer when `host`
    /// has a record whose token is `token`, else nil.
    /// A host one label below a wildcard with a record (`x.a.example` for `*.a.example`) is
    /// answered for the wildcard when the token is the wildcard's: the checker asks a fresh random
    /// child of the wildcard, and only the wildcard's DNS leads such a name here. The HMAC names
    /// the wildcard, so that answer never passes the check of an exact name, nor the reverse. A
    /// wildcard is never a host asked for (the listeners refuse one too).
    public func answer(host: String, token: String) -> [UInt8]? {
        guard token.utf8.count <= Self.maximumTokenLength, !host.hasPrefix("*") else { return nil }
        let presented = Array(token.utf8)
        let (exact, wildcard) = records.withLock { state in
            (state.byName[host], Self.wildcard(above: host).flatMap { state.byName[$0] })
        }
        if let exact, Self.constantTimeEqual(Array(exact.token.utf8), presented) {
            return expectedAnswer(name: host, token: token)
        }
        if let wildcard, Self.constantTimeEqual(Array(wildcard.token.utf8), presented) {
            return expectedAnswer(name: wildcard.name, token: token)
        }
        return nil
    }

    /// `*.a.example` for `x.a.example`; nil for a name of fewer than three labels (a wildcard
    /// covers a domain of two labels or more, as APIHostName has it) or a wildcard itself.
    static func wildcard(above host: String) -> String? {
        guard !host.hasPrefix("*."), let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let suffix = host[host.index(after: dot)...]
        guard suffix.contains(".") else { return nil }
        return "*." + suffix
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in a.indices { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    /// The record of `name`; nil: none (the name needs no check).
    public func record(_ name: String) -> VerificationRecord? { records.withLock { $0.byName[name] } }

    /// Whether automatic certificates must wait for `name`: it has a record not yet verified, or
    /// it is a long name whose digested file could not be read as any name's record (a failed
    /// read never lifts a gate).
    public func blocks(_ name: String) -> Bool {
        let long = name.utf8.count > Self.maximumComponentBytes
        let component = long ? Self.component(name) : ""
        return records.withLock {
            if let record = $0.byName[name] { return !record.verified }
            return long && $0.unnamedDigests.contains(component)
        }
    }

    /// Every record.
    public func all() -> [VerificationRecord] { records.withLock { Array($0.byName.values) } }

    /// The records due at `now` (unverified, with a token, `nextCheck` at or before it), the
    /// earliest first, at most `limit`: the checker's pass, every second. Taken from `Records.due`,
    /// a heap by next check kept as records change, so a pass costs O(limit · log n), not a copy
    /// and a sort of every record (0.15 s a pass at 100,000 unverified names in a debug build;
    /// docs/api.md, "Ownership check").
    public func due(now: Double, limit: Int) -> [VerificationRecord] {
        records.withLock { $0.due(now: now, limit: limit) }
    }

    /// Whether each name with a record is verified (the admin `/sites` view).
    public func verifiedByName() -> [String: Bool] { records.withLock { $0.byName.mapValues(\.verified) } }

    /// Changes with every record written, removed or read anew with other contents.
    public var version: UInt64 { records.withLock { $0.version } }

    /// Creates the record of a new name (a fresh token, unverified, due now); a name that has one
    /// keeps it, but for a `placeholder`, which the new record replaces.
    public func create(_ name: String, now: Double) throws(VerificationError) {
        if let existing = record(name), !existing.token.isEmpty { return }
        var bytes = [UInt8](repeating: 0, count: Self.tokenBytes)
        precondition(RAND_bytes(&bytes, Int32(Self.tokenBytes)) == 1, "no randomness for a verification token")
        try write(
            VerificationRecord(
                name: name, token: Base64URL.encode(bytes), verified: false, attempts: 0, lastCheck: nil, lastError: nil,
                nextCheck: now))
    }

    /// Writes `record` atomically (Files.replaceAtomically: temporary file, fsync, rename, fsync).
    public func write(_ record: VerificationRecord) throws(VerificationError) {
        guard Self.isStorableName(record.name) else { throw VerificationError(description: "not a name to check") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let bytes = (try? encoder.encode(record)).map { Array($0) } ?? []
        do throws(SystemError) {
            try Files.replaceAtomically(path(record.name), with: bytes, mode: 0o600)
        } catch {
            throw VerificationError(description: "\(record.name): \(error)")
        }
        records.withLock {
            $0.set(record.name, record); $0.version &+= 1
        }
    }

    /// Removes the record of `name` (the site or the alias is gone).
    public func remove(_ name: String) {
        guard Self.isStorableName(name) else { return }
        try? Files.remove(path(name))
        try? Files.syncDirectory(directory + "/names")
        records.withLock {
            $0.set(name, nil); $0.version &+= 1
        }
    }

    /// A site's names whose check is due to be asked again now (a PUT of the site).
    public func dueNow(_ name: String, now: Double) {
        guard var record = record(name), !record.verified, !record.token.isEmpty else { return }
        record.nextCheck = now
        try? write(record)
    }

    /// The record of `name` as the disk has it now (another replica may have written it since the
    /// last `refresh`), taken into memory; nil when there is none. A file that cannot be read or
    /// is no record of the name leaves what memory holds: a failed read never lifts a gate.
    public func reread(_ name: String) -> VerificationRecord? {
        guard Self.isStorableName(name) else { return nil }
        // Read under the lock (one small file): a write of this process in between is never
        // undone by an older read.
        return records.withLock {
            let found: VerificationRecord?
            switch Self.read(path(name), component: Self.component(name)) {
            case .absent: found = nil
            case .unreadable:
                if $0.byName[name] == nil { $0.set(name, Self.placeholder(name)); $0.version &+= 1 }
                return $0.byName[name]
            case .record(let record): found = record
            }
            if $0.byName[name] != found {
                $0.set(name, found)
                $0.version &+= 1
            }
            return found
        }
    }

    /// Reads the records from disk again: what another replica wrote joins, what it removed goes.
    /// A file that is no record of the name it is stored under, or that cannot be read now,
    /// leaves what memory holds for that name. A file whose `lstat` is the one last read
    /// (inode, times to the nanosecond, size) is not read again: at 100,000 unchanged records a
    /// debug build's refresh took 3.2 s reading every file and 1.3 s with this (a 2-core machine
    /// under load; the checker refreshes every `VerificationChecker.refreshInterval`).
    /// Nothing is read with the lock held (serving threads look records up), and a record this
    /// process writes meanwhile is kept.
    public func refresh() {
        guard let files = try? Files.entries(of: directory + "/names") else { return }
        let known = records.withLock { $0.byName }
        let last = stamps.withLock { $0 }
        var found: [String: VerificationRecord] = [:]
        var seen: [String: (status: FileStatus?, name: String)] = [:]
        var unnamed: Set<String> = []
        // Long names in memory by their digested component, made at the first failed read of
        // such a file: a record this process wrote and never read back is named by it.
        var longNames: [String: String]? = nil
        for file in files {
            guard let stored = Self.storedFile(file) else { continue }
            let path = directory + "/names/" + file
            let stamp = try? Files.linkStatus(path)
            // A digested file's name is known once it has been read as that name's record.
            if let stamp, let before = last[stored.component], stamp == before.status, let record = known[before.name] {
                found[before.name] = record
                seen[stored.component] = (stamp, before.name)
                continue
            }
            fileReads.add(1, ordering: .relaxed)
            switch Self.read(path, component: stored.component) {
            case .absent: continue
            case .unreadable:
                // A failed read keeps what memory holds, or gates the name. A digested file is
                // named by an earlier read or by memory; one named by neither gates the long
                // name it stands for by its component (`blocks`).
                if longNames == nil, stored.name == nil {
                    longNames = Dictionary(
                        known.keys.filter { $0.utf8.count > Self.maximumComponentBytes }.map { (Self.component($0), $0) },
                        uniquingKeysWith: { first, _ in first })
                }
                guard let name = stored.name ?? last[stored.component]?.name ?? longNames?[stored.component] else {
                    unnamed.insert(stored.component)
                    continue
                }
                found[name] = known[name] ?? Self.placeholder(name)
                // Named, but with no status: read again next time, never taken as unchanged.
                seen[stored.component] = (nil, name)
            case .record(let record):
                found[record.name] = record
                seen[stored.component] = (stamp, record.name)
            }
        }
        stamps.withLock { $0 = seen }
        records.withLock {
            var changed = false
            for name in Set(known.keys).union(found.keys) where $0.byName[name] == known[name] && $0.byName[name] != found[name] {
                $0.set(name, found[name])
                changed = true
            }
            if $0.unnamedDigests != unnamed {
                $0.unnamedDigests = unnamed
                changed = true
            }
            if changed { $0.version &+= 1 }
        }
    }

    /// The records in memory, and the heap that orders the unverified ones by next check.
    struct Records {
        var version: UInt64 = 0
        var byName: [String: VerificationRecord] = [:]
        /// Digested components whose file exists but was never read as a record
        /// (Sources/TenantAPI/VerificationStore+Files.swift): their long names stay gated.
        var unnamedDigests: Set<String> = []
        /// One entry per record version written into `byName` while unverified with a token;
        /// an entry whose record has changed since (verified, another time, gone) is stale and
        /// dropped when it reaches the top, or all at once by `compact`.
        var dueHeap = Heap<DueEntry>()

        /// Puts `record` (nil: none) under `name`, with its heap entry.
        mutating func set(_ name: String, _ record: VerificationRecord?) {
            byName[name] = record
            if let record, let entry = DueEntry(record) { dueHeap.insert(entry) }
            if dueHeap.count > 2 * byName.count + VerificationStore.staleEntriesKept { compact() }
        }

        /// The heap built anew from the records: stale entries gone.
        mutating func compact() {
            dueHeap = Heap(byName.values.compactMap(DueEntry.init))
        }

        /// `VerificationStore.due`: entries are popped until `limit` current ones due at `now`
        /// are found; those go back (the check that follows writes the record, which makes them
        /// stale), the stale ones and repeats are dropped.
        mutating func due(now: Double, limit: Int) -> [VerificationRecord] {
            var out: [VerificationRecord] = []
            var taken: [DueEntry] = []
            var names = Set<String>()
            while out.count < limit, let top = dueHeap.min, top.nextCheck <= now {
                _ = dueHeap.popMin()
                guard let record = byName[top.name], DueEntry(record) == top, names.insert(top.name).inserted else { continue }
                out.append(record)
                taken.append(top)
            }
            dueHeap.insert(contentsOf: taken)
            return out
        }
    }

    /// Stale heap entries tolerated beyond twice the records before the heap is rebuilt: the
    /// rebuild costs O(n), so it comes at most once per n writes.
    static let staleEntriesKept = 1024

    /// A record's place in the due heap: its next check, then its name (a total order).
    struct DueEntry: Comparable {
        var nextCheck: Double
        var name: String

        /// The entry of a record the checker may look at; nil for one verified, without a token
        /// (a placeholder) or whose time is not a number.
        init?(_ record: VerificationRecord) {
            guard !record.verified, !record.token.isEmpty, !record.nextCheck.isNaN else { return nil }
            nextCheck = record.nextCheck
            name = record.name
        }

        init(nextCheck: Double, name: String) {
            self.nextCheck = nextCheck
            self.name = name
        }

        static func < (a: DueEntry, b: DueEntry) -> Bool {
            a.nextCheck != b.nextCheck ? a.nextCheck < b.nextCheck : a.name.utf8.lexicographicallyPrecedes(b.name.utf8)
        }
    }

    /// What memory holds for a name whose record file exists but was never read as its record:
    /// unverified (its gate kept), with no token (the public path answers none) and never due
    /// (a check could not pass); the operator removes or fixes the file.
    static func placeholder(_ name: String) -> VerificationRecord {
        VerificationRecord(
            name: name, token: "", verified: false, attempts: 0, lastCheck: nil, lastError: "the record file cannot be read",
            nextCheck: .greatestFiniteMagnitude)
    }

    /// The state a site's name is in, for the API: `not-required` without a record.
    public func state(_ name: String) -> String {
        guard let record = record(name) else { return "not-required" }
        return record.verified ? "verified" : "unverified"
    }

    /// The verification JSON of `GET /v1/sites/{host}/verification` (docs/api.yaml).
    public func json(_ name: String, port: Int) -> String {
        guard let record = record(name) else { return Self.notRequiredJSON(name) }
        func time(_ t: Double?) -> String {
            guard let t, t.isFinite, t >= 0, t < 1e11 else { return "null" }
            return JSONValue.quote(Self.rfc3339(t))
        }
        let url = VerificationChecker.url(name: name, token: record.token, port: port)
        return "{\"host\":\(JSONValue.quote(name)),\"state\":\(JSONValue.quote(record.verified ? "verified" : "unverified")),"
            + "\"url\":\(JSONValue.quote(url)),\"attempts\":\(max(0, record.attempts)),\"lastCheck\":\(time(record.lastCheck)),"
            + "\"lastError\":\(record.lastError.map(JSONValue.quote) ?? "null"),\"nextCheck\":\(record.verified ? "null" : time(record.nextCheck))}"
    }

    /// The verification JSON of a name without a record.
    static func notRequiredJSON(_ name: String) -> String {
        "{\"host\":\(JSONValue.quote(name)),\"state\":\"not-required\",\"url\":null,\"attempts\":0,\"lastCheck\":null,\"lastError\":null,\"nextCheck\":null}"
    }

    static func rfc3339(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: seconds.rounded(.down)))
    }
}
