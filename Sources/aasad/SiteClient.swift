import ArgumentParser
import Daemon
import Foundation
import Outbound
import SafeText
import StrictJSON

/// The tenant API's client (docs/api.md, "The client"): one request at a time through the
/// project's outbound client (libcurl: no redirect followed, timeouts, bounded answers), the
/// answer printed escaped, the exit status from its class.
struct SiteClient {
    var base: String
    var token: String
    var caFile: String?
    var timeoutSeconds: Int
    var format: OutputFormat

    /// Largest answer read: a page of 1,000 summaries is some 200 KB and a site's state with
    /// every problem of a 1 MB request well below this; a larger answer is no API's.
    static let maximumAnswerBytes = 4 << 20
    /// Pages `list --all` follows: 1,000,000 sites at the largest page of 1,000, so that a
    /// server handing out cursors forever cannot keep the client going.
    static let maximumPages = 1_000
    /// Longest token taken from the environment: tokens are short random strings; this bounds
    /// the request head.
    static let maximumTokenBytes = 1_024

    // MARK: - Arguments

    /// Why a base URL is refused, or nil: `scheme://authority` with an optional path prefix, no
    /// query, fragment or user info, https or http to a loopback address (the outbound client's
    /// own check decides the latter).
    static func baseURLProblem(_ url: String) -> String? {
        guard url.utf8.count <= 2_048, url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be a URL of visible ASCII, e.g. https://api.example.com:8444"
        }
        let lower = url.lowercased()
        guard lower.hasPrefix("https://") || lower.hasPrefix("http://") else {
            return "must start with https:// (or http:// to a loopback address)"
        }
        guard !url.contains("?"), !url.contains("#"), !url.contains("@"), !url.contains("%") else {
            return "must hold no query, fragment, user info or percent-escape"
        }
        var request = OutboundRequest(url: url)
        request.allowsPlainHTTPToLoopback = true
        do {
            try OutboundClient.check(request)
        } catch {
            return "takes plain http only to a loopback address (127.0.0.1, [::1], localhost); use https for \(TerminalText.escaped(url))"
        }
        return nil
    }

    /// Why a host argument is refused before any request, or nil: the API's own form (lower-case
    /// LDH labels, an optional leading `*.`, at most 253 bytes), so that nothing the client puts
    /// in the path can leave `/v1/sites/`. The API checks it again.
    static func hostProblem(_ host: String) -> String? {
        let example = "give the host name alone, lower case, e.g. links.example.com"
        guard (1...253).contains(host.utf8.count) else { return "The host name must be 1 to 253 bytes: \(example)." }
        var labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.first == "*" { labels.removeFirst() }
        guard labels.count >= 1,
            labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count) && label.first != "-" && label.last != "-"
                    && label.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D }
            })
        else { return "'\(TerminalText.escaped(host))' is not a host name: \(example)." }
        return nil
    }

    /// Why an ETag argument is refused, or nil: `*` or a quoted string of visible ASCII.
    static func etagProblem(_ etag: String) -> String? {
        if etag == "*" { return nil }
        guard etag.utf8.count >= 2, etag.utf8.count <= 256, etag.hasPrefix("\""), etag.hasSuffix("\""),
            etag.utf8.dropFirst().dropLast().allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != 0x22 })
        else { return "takes * or an ETag as the API gave it, quotes included (e.g. '\"3f2a...\"')" }
        return nil
    }

    static func tokenProblem(_ token: String) -> String? {
        guard token.utf8.count <= maximumTokenBytes, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return "must be at most \(maximumTokenBytes) bytes of visible ASCII"
        }
        return nil
    }

    static func sitePath(_ host: String) -> String { "/v1/sites/" + host }

    /// A query value percent-encoded: only RFC 3986 unreserved bytes stay as they are.
    static func queryValue(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || Array("-._~".utf8).contains(byte)
            {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + (byte < 0x10 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    // MARK: - Requests

    /// One request; prints the answer and throws the exit status unless it was 2xx.
    func send(_ method: OutboundRequest.Method, path: String, body: [UInt8] = [], ifMatch: String? = nil) throws {
        let answer = try perform(method, path: path, body: body, ifMatch: ifMatch)
        try report(answer)
    }

    /// `list`: one page, or every page with `all`.
    func list(limit: Int, all: Bool, cursor: String?) throws {
        var cursor = cursor
        var pages = 0
        repeat {
            var path = "/v1/sites?limit=\(limit)"
            if let cursor { path += "&cursor=" + Self.queryValue(cursor) }
            let answer = try perform(.get, path: path)
            try report(answer)
            pages += 1
            guard all, let value = try? JSONParser.parse(answer.body),
                let next = value.objectMembers?.first(where: { $0.key == "next" })?.value.stringValue
            else { return }
            guard pages < Self.maximumPages, next.utf8.count <= 1_024 else {
                Self.complain("stopped after \(pages) pages: the API keeps giving a next cursor")
                throw ExitCode(1)
            }
            cursor = next
        } while true
    }

    private func perform(_ method: OutboundRequest.Method, path: String, body: [UInt8] = [], ifMatch: String? = nil) throws
        -> OutboundResponse
    {
        var configuration = OutboundClient.Configuration(caFile: caFile)
        configuration.totalTimeoutMilliseconds = timeoutSeconds * 1_000
        configuration.connectTimeoutMilliseconds = min(10, timeoutSeconds) * 1_000
        configuration.maximumBodyBytes = Self.maximumAnswerBytes
        configuration.userAgent = "aasad/\(AASACommand.version)"
        let base = base.hasSuffix("/") ? String(base.dropLast()) : base
        var request = OutboundRequest(method, url: base + path)
        request.allowsPlainHTTPToLoopback = true
        request.body = body
        request.fields = [(name: "Authorization", value: "Bearer " + token), (name: "Accept", value: "application/json")]
        if !body.isEmpty { request.fields.append((name: "Content-Type", value: "application/json")) }
        if let ifMatch { request.fields.append((name: "If-Match", value: ifMatch)) }
        do {
            return try OutboundClient(configuration: configuration).perform(request)
        } catch let error where error.kind == .request {
            Self.complain(TerminalText.escaped(error.message))
            throw SiteCommand.usage
        } catch {
            Self.complain("the API at \(base) could not be reached: \(TerminalText.escaped(error.message))")
            throw SiteCommand.unreachable
        }
    }

    /// Prints an answer (escaped) and throws the exit status: 0 on 2xx, else 1. A body that is
    /// no JSON is named by its status and an escaped excerpt.
    private func report(_ answer: OutboundResponse) throws {
        let ok = (200..<300).contains(answer.status)
        let value = answer.body.isEmpty ? nil : try? JSONParser.parse(answer.body)
        if !answer.body.isEmpty, value == nil {
            Self.complain("the API answered \(answer.status) with a body that is no JSON: \(Self.excerpt(answer.body))")
            throw ExitCode(1)
        }
        if (300..<400).contains(answer.status) {
            let location = answer.headers.first("location").map { TerminalText.escaped(utf8: $0) } ?? "nowhere"
            Self.complain("the API answered \(answer.status), a redirect to \(location); not followed (give the final URL with --api)")
            throw ExitCode(1)
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

    /// The first bytes of a body that is no JSON, escaped.
    private static func excerpt(_ body: [UInt8]) -> String {
        let shown = TerminalText.escaped(utf8: Array(body.prefix(200)))
        return body.count > 200 ? shown + "..." : shown
    }

    static func complain(_ message: String) {
        FileHandle.standardError.write(Data("error: \(message)\n".utf8))
    }
}
