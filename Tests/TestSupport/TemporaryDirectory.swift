package import Foundation

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

    /// Writes `bytes` to `relative`, creating the directories on the way.
    package func write(_ relative: String, _ bytes: [UInt8]) throws {
        let file = url.appendingPathComponent(relative)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(bytes).write(to: file)
    }
}
