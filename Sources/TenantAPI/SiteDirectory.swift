import AASA
import CAASALinux
import Foundation
import Glibc
import HTTPCore
import Hashing
import Reactor
import SiteStore

/// A site directory under `<config>/sites/` as the API reads and writes it (docs/api.md): whole
/// directories put in place by one rename, so that the loader, the watcher and `validate` see the
/// old site or the new one, never a mix.
struct SiteDirectory: Sendable {
    let sitesPath: String
    /// The test's way to make a write fail as a full disk would (errno), by file name.
    var failWrite: (@Sendable (String) -> Int32?)? = nil

    /// Prefix of the API's own temporary names in `sites/`: a dot name, which the loader and the
    /// watcher ignore (`ConfigLoader.examine`).
    static let stagingPrefix = ".api-"
    /// Longest name of one directory entry (NAME_MAX, limits.h): a host may be 253 bytes, so its
    /// temporary name keeps only as much of the host as fits beside the prefix and the random part.
    static let maximumEntryName = 255

    /// A fresh temporary name in `sites/` for `host`: `.api-<host>-<16 hex>`, the host cut short
    /// when the whole would exceed `maximumEntryName` (the name only helps a person reading
    /// `sites/`; the random part makes it unique).
    static func temporaryName(_ host: String) -> String {
        let random = String(UInt64.random(in: .min ... .max), radix: 16)
        let room = maximumEntryName - stagingPrefix.utf8.count - 1 - 16  // "-" and at most 16 hex digits
        // The host is ASCII (`APIHostName` admitted it): a character is a byte.
        return stagingPrefix + host.prefix(room) + "-" + random
    }

    /// Largest file of a site the API reads back (the page's bound is the largest of the four).
    static var readLimit: Int {
        max(AppSiteAssociation.maximumFileSize, AssetLinks.maximumFileSize, SiteSettings.maximumFileSize, LandingPage.maximumFileSize)
    }

    /// What is under `sites/<host>` now.
    enum Current {
        case absent
        /// Something the API does not manage: why.
        case foreign(String)
        /// A site directory holding only the API's files: their bytes by name.
        case site([String: [UInt8]])
    }

    /// `strict`: a directory holding anything but the API's files is `foreign` (a write must not
    /// take it over); else those other entries are passed over (a read shows the API's files of
    /// a site managed by hand).
    func current(_ host: String, strict: Bool = true) -> Current {
        let path = sitesPath + "/" + host
        let status: FileStatus
        do {
            status = try Files.linkStatus(path)
        } catch {
            return error.isNoSuchFile ? .absent : .foreign("sites/\(host) cannot be examined: \(error.reason)")
        }
        switch status.kind {
        case .directory: break
        case .symbolicLink: return .foreign("sites/\(host) is a symbolic link (an alias or a site kept elsewhere), managed by hand")
        default: return .foreign("sites/\(host) is not a directory")
        }
        var entries: [String]
        do {
            entries = try Files.entries(of: path, limit: ConfigLoader.maximumListedEntries + 1)
        } catch {
            return .foreign("sites/\(host) cannot be listed: \(error.reason)")
        }
        // A directory fuller than a site's listing takes (ConfigLoader.swift) is listed no
        // further: not the API's, and read by its files' names.
        if entries.count > ConfigLoader.maximumListedEntries {
            if strict {
                return .foreign("sites/\(host) holds more than \(ConfigLoader.maximumListedEntries) entries; it is managed by hand")
            }
            entries = SiteFiles.names
        }
        var files: [String: [UInt8]] = [:]
        for entry in entries {
            guard SiteFiles.names.contains(entry) else {
                if !strict { continue }
                return .foreign("sites/\(host) holds \(entry), which the API does not manage; it is managed by hand")
            }
            guard (try? Files.linkStatus(path + "/" + entry).kind) == .regular else {
                if !strict { continue }
                return .foreign("sites/\(host)/\(entry) is not a regular file; the site is managed by hand")
            }
            switch ConfigLoader.readBounded(path: path + "/" + entry, limit: Self.readLimit) {
            case .success(let bytes): files[entry] = bytes
            case .failure(let error) where error.isMissing: continue
            case .failure(let error): return .foreign("sites/\(host)/\(entry) cannot be read: \(error)")
            }
        }
        return .site(files)
    }

