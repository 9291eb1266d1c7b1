import AASA
import Foundation
import HTTPCore
import Hashing
import Logging
import Reactor
import SafeText
import Served
import SiteStore
import StrictJSON

/// `GET /v1/sites`: pages in byte order of the names the token covers, with sealed cursors.
extension TenantAPI {
    func list(token: APIToken, query: String) -> APIResponse {
        let limit: Int
        let after: String?
        switch Self.listQuery(query, token: token.name) {
        case .success(let parsed): (limit, after) = parsed
        case .failure(let refusal): return refusal.response
        }
        let page = names.page(after: after, limit: limit, scanning: Self.maximumNamesScanned, where: token.covers)
        var entries: [String] = []
        for host in page.hosts {
            guard case .site(let files) = directory.current(host, strict: false) else { continue }
            let etag = SiteDirectory.etag(files)
            let found = problems(host, directory.sitesPath + "/" + host)
            let served = isServed(host, files: files, aliases: found.aliases)
            entries.append(
                "{\"host\":\(JSONValue.quote(host)),\"etag\":\(JSONValue.quote(etag)),\"served\":\(served),\"problems\":\(found.all.count),\"verification\":\(JSONValue.quote(verificationState(host)))}"
            )
        }
        let next = page.last.map { JSONValue.quote(ListCursor.seal($0, token: token.name)) } ?? "null"
        return Self.json(200, "{\"sites\":[\(entries.joined(separator: ","))],\"next\":\(next)}")
    }

    struct QueryRefusal: Error {
        var response: APIResponse
    }

    /// The page size and the name to start after from the list's query (`limit`, `cursor`).
    static func listQuery(_ query: String, token: String) -> Result<(limit: Int, after: String?), QueryRefusal> {
        var limit = defaultPageSize
        var after: String?
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = kv.count > 1 ? kv[1] : ""
            switch kv[0] {
            case "limit":
                guard value.utf8.count <= 4, value.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let n = Int(value),
                    (1...maximumPageSize).contains(n)
                else { return .failure(QueryRefusal(response: error(400, "bad-request", "limit must be 1 to \(maximumPageSize)"))) }
                limit = n
            case "cursor":
                guard let host = ListCursor.open(value, token: token) else {
                    return .failure(QueryRefusal(response: error(400, "bad-request", "the cursor is not one this API gave")))
                }
                after = host
            default:
                return .failure(
                    QueryRefusal(response: error(400, "bad-request", "unknown query parameter; the list takes cursor and limit")))
            }
        }
        return .success((limit, after))
    }
}
