import AASA
import Daemon
import Foundation
import SiteStore

/// What `aasad validate` found, per file, in the shape `--format json` prints (a stable
/// interface: fields are only ever added).
struct ValidationReport: Encodable {
    struct Finding: Encodable {
        var severity: Diagnostic.Severity
        var rule: String
        var path: String?
        var value: String?
        var message: String
        var line: Int?
        var column: Int?
    }

    struct File: Encodable {
        /// The file or directory as the user named it (config files: config path + relative path).
        var file: String
        /// `apple-app-site-association`, `assetlinks.json`, or `config` for the directory itself.
        var kind: String
        /// The site's host, for files inside a config directory.
        var host: String?
        var valid: Bool
        var findings: [Finding]
        /// For a page: what takes it, "the site's page" and/or "the page of routes[i] (PATH), …".
        var takenBy: String? = nil
        /// For a page: the routes (indices in `routes:`) that answer with it.
        var routes: [Int]? = nil
    }

    var valid: Bool
    var sites: Int?
    var invalidSites: Int?
    var files: [File]

    static func finding(_ d: Diagnostic) -> Finding {
        Finding(
            severity: d.severity, rule: d.rule.rawValue, path: d.path?.description, value: d.value, message: d.message,
            line: d.location?.line, column: d.location?.column)
    }

    static func finding(_ p: ConfigProblem) -> Finding {
        Finding(severity: p.severity, rule: "config", path: nil, value: nil, message: p.message, line: nil, column: nil)
    }

    static func file<D>(_ f: SiteFile<D>, kind: String, host: String?, root: String) -> File {
        File(
            file: join(root, f.relativePath), kind: kind, host: host, valid: f.result.isValid,
            findings: f.result.diagnostics.map(finding))
    }

    /// Reports for every file and problem of a scanned config directory (or single site).
    static func files(of scan: ConfigScan, root: String) -> [File] {
        var out: [File] = []
        var byFile: [String: [ConfigProblem]] = [:]
        var order: [String] = []
        func collect(_ p: ConfigProblem) {
            if byFile[p.file] == nil { order.append(p.file) }
            byFile[p.file, default: []].append(p)
        }
        scan.problems.forEach(collect)
        for site in scan.sites {
            site.problems.forEach(collect)
            if let a = site.aasa { out.append(file(a, kind: ConfigLoader.aasaFileName, host: site.host.name, root: root)) }
            if let a = site.assetLinks { out.append(file(a, kind: ConfigLoader.assetLinksFileName, host: site.host.name, root: root)) }
            for (name, p) in site.pages.sorted(by: { $0.key < $1.key }) {
                var page = file(p, kind: "page", host: site.host.name, root: root)
                page.takenBy = site.pageUses[name]?.takenBy
                page.routes = site.pageUses[name]?.routes
                out.append(page)
            }
        }
        for name in order {
            let problems = byFile[name]!
            out.append(
                File(
                    file: join(root, name), kind: "config", host: nil,
                    valid: !problems.contains { $0.severity == .error }, findings: problems.map(finding)))
        }
        return out
    }

    static func join(_ root: String, _ relative: String) -> String {
        if root.isEmpty || root == "." { return relative }
        return root.hasSuffix("/") ? root + relative : root + "/" + relative
    }

    /// One line per finding, compiler style: `error: FILE: PATH: VALUE — MESSAGE [rule, line N]`.
    func printText(strict: Bool) {
        var errors = 0
        var warnings = 0
        for file in files {
            for f in file.findings {
                var line = "\(f.severity.rawValue): \(file.file): "
                if let path = f.path { line += "\(path): " }
                if let value = f.value { line += "\(value) — " }
                line += f.message
                var tags = [f.rule]
                if let l = f.line, let c = f.column { tags.append("line \(l), column \(c)") }
                line += " [\(tags.joined(separator: ", "))]"
                // One finding, one line: file names, values and what the parsers quote are escaped.
                print(TerminalText.escaped(line))
                if f.severity == .error { errors += 1 } else { warnings += 1 }
            }
        }
        // Which page each route takes (the site's own page is named by site.yaml alone).
        for file in files where file.routes?.isEmpty == false {
            print(TerminalText.escaped("page: \(file.file): \(file.takenBy ?? "")"))
        }
        let checked = files.filter { $0.kind != "config" }.count
        var summary = "\(checked) file\(checked == 1 ? "" : "s") checked"
        if let sites, let invalidSites {
            summary += ", \(sites) site\(sites == 1 ? "" : "s") (\(invalidSites) invalid)"
        }
        summary += ": \(errors) error\(errors == 1 ? "" : "s"), \(warnings) warning\(warnings == 1 ? "" : "s")"
        let ok = valid && !(strict && warnings > 0)
        print(summary + (ok ? " — ok" : strict && valid ? " — failed (--strict: warnings count as errors)" : " — failed"))
    }
}
