package import Foundation
import Glibc

/// A fresh directory under the system's temporary directory, removed with everything in it when
/// the value is released.
package final class TemporaryDirectory {
    package let url: URL

    /// `prefix` names the test in the directory's name, for whoever finds one left behind.
    package init(prefix: String = "aasad-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    package var path: String { url.path }

    /// The path of `relative` inside the directory.
    package func path(_ relative: String) -> String { url.appendingPathComponent(relative).path }

    /// Writes `bytes` to `relative` in place (truncated, then written, as `Data.write(to:)`
    /// without options), creating the directories on the way. Not through `Data.write`: it
    /// fsyncs each file, which cost suites that write thousands of sites (ManySitesTests) a
    /// sixth of their CPU, for a durability no test needs.
    package func write(_ relative: String, _ bytes: [UInt8]) throws {
        let file = url.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let fd = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw WriteError(path: file.path, errno: errno) }
        defer { close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw WriteError(path: file.path, errno: errno) }
            written += n
        }
    }

    package struct WriteError: Error, CustomStringConvertible {
        package var path: String
        package var errno: Int32
        package var description: String { "writing \(path): \(String(cString: strerror(errno)))" }
    }
}
