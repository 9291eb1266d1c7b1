package import Foundation

/// The built `aasad` executable, for tests that run a command as a user would.
package enum Binary {
    /// The one SwiftPM built beside this test bundle, or the one `AASAD_BINARY` names (to run the
    /// same tests against another build, e.g. to see a fix's test fail on the code before it).
    package static var aasad: URL {
        if let path = ProcessInfo.processInfo.environment["AASAD_BINARY"], !path.isEmpty { return URL(fileURLWithPath: path) }
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [
            bundleDirectory.appendingPathComponent("aasad"),
            bundleDirectory.deletingLastPathComponent().appendingPathComponent("aasad"),
        ]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }
}
