import ArgumentParser
import Daemon
import Foundation
import Outbound
import SafeText
import StrictJSON
import TenantClient

/// `aasad site`'s side of a request: the request made by the tenant API's client (TenantClient),
/// the answer printed escaped, the exit status from its class.
struct SiteReport {
    var client: TenantClient
    var format: OutputFormat

    // MARK: - Requests

    /// One request; prints the answer and throws the exit status unless it was 2xx.
    func send(_ method: OutboundRequest.Method, path: String, body: [UInt8] = [], ifMatch: String? = nil) throws {
        try report(mapped { try client.perform(method, path: path, body: body, ifMatch: ifMatch) })
    }

    /// `list`: one page, or every page with `all` (`TenantClient.list`).
    func list(limit: Int, all: Bool, cursor: String?) throws {
        let walk = try mapped { try client.list(limit: limit, all: all, cursor: cursor, page: report) }
        guard walk.ended else {
            Self.complain("stopped after \(walk.pages) pages: the API keeps giving a next cursor")
            throw ExitCode(1)
        }
    }

    /// The client's requests, its failures as the exit statuses `site` documents.
    private func mapped<T>(_ requests: () throws -> T) throws -> T {
        do {
            return try requests()
        } catch TenantClient.Failure.usage(let message) {
            Self.complain(message)
            throw SiteCommand.usage
        } catch TenantClient.Failure.unreachable(let message) {
            Self.complain(message)
            throw SiteCommand.unreachable
        }
    }

    /// Prints an answer (escaped) and throws the exit status: 0 on 2xx, else 1. A body that is
    /// no JSON is named by its status and an escaped excerpt; a redirect is named, not followed.
    private func report(_ answer: OutboundResponse) throws {
        let ok = (200..<300).contains(answer.status)
        let value: JSONValue?
        switch TenantClient.read(answer) {
        case .notJSON(let status, let excerpt):
            Self.complain("the API answered \(status) with a body that is no JSON: \(excerpt)")
            throw ExitCode(1)
        case .redirect(let status, let location):
            Self.complain("the API answered \(status), a redirect to \(location); not followed (give the final URL with --api)")
            throw ExitCode(1)
        case .json(_, let parsed):
            value = parsed
        }
        switch format {
        case .json:
            // Valid JSON (parsed above) holds no raw C0 control; the format characters it may
            // hold raw are written as \u escapes.
            if value != nil { FileHandle.standardOutput.write(Data(JSONOutput.escapingFormatCharacters(answer.body) + [0x0A])) }
        case .text:
            if let value { printText(value, status: answer.status) } else if ok { print("\(answer.status) done") }
        }
        if !ok {
            if value == nil { Self.complain("the API answered \(answer.status)") }
            throw ExitCode(1)
        }
    }

    /// Text for people: one `key: value` or problem per line, every value escaped.
    private func printText(_ value: JSONValue, status: Int) {
        let members = value.objectMembers ?? []
        func member(_ key: String, in members: [JSONMember]) -> JSONValue? { members.first { $0.key == key }?.value }
        func text(_ value: JSONValue?) -> String {
            guard let value else { return "-" }
            switch value.kind {
            case .string(let s): return TerminalText.escaped(s)
            case .number(let n): return TerminalText.escaped(n)
            case .bool(let b): return b ? "yes" : "no"
            case .null: return "-"
            case .object, .array: return value.typeName
            }
        }
        if let problems = member("problems", in: members)?.arrayValue, member("host", in: members) == nil {
            // 422: what is wrong, file by file.
            for problem in problems { Self.printProblem(problem, to: FileHandle.standardError) }
            return
        }
        if let code = member("error", in: members) {
            Self.complain("\(status) \(text(code)): \(text(member("message", in: members)))")
            return
        }
        if let sites = member("sites", in: members)?.arrayValue {
            for site in sites {
                let fields = site.objectMembers ?? []
                print(
                    [
                        text(member("host", in: fields)), "served=\(text(member("served", in: fields)))",
                        "problems=\(text(member("problems", in: fields)))", "etag=\(text(member("etag", in: fields)))",
                    ].joined(separator: "\t"))
            }
            if let next = member("next", in: members)?.stringValue { print("next: \(TerminalText.escaped(next))") }
            return
        }
        print("host: \(text(member("host", in: members)))")
        print("status: \(status)")
        print("etag: \(text(member("etag", in: members)))")
        print("served: \(text(member("served", in: members)))")
        for file in member("files", in: members)?.objectMembers ?? [] {
            let fields = file.value.objectMembers
            let detail = fields.map { "sha256=\(text(member("sha256", in: $0))) bytes=\(text(member("bytes", in: $0)))" } ?? "none"
            print("file \(TerminalText.escaped(file.key)): \(detail)")
        }
        if let aliases = member("aliases", in: members)?.objectMembers {
            for held in member("held", in: aliases)?.arrayValue ?? [] { print("alias held: \(text(held))") }
            for refused in member("refused", in: aliases)?.arrayValue ?? [] {
                let fields = refused.objectMembers ?? []
                print(
                    "alias refused: \(text(member("host", in: fields))) (held by \(text(member("heldBy", in: fields))): \(text(member("reason", in: fields))))"
                )
            }
        }
        if let certificate = member("certificate", in: members)?.objectMembers {
            print(
                "certificate: \(text(member("source", in: certificate))) \(text(member("state", in: certificate))) until \(text(member("notAfter", in: certificate)))"
            )
        }
        for problem in member("problems", in: members)?.arrayValue ?? [] { Self.printProblem(problem, to: FileHandle.standardOutput) }
    }

    /// `severity: code: path:line:column: message`, escaped.
    private static func printProblem(_ problem: JSONValue, to handle: FileHandle) {
        let fields = problem.objectMembers ?? []
        func field(_ key: String) -> String {
            guard let value = fields.first(where: { $0.key == key })?.value else { return "-" }
            switch value.kind {
            case .string(let s): return TerminalText.escaped(s)
            case .number(let n): return TerminalText.escaped(n)
            default: return "-"
            }
        }
        var place = field("path")
        if field("line") != "-" { place += ":" + field("line") + (field("column") != "-" ? ":" + field("column") : "") }
        handle.write(Data("\(field("severity")): \(field("code")): \(place): \(field("message"))\n".utf8))
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    }
}
