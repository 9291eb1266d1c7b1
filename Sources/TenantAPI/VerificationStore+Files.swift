import Foundation
import Hashing
import Reactor
import Served

/// How records are named and read on disk. A record is `names/<name>.json`, written through a
/// temporary `.<name>.json.tmp-` and 16 hex digits beside it (Files.replaceAtomically), which must
/// fit Linux's 255-byte file name: a name longer than `maximumComponentBytes` (a host name may be
/// 253 bytes) is stored under Hashing's `FittedName` form of it, its first bytes, `~` and its
/// SHA-256, whose record says which name it is (`~` is no host name's byte: no such file is
/// another name's readable one).
extension VerificationStore {
    /// Linux's NAME_MAX less `.json` and the temporary file's `.`, `.tmp-` and 16 hex digits: 228.
    static let maximumComponentBytes = 255 - ".json".utf8.count - ".".utf8.count - ".tmp-".utf8.count - 16

    /// What a record file holds: gone, not readable as the record of the name its file stands for
    /// now (a read error, more than `maximumRecordBytes`, not the JSON of a record, another name,
    /// a token over `maximumTokenLength`), or the record.
    enum ReadOutcome {
        case absent
        case unreadable
        case record(VerificationRecord)
    }

    /// A directory entry of `names/` that may be a record: its component (the file name without
    /// `.json`) and the name it stands for, nil for a digested one until its record is read.
    /// Nil for every other entry (temporary files, names that are no storable name).
    static func storedFile(_ file: String) -> (component: String, name: String?)? {
        guard file.hasSuffix(".json"), !file.hasPrefix(".") else { return nil }
        let component = String(file.dropLast(5))
        // A digested component is `maximumComponentBytes` long, as the longest readable one.
        if FittedName.isDigested(component, maximumBytes: maximumComponentBytes, isNameByte: isNameByte) { return (component, nil) }
        return component.utf8.count <= maximumComponentBytes && isStorableName(component) ? (component, component) : nil
    }

    /// The file component `name` is stored under.
    static func component(_ name: String) -> String { FittedName.component(name, maximumBytes: maximumComponentBytes) }

    func path(_ name: String) -> String { directory + "/names/" + Self.component(name) + ".json" }

    /// Reads the record stored under `component`: a record counts only when its name is a
    /// storable name whose component is that one (a record copied under another name's file is
    /// no record of it).
    static func read(_ path: String, component: String) -> ReadOutcome {
        let bytes: [UInt8]
        do throws(SystemError) {
            bytes = try Files.readFile(path, limit: maximumRecordBytes)
        } catch {
            return error.errno == ENOENT ? .absent : .unreadable
        }
        guard let record = try? JSONDecoder().decode(VerificationRecord.self, from: Data(bytes)), isStorableName(record.name),
            Self.component(record.name) == component, record.token.utf8.count <= maximumTokenLength
        else { return .unreadable }
        return .record(record)
    }

    /// Whether each name with a record is verified, read from `configDirectory` without making
    /// anything (`aasad sites`, a read-only look), as the server reads them: empty when there are
    /// no records; a file that is no record of its name counts as waiting (the server keeps such
    /// a name's gate; a digested file that cannot be read keeps the long name it stands for
    /// waiting, as `blocks` does).
    public static func readStates(configDirectory: String) -> VerificationStates {
        let names = configDirectory + "/" + directoryName + "/names"
        guard let files = try? Files.entries(of: names) else { return VerificationStates() }
        var out = VerificationStates()
        for file in files {
            guard let stored = storedFile(file) else { continue }
            switch read(names + "/" + file, component: stored.component) {
            case .absent: continue
            case .unreadable:
                if let name = stored.name { out.byName[name] = false } else { out.unnamedDigests.insert(stored.component) }
            case .record(let record): out.byName[record.name] = record.verified
            }
        }
        return out
    }

    /// A name as a file name: a host name as `HostName` accepts it (lower-case LDH, no slash, no
    /// dot segment), or a wildcard `*.a.example` (its check fetches a random child of it).
    static func isStorableName(_ name: String) -> Bool {
        guard let host = try? HostName(parsing: name) else { return false }
        return host.name == name
    }

    /// The bytes a storable name is made of.
    private static func isNameByte(_ c: UInt8) -> Bool {
        (c >= 0x61 && c <= 0x7A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E || c == 0x2A
    }
}

/// What `readStates` found: each name's state, and the digested files no read could name.
public struct VerificationStates: Sendable {
    public var byName: [String: Bool] = [:]
    var unnamedDigests: Set<String> = []

    public init() {}

    /// Whether `name`'s check passed; nil when it has none (it needs none). A long name whose
    /// digested file could not be read is waiting.
    public subscript(name: String) -> Bool? {
        if let state = byName[name] { return state }
        guard name.utf8.count > VerificationStore.maximumComponentBytes,
            unnamedDigests.contains(VerificationStore.component(name))
        else { return nil }
        return false
    }

    public var isEmpty: Bool { byName.isEmpty && unnamedDigests.isEmpty }
}
