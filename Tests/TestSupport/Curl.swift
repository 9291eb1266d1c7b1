package import Foundation

/// A response as curl saw it.
package struct HTTPResult {
    package var status: Int
    package var headers: [String: String]
    package var body: [UInt8]
    package var connects: Int
    /// `1.1` or `2`, as curl reports it.
    package var version: String
}

/// curl, the client the end-to-end tests speak HTTP with.
package enum Curl {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// curl with `arguments` (10 s at most, the path sent as given), its response head written to
    /// a file in `scratch`; with several responses, the last one's head counts.
    package static func run(_ arguments: [String], scratch: String) throws -> HTTPResult {
        let headerFile = scratch + "/headers-\(UUID().uuidString)"
        let out = try Tool.run(
            "curl", ["-sS", "--path-as-is", "-D", headerFile, "-w", "\n%{num_connects} %{http_version}", "--max-time", "10"] + arguments)
        defer { try? FileManager.default.removeItem(atPath: headerFile) }
        var body = out.stdout
        var connects = 0
        var version = ""
        if let newline = body.lastIndex(of: 10) {
            let trailer = String(decoding: body[(newline + 1)...], as: UTF8.self).split(separator: " ")
            connects = Int(trailer.first ?? "") ?? 0
            version = String(trailer.last ?? "")
            body = Array(body[..<newline])
        }
        let head = (try? String(contentsOfFile: headerFile, encoding: .utf8)) ?? ""
        let blocks = head.components(separatedBy: "\r\n\r\n").filter { !$0.isEmpty }
        let lines = (blocks.last ?? "").components(separatedBy: "\r\n")
        let status = lines.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        if out.status != 0 && status == 0 { throw Failure(description: "curl failed (\(out.status)): \(out.stderr)") }
        return HTTPResult(status: status, headers: headers, body: body, connects: connects, version: version)
    }
}
