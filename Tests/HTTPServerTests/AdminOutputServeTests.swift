import HTTPServer
import TestSupport
import Testing

/// The admin worker's count of its clients' unread bytes (`AdminOutput`), kept by the worker
/// itself after each step of a connection and on its close (Sources/HTTPServer/Worker+Deferred.swift),
/// checked through a real admin listener on loopback: clients that never read, that read
/// everything, that hang up mid-page (docs/benchmarks.md, "The admin listener while `/sites`
/// renders").
@Suite("Admin listener: unread bytes counted over real sockets", .serialized)
struct AdminOutputServeTests {
    /// Larger than what the kernel takes of a client that does not read (its 4 KB receive
    /// buffer and the server's send buffer, 4 MB at most here): most of each page stays unsent.
    static let size = 16 * 1024 * 1024
    /// What a connection may hold of its own besides a shared page: a head, a tail.
    static let slack = 64 * 1024

    static func asks(_ path: String, _ count: Int = 1, method: String = "GET") -> [(method: String, path: String)] {
        Array(repeating: (method, path), count: count)
    }

    @Test("one page answered to eight connections is counted once; the count is zero once each has read it, hung up, or closed mid-write")
    func sharedOnceThenZero() throws {
        let admin = try AdminListener(size: Self.size)
        defer { admin.stop() }
        let pipeliners = try (0..<2).map { _ in try admin.client(Self.asks("/a", 100), reads: false) }
        let quitters = try (0..<2).map { _ in try admin.client(Self.asks("/a"), reads: false) }
        let late = try (0..<2).map { _ in try admin.client(Self.asks("/a"), reads: true) }
        let readers = try (0..<2).map { _ in try admin.client(Self.asks("/a", 2), reads: true) }
        let all = pipeliners + quitters + late + readers
        #expect(eventually(attempts: 300) { all.allSatisfy { $0.arrived > 0 } && admin.output.held >= Self.size })
        #expect(admin.output.held < Self.size + Self.slack, "one page counted, not eight: \(admin.output.held)")
        // Two hang up mid-page; two read both their answers.
        for client in quitters { client.hangUp(after: 65_536) }
        for client in readers {
            for _ in 0..<2 {
                let answer = client.read()
                #expect(answer?.status == 200 && answer?.received == Self.size + 1)
            }
        }
        #expect(admin.output.held >= Self.size, "the others still hold the page")
        // The pipeliners close while their page is being written; the last two read it all.
        for client in pipeliners { client.close() }
        for client in late {
            let answer = client.read()
            #expect(answer?.status == 200 && answer?.received == Self.size + 1)
        }
        #expect(eventually(attempts: 300) { admin.output.held == 0 }, "still counted: \(admin.output.held)")
    }

    @Test("a render's answer to connections that pipelined many asks for it is counted once; zero once they close mid-page")
    func deferredSharedThenClosed() throws {
        let admin = try AdminListener(size: Self.size)
        defer { admin.stop() }
        let waiters = try (0..<4).map { _ in try admin.client(Self.asks("/later", 50), reads: false) }
        let reader = try admin.client(Self.asks("/later", 3), reads: true)
        // Each connection waits for the answer with its first ask (the others wait unread).
        #expect(eventually(attempts: 300) { admin.asksLater == 5 })
        admin.giveLater()
        #expect(eventually(attempts: 300) { waiters.allSatisfy { $0.arrived > 0 } && admin.output.held >= Self.size })
        for _ in 0..<3 {
            let answer = reader.read()
            #expect(answer?.status == 200 && answer?.received == Self.size + 1 && answer?.first == UInt8(ascii: "a"))
        }
        #expect(admin.output.held >= Self.size && admin.output.held < Self.size + Self.slack, "one page: \(admin.output.held)")
        // The last holders close: what they held goes with them.
        for client in waiters { client.close() }
        #expect(eventually(attempts: 300) { admin.output.held == 0 }, "still counted: \(admin.output.held)")
    }

    @Test("answers copied for each connection (not shared) are counted while unread, and no longer once read or closed")
    func ownBytesThenZero() throws {
        let admin = try AdminListener(size: 2 * 1024 * 1024)
        defer { admin.stop() }
        let idle = try (0..<2).map { _ in try admin.client(Self.asks("/small", 200), reads: false) }
        let reader = try admin.client(Self.asks("/small", 20), reads: true)
        #expect(eventually(attempts: 300) { idle.allSatisfy { $0.arrived > 0 } && admin.output.held > 0 })
        for _ in 0..<20 {
            let answer = reader.read()
            #expect(answer?.status == 200 && answer?.received == 200 * 1024)
        }
        for client in idle { client.close() }
        #expect(eventually(attempts: 300) { admin.output.held == 0 }, "still counted: \(admin.output.held)")
    }
}
