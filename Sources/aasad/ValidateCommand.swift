import AASA
import ArgumentParser
import Daemon
import Foundation
import SiteStore

/// `aasad validate`: the `nginx -t` of aasad. It runs the same loading code as `serve`.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check AASA and assetlinks.json files, or a whole config directory, as serve would load them.",
        discussion: """
            A PATH may be a file (a file named assetlinks.json is checked as a Digital Asset Links \
            list, one named aasad.yaml as the server's settings, any other as an \
            apple-app-site-association file), a site directory, or a config directory holding sites/ \
            (and its aasad.yaml, if any). Exit status 0 when everything is valid, 1 when anything is not.
            """
    )

    @Option(help: "Output format: text for people, json for scripts.")
    var format: OutputFormat = .text

    @Flag(help: "Treat warnings as errors (exit 1 when there is any warning).")
    var strict = false

    @Argument(help: "Files, site directories or config directories to check.")
    var paths: [String]

    func validate() throws {
        if paths.isEmpty {
            throw ValidationError("Name at least one file or directory to check, e.g. 'aasad validate config/'.")
        }
    }

    func run() throws {
        var files: [ValidationReport.File] = []
        var sites = 0
        var invalidSites = 0
        var sawConfig = false
        for path in paths {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
                files.append(Self.problem(path, "no such file or directory"))
                continue
            }
            if isDirectory.boolValue {
                let scan = ConfigLoading.load(directoryOrSite: path)
                sawConfig = true
                sites += scan.sites.count
                invalidSites += scan.sites.filter { !$0.isValid }.count
                files += ValidationReport.files(of: scan, root: scan.root)
                let settingsFile = ValidationReport.join(path, ServerSettings.fileName)
                if FileManager.default.fileExists(atPath: settingsFile) { files.append(Self.checkSettings(settingsFile)) }
            } else if (path as NSString).lastPathComponent == ServerSettings.fileName {
                files.append(Self.checkSettings(path))
            } else {
                files.append(Self.checkFile(path))
            }
        }
        let valid = files.allSatisfy(\.valid)
        let report = ValidationReport(
            valid: valid, sites: sawConfig ? sites : nil, invalidSites: sawConfig ? invalidSites : nil, files: files)
        let warnings = files.flatMap(\.findings).contains { $0.severity == .warning }
        switch format {
        case .json: JSONOutput.print(report)
        case .text: report.printText(strict: strict)
        }
        if !valid || (strict && warnings) { throw ExitCode(1) }
    }

    /// The server's settings file: every key known, every value usable.
    static func checkSettings(_ path: String) -> ValidationReport.File {
        let problems = ServerSettings.problems(ofFile: path)
        return ValidationReport.File(
            file: path, kind: ServerSettings.fileName, host: nil, valid: problems.isEmpty,
            findings: problems.map {
                .init(
                    severity: .error, rule: "settings", path: $0.key, value: nil, message: $0.escapedMessage, line: $0.line,
                    column: $0.column)
            })
    }

    /// A lone file (`ConfigLoading.validate(file:)`).
    static func checkFile(_ path: String) -> ValidationReport.File {
        switch ConfigLoading.validate(file: path) {
        case .failure(let error):
            return problem(path, "cannot read the file: \(error)")
        case .success(let file):
            return ValidationReport.File(
                file: path, kind: file.kind, host: nil, valid: file.valid, findings: file.diagnostics.map(ValidationReport.finding))
        }
    }

    static func problem(_ path: String, _ message: String) -> ValidationReport.File {
        ValidationReport.File(
            file: path, kind: "config", host: nil, valid: false,
            findings: [.init(severity: .error, rule: "config", path: nil, value: nil, message: message, line: nil, column: nil)])
    }
}
