import StrictJSON

/// One problem in the API's 422 answer (docs/api.md): `path` is the file relative to the site
/// directory, or `body` for the request's JSON itself.
public struct APIProblem: Error, Sendable, Equatable {
    public var code: String
    public var severity: String
    public var message: String
    public var path: String
    public var line: Int?
    public var column: Int?

    var json: String {
        "{\"code\":\(JSONValue.quote(code)),\"severity\":\(JSONValue.quote(severity)),\"message\":\(JSONValue.quote(message)),"
            + "\"path\":\(JSONValue.quote(path)),\"line\":\(line.map(String.init) ?? "null"),\"column\":\(column.map(String.init) ?? "null")}"
    }

    static func body(_ message: String, line: Int? = nil, column: Int? = nil) -> APIProblem {
        APIProblem(code: "body", severity: "error", message: message, path: "body", line: line, column: column)
    }
}

/// The files of a site as the API manages them: the names it writes, in the ETag's order.
enum SiteFiles {
    static let aasa = "apple-app-site-association"
    static let assetLinks = "assetlinks.json"
    static let settings = "site.yaml"
    static let page = "index.html"
    /// Every name the API writes, in the order the ETag covers them (docs/api.md).
    static let names = [aasa, assetLinks, settings, page]
}

/// A PUT body: `{"aasa": <object>, "assetlinks": <array>|null, "settings": <object>|null,
/// "page": <string>|null}`, turned into the site's files. The JSON is read by the strict parser
/// every served file is (its depth bound keeps a 100,000-level body to one error).
struct SiteBody {
    /// The files to write, by name (absent: not written).
    var files: [String: [UInt8]]
    /// The aliases `settings` names, as written (checked against the token's patterns).
    var aliases: [String]

    static func parse(_ bytes: [UInt8]) -> Result<SiteBody, APIProblem> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            return .failure(.body(error.message, line: error.location.line, column: error.location.column))
        }
        guard let members = value.objectMembers else { return .failure(.body("the body must be a JSON object")) }
        var seen = Set<String>()
        var aasa: JSONValue?
        var assetLinks: JSONValue?
        var settings: JSONValue?
        var page: JSONValue?
        for member in members {
            guard seen.insert(member.key).inserted else {
                return .failure(.body("the key \(JSONValue.quote(member.key)) is written twice"))
            }
            switch member.key {
            case "aasa": aasa = member.value
            case "assetlinks": assetLinks = member.value
            case "settings": settings = member.value
            case "page": page = member.value
            default:
                return .failure(.body("unknown key \(JSONValue.quote(member.key)); a site has aasa, assetlinks, settings and page"))
            }
        }
        var files: [String: [UInt8]] = [:]
        guard let aasa, aasa.objectMembers != nil else {
            return .failure(.body("aasa must be the apple-app-site-association object"))
        }
        files[SiteFiles.aasa] = Array(Self.text(aasa).utf8)
        if let assetLinks, assetLinks.kind != .null {
            guard assetLinks.arrayValue != nil else { return .failure(.body("assetlinks must be the assetlinks.json array, or null")) }
            files[SiteFiles.assetLinks] = Array(Self.text(assetLinks).utf8)
        }
        var pageText: String?
        if let page, page.kind != .null {
            guard let text = page.stringValue else { return .failure(.body("page must be the HTML page as a string, or null")) }
            pageText = text
        }
        var aliases: [String] = []
        var yaml = ""
        if let settings, settings.kind != .null {
            guard let keys = settings.objectMembers else { return .failure(.body("settings must be an object of site.yaml keys, or null")) }
            for member in keys {
                if member.key == "page" {
                    return .failure(.body("settings.page is set by the body's page field (written as index.html)"))
                }
                if member.key == "aliases", let list = member.value.arrayValue {
                    aliases = list.compactMap(\.stringValue)
                }
                // JSON is YAML's flow style: each key on a line of its own, so that a problem
                // site.yaml's parser finds names the key's line.
                yaml += JSONValue.quote(member.key) + ": " + Self.text(member.value) + "\n"
            }
        }
        if let pageText {
            files[SiteFiles.page] = Array(pageText.utf8)
            yaml += "page: \(SiteFiles.page)\n"
        }
        if !yaml.isEmpty { files[SiteFiles.settings] = Array(yaml.utf8) }
        return .success(SiteBody(files: files, aliases: aliases))
    }

    /// A JSON value written compactly: numbers as sent, strings quoted with every control
    /// character escaped (`JSONValue.quote`).
    static func text(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    private static func write(_ value: JSONValue, to out: inout String) {
        switch value.kind {
        case .object(let members):
            out += "{"
            for (i, member) in members.enumerated() {
                if i > 0 { out += "," }
                out += JSONValue.quote(member.key) + ":"
                write(member.value, to: &out)
            }
            out += "}"
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                write(item, to: &out)
            }
            out += "]"
        case .string(let s): out += JSONValue.quote(s)
        case .number(let n): out += n
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        }
    }
}
