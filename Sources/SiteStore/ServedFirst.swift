public import Reactor
import Served

/// Which site held each site.yaml alias, kept in the state directory (`served-first`) so that a
/// restart decides contests as the running server did (`HostOwnership` rule 3): a tenant that
/// adds another's alias while the server is down does not win it by sorting first.
///
/// The file is the server's own, as `KnownValid`'s is: written only by serve, after a reload
/// that changed which aliases are held, as a new file renamed over the old; read at start by
/// serve and by `validate`. A tenant reaches it only by holding an alias. A damaged, foreign or
/// oversized file is ignored whole, with a warning: contests are then decided as on a first
/// start, and nothing else depends on it.
///
/// Format: a header line, then one line per held alias, `host site\n`, sorted, each host once:
///
///     aasad served-first 1
///     shop.example b.test
public enum ServedFirst {
    static let header = "aasad served-first 1\n"

    /// A file larger than this is not read, nor written: a line is about 510 bytes at most (a
    /// 253-byte name, a directory name that parses as a host name, a space and a newline), and
    /// 100,000 sites with ten 40-byte aliases each write 40 MB; a larger file is not one serve
    /// wrote.
    public static let maximumFileSize = 64 << 20

    /// Why the file was not used.
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// There is no such file (a first start): nothing to warn about.
        public var isMissing: Bool
    }

    /// The held aliases stored at `path`; a failure when the file is missing, unreadable, larger
    /// than `limit` or not exactly what `store` writes (then none of it is used).
    public static func load(path: String, limit: Int = maximumFileSize) -> Result<[HostName: String], Problem> {
        switch ConfigLoader.readBounded(path: path, limit: limit) {
        case .failure(let error):
            return .failure(Problem(description: error.description, isMissing: error.isMissing))
        case .success(let bytes):
            guard bytes.count <= limit else {
                return .failure(Problem(description: "larger than \(limit) bytes", isMissing: false))
            }
            return parse(bytes)
        }
    }

    /// The file's contents as held aliases, or what is wrong with them (pure: the tests call it on
    /// hostile bytes; the file is the server's own, never a tenant's).
    public static func parse(_ bytes: [UInt8]) -> Result<[HostName: String], Problem> {
        func failure(_ text: String) -> Result<[HostName: String], Problem> { .failure(Problem(description: text, isMissing: false)) }
        let head = Array(header.utf8)
        guard bytes.starts(with: head) else { return failure("not a served-first file (its first line is not \"aasad served-first 1\")") }
        guard bytes.last == UInt8(ascii: "\n") else { return failure("the last line is cut short") }
        var held: [HostName: String] = [:]
        var number = 1
        for line in bytes[head.count...].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).dropLast() {
            number += 1
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard fields.count == 2 else { return failure("line \(number): not a host and a site") }
            // Both must be what serve writes: a host in normal form, and a site's directory name
            // (a host name, perhaps not in normal form); nothing else reaches a log or a decision.
            let hostText = String(decoding: fields[0], as: UTF8.self)
            let site = String(decoding: fields[1], as: UTF8.self)
            guard let host = try? HostName(parsing: hostText), host.name == hostText,
                Array(host.name.utf8) == Array(fields[0]),
                (try? HostName(parsing: site)) != nil, Array(site.utf8) == Array(fields[1])
            else { return failure("line \(number): not a host and a site directory name") }
            guard held.updateValue(site, forKey: host) == nil else { return failure("line \(number): \(host) appears twice") }
        }
        return .success(held)
    }

    /// The file's contents for `held`.
    static func render(_ held: [HostName: String]) -> [UInt8] {
        var text = header
        for (host, site) in held.sorted(by: { $0.key < $1.key }) {
            text += host.name + " " + site + "\n"
        }
        return Array(text.utf8)
    }

    /// Why the file was not written.
    public enum StoreError: Error, CustomStringConvertible {
        case system(SystemError)
        case tooLarge(Int)

        public var description: String {
            switch self {
            case .system(let error): "\(error)"
            case .tooLarge(let size): "\(size) bytes, more than \(ServedFirst.maximumFileSize)"
            }
        }
    }

    /// Writes `held` to `path`: a new file, synced, then renamed over the old, so that a crash
    /// leaves one or the other whole. Nothing is written past `limit` (the reader would refuse it).
    public static func store(_ held: [HostName: String], path: String, limit: Int = maximumFileSize) throws(StoreError) {
        let bytes = render(held)
        guard bytes.count <= limit else { throw .tooLarge(bytes.count) }
        do throws(SystemError) {
            try Files.replaceAtomically(path, with: bytes, mode: 0o600)
        } catch {
            throw .system(error)
        }
    }
}
