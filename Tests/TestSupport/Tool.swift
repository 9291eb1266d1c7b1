import Foundation

/// Runs a command line tool (curl, openssl, python3) found on PATH and collects its output.
package enum Tool {
    package struct Output: Sendable {
        package var status: Int32
        package var stdout: [UInt8]
        package var stderr: String
        package var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// `tool` on PATH; `python3` is `Tool.python3`.
    package static func run(_ tool: String, _ arguments: [String], input: [UInt8]? = nil) throws -> Output {
        try launch(tool == "python3" ? python3 : tool, arguments, input: input)
    }

    /// The `python3` on PATH, as the interpreter's own path (`sys.executable`), found once per
    /// test process: PATH's may be a version manager's shim (pyenv's is a shell script that
    /// starts several processes, some 60 ms of CPU before each of the hundreds of Python clients
    /// and servers a test run starts). The same interpreter and packages; "python3" when it
    /// cannot say.
    package static let python3: String = {
        guard let found = try? launch("python3", ["-c", "import sys; sys.stdout.write(sys.executable)"]), found.status == 0,
            found.text.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: found.text)
        else { return "python3" }
        return found.text
    }()

    private static func launch(_ tool: String, _ arguments: [String], input: [UInt8]? = nil) throws -> Output {
        ignoreBrokenPipes()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let out = Pipe()
        let err = Pipe()
        let inPipe = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inPipe
        try process.run()
        if let input { inPipe.fileHandleForWriting.write(Data(input)) }
        try? inPipe.fileHandleForWriting.close()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: [UInt8](stdout), stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// A tool that exits before reading its input (openssl s_client when the connection fails)
    /// must fail its test, not kill the test process with SIGPIPE.
    package static func ignoreBrokenPipes() { _ = ignoredOnce }
    private static let ignoredOnce: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The SHA-256 fingerprint line of a PEM certificate file.
    package static func fingerprint(ofFile path: String) throws -> String {
        try run("openssl", ["x509", "-noout", "-fingerprint", "-sha256", "-in", path]).text
    }
}
