import Foundation
import Reactor
import Testing

@Suite("File calls for the config directory")
final class FilesTests {
    let directory = NSTemporaryDirectory() + "aasad-files-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @Test("a FIFO opens at once (O_NONBLOCK) and fstat on the same descriptor says it is no regular file")
    func fifoDoesNotBlock() throws {
        let path = directory + "/fifo"
        #expect(mkfifo(path, 0o600) == 0)
        let fd = try Files.openForReading(path)
        defer { Files.close(fd) }
        #expect(try Files.status(of: fd).kind == .other)
    }

    @Test("only ENOENT and ENOTDIR mean nothing by that name")
    func noSuchFile() throws {
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/file"))
        for (path, gone) in [(directory + "/missing", true), (directory + "/file/below", true)] {
            #expect(throws: SystemError.self) { try Files.status(path) }
            do {
                _ = try Files.status(path)
            } catch {
                #expect(error.isNoSuchFile == gone, "\(path): \(error)")
                #expect(error.reason.contains(error.errnoName), "\(error.reason)")
            }
        }
        #expect(try Files.status(directory + "/file").kind == .regular)
        #expect(try Files.status(directory).kind == .directory)
    }

    @Test("a symbolic link is itself to lstat and its target to stat")
    func links() throws {
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory)
        #expect(try Files.linkStatus(directory + "/link").kind == .symbolicLink)
        #expect(try Files.status(directory + "/link").kind == .directory)
    }

    @Test("a listing with types: each entry's own (a link is a link, dangling or not), as lstat says, within the limit")
    func typedEntries() throws {
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/file"))
        try FileManager.default.createDirectory(atPath: directory + "/dir", withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: directory + "/link", withDestinationPath: directory + "/dir")
        try FileManager.default.createSymbolicLink(atPath: directory + "/dangling", withDestinationPath: directory + "/none")
        #expect(mkfifo(directory + "/fifo", 0o600) == 0)
        let bad = directory + "/bad\u{1}"
        try Data().write(to: URL(fileURLWithPath: bad))
        let entries = try Files.typedEntries(of: directory)
        var kinds: [String: FileStatus.Kind] = [:]
        for entry in entries {
            // Where the file system gives no type (DT_UNKNOWN), the caller looks with lstat.
            kinds[entry.name] = try entry.kind ?? Files.linkStatus(directory + "/" + entry.name).kind
            let looked = try Files.linkStatus(directory + "/" + entry.name).kind
            #expect(entry.kind == nil || entry.kind == looked, "\(entry.name)")
        }
        let expected: [String: FileStatus.Kind] = [
            "file": .regular, "dir": .directory, "link": .symbolicLink, "dangling": .symbolicLink, "fifo": .other, "bad\u{1}": .regular,
        ]
        #expect(kinds == expected)
        #expect(Set(entries.map(\.name)) == Set(try Files.entries(of: directory)))
        #expect(try Files.typedEntries(of: directory, limit: 2).count == 2)
        #expect(throws: SystemError.self) { try Files.typedEntries(of: directory + "/file") }
    }

    /// readdir fills a buffer of 32 KB with records only as long as their names: with thousands of
    /// short names, a fill's last record ends a few bytes before the buffer does, and reading
    /// `d_name`'s whole 256 bytes there read past it (AddressSanitizer reports it:
    /// scripts/sanitize.sh address --filter FilesTests).
    @Test("a directory listed over many readdir buffers: every name once, as each listing call spells it")
    func longListing() throws {
        let names = Set((0..<3000).map { "n\($0)" })
        for name in names { #expect(close(open(directory + "/" + name, O_CREAT | O_WRONLY, 0o600)) == 0) }
        let listed = try Files.entries(of: directory)
        #expect(listed.count == names.count)
        #expect(Set(listed) == names)
        let typed = try Files.typedEntries(of: directory)
        #expect(typed.count == names.count)
        #expect(Set(typed.map(\.name)) == names)
        #expect(typed.allSatisfy { $0.kind == nil || $0.kind == .regular })
        // A descriptor is listed from its offset, which a listing moves to the end: one each.
        func opened() throws -> Int32 {
            let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(fd >= 0)
            return fd
        }
        let descriptors = try (0..<5).map { _ in try opened() }
        defer { for fd in descriptors { close(fd) } }
        let bytes = try #require(try Files.entryBytes(in: descriptors[0], limit: 5000))
        #expect(bytes.count == names.count)
        #expect(Set(bytes.map { String(cString: $0) }) == names)
        #expect(try Files.entryBytes(in: descriptors[1], limit: 2999) == nil)
        #expect(try Files.entryBytes(in: descriptors[2], limit: 3000)?.count == 3000)
        let fromDescriptor = try Files.entries(in: descriptors[3])
        #expect(fromDescriptor.count == names.count)
        #expect(Set(fromDescriptor) == names)
        // A bounded listing stops at its bound, wherever in a read of records that falls.
        #expect(try Files.entries(in: descriptors[4], limit: 1000).count == 1000)
        #expect(!(try Files.entries(in: descriptors[4])).isEmpty, "the bounded listing read the whole directory")
    }
}
