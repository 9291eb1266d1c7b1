import Foundation
import SiteStore
import TestSupport
import Testing

@testable import Daemon

/// Replays the config fuzzing corpus and saved failures (scripts/fuzz.sh `config`) through the
/// fuzz target's own checks, so a fixed failure stays fixed.
@Suite("Config fuzz corpus replay (site.yaml, aasad.yaml, header values)")
struct ConfigFuzzReplayTests {
    @Test("every corpus input passes the fuzz target's checks")
    func corpus() {
        let inputs = FuzzCorpus.inputs("config-corpus")
        #expect(!inputs.isEmpty, "Fuzz/config-corpus is empty")
        for input in inputs {
            let failures = ConfigFuzz.check(input.bytes)
            #expect(failures.isEmpty, "\(input.name): \(failures)")
        }
    }

    @Test("every saved failure passes now, and the CR/LF injections are refused by both parsers")
    func failCases() {
        let inputs = FuzzCorpus.failCases("config-fail-cases")
        #expect(inputs.count >= 3)
        for input in inputs {
            #expect(ConfigFuzz.check(input.bytes).isEmpty, "\(input.name)")
            let text = String(decoding: input.bytes, as: UTF8.self)
            guard input.name.hasPrefix("crlf-injection") else { continue }
            let (site, siteProblems) = SiteSettings.parse(text, file: "site.yaml")
            var settings = ServerSettings()
            let serverProblems = settings.apply(yaml: text, file: "aasad.yaml")
            if input.name.hasSuffix("raw-value") {
                #expect(ServingOptions.problem(cacheControl: text)?.contains("0x0D (CR)") == true)
            } else {
                #expect(site.cacheControl == nil && site.aliases.isEmpty, "\(input.name)")
                #expect(siteProblems.contains { $0.message.hasPrefix("cache-control (line") }, "\(input.name): \(siteProblems)")
                #expect(settings.cacheControl == ServingOptions.defaultCacheControl)
                #expect(serverProblems.contains { $0.key == "cache-control" }, "\(input.name): \(serverProblems)")
            }
        }
    }
}
