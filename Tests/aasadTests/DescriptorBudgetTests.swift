import Testing

@testable import Daemon
@testable import aasad

/// The descriptor budget's bounds at N and N+1: connections per worker leave the reserve
/// free, and a limit with no room for one connection per worker gives up on capping.
@Suite("Descriptor budget")
struct DescriptorBudgetTests {
    @Test("the reserve is the process's, each worker's and its listeners', and the reloader's per core")
    func reserve() {
        let reserve = DescriptorBudget.reserve(workers: 2, listenAddresses: 2, cores: 4)
        #expect(
            reserve == DescriptorBudget.processReserve + 2 * (DescriptorBudget.workerReserve + 2) + 4 * DescriptorBudget.readsPerCore)
    }

    @Test("one connection per worker fits exactly at reserve + workers descriptors, none at one fewer")
    func smallestLimit() {
        let reserve = 60
        #expect(DescriptorBudget.connectionsPerWorker(configured: 0, descriptors: reserve + 2, workers: 2, reserve: reserve) == 1)
        #expect(DescriptorBudget.connectionsPerWorker(configured: 0, descriptors: reserve + 1, workers: 2, reserve: reserve) == nil)
        #expect(DescriptorBudget.connectionsPerWorker(configured: 0, descriptors: reserve - 1, workers: 2, reserve: reserve) == nil)
    }

    @Test("a configured cap is kept up to what the descriptors allow, and lowered past it")
    func configuredCap() {
        let reserve = 60
        let descriptors = reserve + 2 * 500
        #expect(DescriptorBudget.connectionsPerWorker(configured: 500, descriptors: descriptors, workers: 2, reserve: reserve) == 500)
        #expect(DescriptorBudget.connectionsPerWorker(configured: 501, descriptors: descriptors, workers: 2, reserve: reserve) == 500)
        #expect(DescriptorBudget.connectionsPerWorker(configured: 0, descriptors: descriptors, workers: 2, reserve: reserve) == 500)
    }
}
