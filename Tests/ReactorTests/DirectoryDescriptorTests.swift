import Foundation
import Glibc
import Testing

@testable import Reactor

/// A directory listed and opened through its descriptor (`Files.entries(in:)`, `openat`): what a
/// full load of `sites/` does for each site.
@Suite("Directories listed and opened through a descriptor")
final class DirectoryDescriptorTests {
    let directory = NSTemporaryDirectory() + "aasad-dirfd-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    @Test("a listing through the descriptor is readdir's, over many getdents64 calls, a name not UTF-8 as entries spells it")
    func sameAsReaddir() throws {
        // 400 names of 60 bytes: several times the buffer, so the listing takes several calls.
        for i in 0..<400 { try Data().write(to: URL(fileURLWithPath: directory + "/" + String(format: "%060d", i))) }
        let raw = Array(directory.utf8) + Array("/bad-".utf8) + [0xFF, 0]
        let fd = raw.map { CChar(bitPattern: $0) }.withUnsafeBufferPointer { open($0.baseAddress!, O_CREAT | O_WRONLY, 0o600) }
        #expect(fd >= 0)
        close(fd)
        let opened = try Files.openDirectory(directory)
        defer { Files.close(opened) }
        let listed = try Files.entries(in: opened)
        #expect(listed.count == 401)
        #expect(Set(listed) == Set(try Files.entries(of: directory)))
        #expect(!listed.contains(".") && !listed.contains(".."))
        #expect(listed.contains("bad-\u{FFFD}"))
    }

    @Test("a record whose length does not fit is EIO, never a read past the buffer or a loop")
    func badRecords() throws {
        func records(_ length: UInt16, name: String, total: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: total)
            bytes[16] = UInt8(length & 0xFF)
            bytes[17] = UInt8(length >> 8)
            for (i, byte) in name.utf8.enumerated() where 19 + i < total { bytes[19 + i] = byte }
            return bytes
        }
        /// The names `eachRecord` gives, or nil when it throws.
        func names(_ bytes: [UInt8]) -> [String]? {
            bytes.withUnsafeBytes { buffer -> [String]? in
                var names: [String] = []
                do throws(SystemError) {
                    try Files.eachRecord(buffer) { names.append(String(decoding: $0, as: UTF8.self)) }
                } catch {
                    return nil
                }
                return names
            }
        }
        for (length, total) in [(0, 24), (19, 24), (25, 24), (UInt16.max, 40)] as [(UInt16, Int)] {
            #expect(names(records(length, name: "a", total: total)) == nil, "length \(length)")
        }
        // A buffer that ends inside a record's fixed fields.
        #expect(names([UInt8](repeating: 0, count: 10)) == nil)
        #expect(names(records(24, name: "ab", total: 24)) == ["ab"])
    }

    @Test("a directory entry opened through the descriptor: a link to a directory or a file fails, a directory opens")
    func openedThroughDescriptor() throws {
        try FileManager.default.createDirectory(atPath: directory + "/d", withIntermediateDirectories: true)
        try Data().write(to: URL(fileURLWithPath: directory + "/f"))
        try FileManager.default.createSymbolicLink(atPath: directory + "/l", withDestinationPath: "d")
        let opened = try Files.openDirectory(directory)
        defer { Files.close(opened) }
        let d = try Files.openDirectoryNotFollowing("d", in: opened)
        Files.close(d)
        for (name, errno) in [("l", ENOTDIR), ("f", ENOTDIR), ("gone", ENOENT)] {
            do {
                let fd = try Files.openDirectoryNotFollowing(name, in: opened)
                Files.close(fd)
                Issue.record("\(name) opened")
            } catch {
                #expect(error.errno == errno, "\(name): \(error)")
            }
        }
        #expect(throws: SystemError.self) { try Files.openForReadingNotFollowing("l", in: opened) }
    }

    @Test("paths joined with one allocation; names interned only when equal; an entry opened by its place in a multibyte path")
    func joinedInternedAndOffsets() throws {
        #expect(Files.joined("/é/sites/", "a.test", "/tls") == "/é/sites/a.test/tls")
        #expect(Files.joined("", "") == "")
        let site = directory + "/é-конфиг"
        try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
        for name in ["apple-app-site-association", "apple-app-site-association.json", "apple-app-site-associatio"] {
            try Data(name.utf8).write(to: URL(fileURLWithPath: site + "/" + name))
        }
        try FileManager.default.createSymbolicLink(atPath: site + "/l", withDestinationPath: "apple-app-site-association")
        let opened = try Files.openDirectory(site)
        defer { Files.close(opened) }
        let listed = try Files.entries(in: opened, interned: ["apple-app-site-association"])
        #expect(
            listed.sorted() == ["apple-app-site-association", "apple-app-site-association.json", "apple-app-site-associatio", "l"].sorted())
        for name in ["apple-app-site-association", "apple-app-site-association.json"] {
            let path = site + "/" + name
            let fd = try Files.openForReadingNotFollowing(path, nameAt: site.utf8.count + 1, in: opened)
            defer { Files.close(fd) }
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = try buffer.withUnsafeMutableBytes { try Files.read(fd, into: $0) }
            #expect(Array(buffer[..<count]) == Array(name.utf8))
        }
        #expect(throws: SystemError.self) { try Files.openForReadingNotFollowing(site + "/l", nameAt: site.utf8.count + 1, in: opened) }
    }
}
