import Foundation
import TestSupport

/// A Python launcher from Fixtures (socket_activation.py, upgrade.py) that runs aasad and takes
/// commands on its standard input, one per line, answering with lines on its standard output.
final class Launcher {
    let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private var buffered: [UInt8] = []

    init(script: String, arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [Tool.python3, AASAD.testDirectory.appendingPathComponent("Fixtures/\(script)").path] + arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit { finish() }

    /// Ends the launcher (end of its input: it stops what it runs) and waits for it; a test calls
    /// it before removing the directories the launcher's servers use.
    func finish() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// The launcher's next line of output (bounded: 90 s, then the test fails).
    func line() throws -> String {
        let deadline = Date().addingTimeInterval(90)
        while Date() < deadline {
            if let end = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let text = String(decoding: buffered[..<end], as: UTF8.self)
                buffered.removeSubrange(...end)
                return text
            }
            let data = output.fileHandleForReading.availableData
            if data.isEmpty { break }
            buffered += data
        }
        throw Failure(description: "no line from the launcher")
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    func send(_ command: String) {
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
    }

    /// Waits until the load's clients have had `count` more good answers (load_clients.py): the
    /// load has run against the process serving now, whatever the machine's speed.
    func waitForAnswers(_ count: Int) throws -> Bool {
        send("answers \(count)")
        return try line() == "answered"
    }

    /// Sends `report` and reads the load's counts (load_clients.py).
    func report() throws -> [String: Any] {
        send("report")
        let text = try line()
        guard let report = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw Failure(description: "not a report: \(text)")
        }
        return report
    }
}
