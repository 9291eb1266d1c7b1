import Foundation
import TestSupport
import Testing

@testable import TenantAPI

/// Replays the tenant API's fuzzing corpora and saved failures (scripts/fuzz.sh `tokens` and
/// `api`) through the fuzz targets' own checks (Sources/TenantAPI/TenantFuzz.swift), so that a
/// fixed failure stays fixed. The saved failures begin with the hostile inputs written by hand.
@Suite("Tenant API fuzz corpus replay (tokens file, request bytes)")
struct TenantFuzzReplayTests {
    @Test(arguments: [("tokens-corpus", "tokens"), ("tokens-fail-cases", "tokens"), ("api-corpus", "api"), ("api-fail-cases", "api")])
    func replay(folder: String, target: String) {
        let inputs = folder.hasSuffix("fail-cases") ? FuzzCorpus.failCases(folder) : FuzzCorpus.inputs(folder)
        #expect(!inputs.isEmpty, "Fuzz/\(folder) is empty")
        for input in inputs {
            let failures = target == "tokens" ? TenantFuzz.tokens(input.bytes) : TenantFuzz.request(input.bytes)
            #expect(failures.isEmpty, "\(input.name): \(failures)")
        }
    }

    @Test func theHostileRequestsAreRefusedAsTheListenerSendsThem() {
        let limits = APIListenerLimits()
        func read(_ name: String) -> APIConnection.Reading {
            APIConnection.read(FuzzCorpus.inputs("api-fail-cases").first { $0.name == name }?.bytes ?? [], limits: limits)
        }
        if case .refused(let response) = read("hostile-huge-content-length") {
            #expect(response.status == 413)
        } else {
            Issue.record("taken")
        }
        if case .refused(let response) = read("hostile-obs-text-field") { #expect(response.status == 400) } else { Issue.record("taken") }
        if case .request(let request, _) = read("hostile-empty-lines-before-request-line") {
            #expect(request.method == "PUT" && request.body == Array("{}".utf8))
        } else {
            Issue.record("the empty lines before a request line were not skipped")
        }
        if case .request(let request, _) = read("hostile-bare-lf-before-request-line") {
            #expect(request.method == "GET", "\(request.method.debugDescription)")
        }
        #expect(
            TenantAPI.route("/v1/sites/%2e%2e")
                == .refused(TenantAPI.error(400, "bad-request", "{host}: percent-escapes are not decoded; write the host name itself")))
        if case .failure = SiteBody.parse(Array(repeating: UInt8(ascii: "["), count: 100_000)) {
        } else {
            Issue.record("a 100,000-deep body taken")
        }
    }
}
