import Foundation
import HTTPCore
import Hashing
import Logging
import SiteStore
import Synchronization
import TestSupport

@testable import TenantAPI

/// A tenant API over a temporary config directory, called directly (no listener), with the
/// served state read from the directory itself (`DirectoryServedState`) unless a test gives one.
final class APIFixture: @unchecked Sendable {
    let directory: TemporaryDirectory
    let logs = LogLines()
    let tokens: APITokenStore
    let api: TenantAPI
    /// The ownership checks, when the fixture keeps them (`verification: true`).
    let verification: VerificationStore?

    static let platform = "platform-secret-0123456789"
    static let customerA = "customer-a-secret-0123456789"
    static let reader = "reader-secret-0123456789"
    static let noScope = "no-scope-secret-0123456789"

    static func sha(_ token: String) -> String { Hex.string(Digest.sha256(Array(token.utf8))) }

    static let tokensFile = """
        tokens:
          - name: platform
            sha256: \(sha(platform))
            scope: write
            hosts: ["*"]
          - name: customer-a
            sha256: \(sha(customerA))
            scope: write
            hosts: ["*.customer-a.example", "links.customer-a.com"]
          - name: reader
            sha256: \(sha(reader))
            scope: read
            hosts: ["*"]

        """

    static let aasa = #"{"applinks":{"apps":[],"details":[{"appIDs":["ABCDE12345.com.example.app"],"components":[{"/":"/a/*"}]}]}}"#

    init(
        tokens tokensText: String? = APIFixture.tokensFile, readOnly: String? = nil, requestsPerMinute: Int = 100_000,
        state: ((String) -> any APIServedState)? = nil, servedTimeout: Duration = .seconds(5),
        failWrite: (@Sendable (String) -> Int32?)? = nil, verification: Bool = false,
        prepare: (TemporaryDirectory) throws -> Void = { _ in }
    ) throws {
        directory = try TemporaryDirectory(prefix: "tenant-api")
        try FileManager.default.createDirectory(atPath: directory.path("sites"), withIntermediateDirectories: true)
        if let tokensText { try directory.write("tokens.yaml", Array(tokensText.utf8)) }
        try prepare(directory)
        let logger = Logger(label: "test") { [logs] _ in logs }
        tokens = APITokenStore(path: directory.path("tokens.yaml"), logger: logger)
        let root = directory.path
        let store = verification ? try VerificationStore(configDirectory: root) : nil
        self.verification = store
        api = TenantAPI(
            configuration: .init(
                configDirectory: root, readOnlyReason: readOnly, requestsPerMinute: requestsPerMinute, servedTimeout: servedTimeout,
                verification: store),
            tokens: tokens, state: state?(root) ?? DirectoryServedState(root: root), logger: logger, failWrite: failWrite)
    }

    var sites: String { directory.path("sites") }

    func call(
        _ method: String, _ target: String, token: String? = APIFixture.platform, body: String? = nil,
        headers: [(name: String, value: String)] = [], contentType: String = "application/json"
    ) -> APIResponse {
        var fields = headers
        if let token { fields.append(("authorization", "Bearer \(token)")) }
        if body != nil { fields.append(("content-type", contentType)) }
        return api.handle(APIRequest(method: method, target: target, headers: fields, body: Array((body ?? "").utf8)))
    }

    func put(_ host: String, aasa: String = APIFixture.aasa, extra: String = "", token: String = APIFixture.platform) -> APIResponse {
        call("PUT", "/v1/sites/\(host)", token: token, body: #"{"aasa":\#(aasa)\#(extra)}"#)
    }

    /// The names under sites/, sorted.
    func entries() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: sites)) ?? []).sorted() }

    func file(_ host: String, _ name: String) -> String? {
        (try? Data(contentsOf: URL(fileURLWithPath: "\(sites)/\(host)/\(name)"))).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension APIResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
    func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    /// The error code of an error body.
    var errorCode: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["error"] as? String
    }
    var json: [String: Any] { ((try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]) ?? [:] }
}

extension LogLines {
    /// The API's write records (`api-write`), with their metadata.
    func writes() -> [Logger.Metadata] { all.filter { $0.message == "api-write" }.map(\.metadata) }
}

/// A served state that never serves anything new: writes answer 202.
final class NeverServed: APIServedState {
    func served(directory: String) -> APIServedSite? { nil }
    func ownership() -> HostOwnership { HostOwnership() }
}
