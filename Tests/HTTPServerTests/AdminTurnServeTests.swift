import HTTPServer
import TestSupport
import Testing

/// The admin listener answers one request per connection per turn of its loop
/// (Sources/HTTPServer/ConnectionMachine.swift, `answerHTTP1`): a client that pipelines thousands
/// of cheap-to-send asks (`HEAD /sites`, each costing the page's cache key on the admin thread)
/// cannot hold a probe on another connection behind all of them (docs/benchmarks.md, "The admin
/// listener").
@Suite("Admin listener: pipelined asks take turns with other connections", .serialized)
struct AdminTurnServeTests {
    @Test("a probe sent while a client's 300 pipelined asks wait is answered before most of them")
    func probeBetweenPipelinedAsks() throws {
        let admin = try AdminListener(size: 1024)
        defer { admin.stop() }
        // One write: every ask is in the socket when the worker reads the first, which holds
        // the worker's thread until the probe is sent too.
        let pipeliner = try admin.client(Array(repeating: ("HEAD", "/held"), count: 300), reads: true)
        #expect(admin.gate.waitHeld())
        let probe = try admin.client([("GET", "/probe")], reads: true)
        admin.gate.release()
        #expect(probe.read()?.status == 200)
        // Without turns the worker answers all 300 asks it read before it looks at the probe.
        #expect(admin.heldBeforeProbe >= 1 && admin.heldBeforeProbe < 50, "asks answered before the probe: \(admin.heldBeforeProbe)")
        for _ in 0..<300 { #expect(pipeliner.read(head: true)?.status == 200) }
    }
}
