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
}