    /// The ETag over a site's four files (docs/api.md): for each in the order aasa, assetlinks,
    /// site.yaml, page, its name, NUL, its length in decimal, NUL, its bytes (absent: name, NUL,
    /// `-`, NUL); SHA-256 in hex, quoted.
    static func etag(_ files: [String: [UInt8]]) -> String {
        var input: [UInt8] = []
        for name in SiteFiles.names {
            input += Array(name.utf8)
            input.append(0)
            if let bytes = files[name] {
                input += Array(String(bytes.count).utf8)
                input.append(0)
                input += bytes
            } else {
                input.append(UInt8(ascii: "-"))
                input.append(0)
            }
        }
        return "\"" + Hex.string(Digest.sha256(input)) + "\""
    }

    /// Why a write failed.
    enum Failure: Error {
        /// ENOSPC or EDQUOT: nothing was left behind.
        case noSpace(String)
        /// `sites/<host>` appeared meanwhile (a person or git-sync made it).
        case exists
        case other(String)
    }

    /// A fresh temporary directory holding `files`, each written and fsynced, and the directory
    /// fsynced. Removed again when anything fails.
    func stage(_ host: String, _ files: [String: [UInt8]]) throws(Failure) -> String {
        let staging = sitesPath + "/" + Self.temporaryName(host)
        do throws(SystemError) {
            try Files.makeDirectory(staging, mode: 0o755)
        } catch {
            throw Self.failure(error.errno, error.description)
        }
        var injected: Int32?
        do throws(SystemError) {
            for name in SiteFiles.names {
                guard let bytes = files[name] else { continue }
                if let code = failWrite?(name) {
                    injected = code
                    break
                }
                let fd = try Files.createExclusive(staging + "/" + name, mode: 0o644)
                defer { Files.close(fd) }
                try Files.writeAll(fd, bytes, at: 0)
                try Files.sync(fd)
            }
            try Files.syncDirectory(staging)
        } catch {
            Self.removeTree(staging)
            throw Self.failure(error.errno, error.description)
        }
        if let injected {
            Self.removeTree(staging)
            throw Self.failure(injected, "pwrite: errno \(injected)")
        }
        return staging
    }

    /// Puts the staged directory in place as `sites/<host>`: a new name that must not exist
    /// (RENAME_NOREPLACE), or an exchange with the directory there (RENAME_EXCHANGE), whose old
    /// tree is then removed. `sites/` is fsynced so that the rename survives a crash.
    func install(_ staging: String, as host: String, replacing: Bool) throws(Failure) {
        let target = sitesPath + "/" + host
        let flags: UInt32 = replacing ? Self.renameExchange : Self.renameNoReplace
        if CAASALinux_renameat2(staging, target, flags) != 0 {
            let code = errno
            Self.removeTree(staging)
            if code == EEXIST || (replacing && code == ENOENT) { throw .exists }
            throw Self.failure(code, "renameat2: \(String(cString: strerror(code)))")
        }
        // After an exchange the staging name holds the old site.
        if replacing { Self.removeTree(staging) }
        do throws(SystemError) {
            try Files.syncDirectory(sitesPath)
        } catch {
            throw Self.failure(error.errno, error.description)
        }
    }

    /// Removes `sites/<host>`: renamed to a dot name first (the loader sees the whole site go at
    /// once), then removed, and `sites/` fsynced.
    func remove(_ host: String) throws(Failure) {
        let hidden = sitesPath + "/" + Self.temporaryName(host)
        if CAASALinux_renameat2(sitesPath + "/" + host, hidden, Self.renameNoReplace) != 0 {
            let code = errno
            throw Self.failure(code, "renameat2: \(String(cString: strerror(code)))")
        }
        Self.removeTree(hidden)
        do throws(SystemError) {
            try Files.syncDirectory(sitesPath)
        } catch {
            throw Self.failure(error.errno, error.description)
        }
    }

    /// Removes the API's temporary names a killed process left in `sites/`; returns how many.
    func removeLeftovers() -> Int {
        guard let names = try? Files.entries(of: sitesPath) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(Self.stagingPrefix) {
            Self.removeTree(sitesPath + "/" + name)
            removed += 1
        }
        return removed
    }

    /// renameat2(2)'s flags (linux/fs.h).
    static let renameNoReplace: UInt32 = 1
    static let renameExchange: UInt32 = 2

    /// Removes a directory the API made, without following any symbolic link in it.
    static func removeTree(_ path: String) {
        try? FileManager.default.removeItem(atPath: path)
    }

    private static func failure(_ code: Int32, _ description: String) -> Failure {
        code == ENOSPC || code == EDQUOT ? .noSpace(description) : .other(description)
    }
}
