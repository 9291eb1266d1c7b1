import Foundation
import SafeText
import SiteStore
import StrictJSON
import TenantAPI
import Yams

/// The PUT body built from the user's files: each JSON file checked by the project's strict
/// parser and embedded as written (its bytes are what the API validates and writes), the
/// settings converted from YAML when they are not JSON, the page as a JSON string.
package enum SiteRequestBody {
    package struct Problem: Error { package var message: String }

    /// The API's whole-request bound (TenantAPI.maximumBodyBytes, docs/api.md): a larger
    /// body is refused here with the file named instead of a 413 from the server.
    package static let maximumBytes = TenantAPI.maximumBodyBytes

    package static func make(aasa: String, assetlinks: String?, settings: String?, page: String?) throws(Problem) -> [UInt8] {
        var body = Array(#"{"aasa":"#.utf8) + (try json(aasa, expecting: "an object"))
        if let assetlinks { body += Array(#","assetlinks":"#.utf8) + (try json(assetlinks, expecting: "an array")) }
        if let settings { body += Array(#","settings":"#.utf8) + (try settingsJSON(settings)) }
        if let page {
            let bytes = try read(page)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw Problem(message: "\(TerminalText.escaped(page)): not UTF-8 text")
            }
            body += Array(#","page":"#.utf8) + Array(JSONValue.quote(text).utf8)
        }
        body += Array("}".utf8)
        guard body.count <= maximumBytes else {
            throw Problem(message: "the request would be \(body.count) bytes; the API takes at most \(maximumBytes)")
        }
        return body
    }

    /// A file's bytes, bounded, refused unless a regular file.
    package static func read(_ path: String) throws(Problem) -> [UInt8] {
        switch ConfigLoader.readBounded(path: path, limit: maximumBytes) {
        case .success(let bytes) where bytes.count > maximumBytes:
            throw Problem(message: "\(TerminalText.escaped(path)): larger than the API's \(maximumBytes) bytes")
        case .success(let bytes): return bytes
        case .failure(let error):
            throw Problem(message: "\(TerminalText.escaped(path)): cannot read: \(TerminalText.escaped(error.description))")
        }
    }

    package static func json(_ path: String, expecting kind: String) throws(Problem) -> [UInt8] {
        let bytes = try read(path)
        do {
            let value = try JSONParser.parse(bytes)
            guard value.typeName == kind else { throw Problem(message: "\(TerminalText.escaped(path)): \(value.typeName), not \(kind)") }
            return bytes
        } catch let error as JSONSyntaxError {
            throw Problem(
                message:
                    "\(TerminalText.escaped(path)):\(error.location.line):\(error.location.column): \(TerminalText.escaped(error.message))")
        } catch let error as Problem {
            throw error
        } catch {
            throw Problem(message: "\(TerminalText.escaped(path)): \(error)")
        }
    }

    /// site.yaml keys as JSON: the file as is when it is a JSON object, else its YAML mapping
    /// converted (Yams, the loader's own YAML library).
    package static func settingsJSON(_ path: String) throws(Problem) -> [UInt8] {
        let bytes = try read(path)
        if let value = try? JSONParser.parse(bytes) {
            guard value.typeName == "an object" else { throw Problem(message: "\(TerminalText.escaped(path)): settings must be a mapping") }
            return bytes
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw Problem(message: "\(TerminalText.escaped(path)): not UTF-8 text")
        }
        do {
            guard let mapping = try Yams.load(yaml: text) as? [String: Any], JSONSerialization.isValidJSONObject(mapping) else {
                throw Problem(message: "\(TerminalText.escaped(path)): settings must be a YAML mapping of plain values")
            }
            return Array(try JSONSerialization.data(withJSONObject: mapping, options: [.sortedKeys, .withoutEscapingSlashes]))
        } catch let error as Problem {
            throw error
        } catch {
            throw Problem(message: "\(TerminalText.escaped(path)): not YAML: \(TerminalText.escaped(String(describing: error)))")
        }
    }
}
