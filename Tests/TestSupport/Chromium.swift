import Foundation

/// Debian's `chromium`, headless, as a person's browser: it loads a page over a real socket,
/// runs what the page lets it run (its Content-Security-Policy included), and gives back the
/// document as it then stands (`--dump-dom`) or a picture of it (`--screenshot`).
package enum Chromium {
    /// Seconds a run may take before it is killed and the test fails: a start takes 2 to 6 s
    /// on a loaded two-core machine.
    package static let timeout: Double = 90

    /// The document after load, serialized (scripts that ran have changed it).
    package static func dumpDOM(_ url: String) throws -> String {
        String(decoding: try run(["--dump-dom", url]), as: UTF8.self)
    }

    /// A PNG of the page at `width`×`height` CSS pixels, written to `path`.
    package static func screenshot(_ url: String, to path: String, width: Int = 1280, height: Int = 1000) throws {
        try? FileManager.default.removeItem(atPath: path)
        _ = try run(["--screenshot=\(path)", "--window-size=\(width),\(height)", "--hide-scrollbars", url])
        guard FileManager.default.fileExists(atPath: path) else { throw Failure("chromium wrote no screenshot to \(path)") }
    }

    private static func run(_ arguments: [String]) throws -> [UInt8] {
        Tool.ignoreBrokenPipes()
        // A profile of its own per run: two runs at once would otherwise share one and the
        // second would hand its URL to the first.
        let profile = try TemporaryDirectory(prefix: "chromium")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments =
            [
                "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
                "--user-data-dir=\(profile.url.path)",
            ] + arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let killer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer)
        // Read both pipes at once: chromium's standard error is chatty (D-Bus warnings).
        let errors = Collector(err.fileHandleForReading)
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        killer.cancel()
        guard process.terminationStatus == 0 else {
            throw Failure("chromium \(arguments) exited with \(process.terminationStatus): \(errors.text.suffix(2000))")
        }
        return [UInt8](stdout)
    }

    /// Whether `chromium` is on PATH.
    package static var isInstalled: Bool { (try? Tool.run("sh", ["-c", "command -v chromium"]).status) == 0 }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        init(_ description: String) { self.description = description }
    }

    /// Reads a pipe to its end on a thread of its own.
    private final class Collector: @unchecked Sendable {
        // @unchecked: `data` is written by the reading thread before `done` is signalled and read after.
        private var data = Data()
        private let done = DispatchSemaphore(value: 0)
        init(_ handle: FileHandle) {
            Thread.detachNewThread { [self] in
                data = handle.readDataToEndOfFile()
                done.signal()
            }
        }
        var text: String {
            done.wait()
            return String(decoding: data, as: UTF8.self)
        }
    }
}
