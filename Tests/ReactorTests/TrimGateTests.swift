import Testing

@testable import Reactor

/// The serving workers' trims, at most one per `Memory.servingTrimInterval` seconds all together
/// (`TrimGate`): an attacker's bursts of connections must not make a worker walk a large heap's
/// free lists every second.
@Suite("Memory: trims let through at most once per interval")
struct TrimGateTests {
    @Test("the first trim goes through; another at interval - 1 seconds is held back, at interval it goes through")
    func interval() {
        let gate = TrimGate(interval: Memory.servingTrimInterval)
        var trims = 0
        #expect(gate.isDue(now: 0) && gate.trim(now: 0) { trims += 1 })
        let next = Memory.servingTrimInterval
        #expect(!gate.isDue(now: next - 1) && !gate.trim(now: next - 1) { trims += 1 })
        #expect(gate.isDue(now: next) && gate.trim(now: next) { trims += 1 })
        #expect(!gate.trim(now: next) { trims += 1 }, "a second worker in the same second")
        #expect(trims == 2)
    }
}
