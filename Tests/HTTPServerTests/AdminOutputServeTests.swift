import HTTPServer
import TestSupport
import Testing

/// The admin worker's count of its clients' unread bytes (`AdminOutput`), each connection's share
/// kept with its state (`ConnectionMachine.account`, Sources/HTTPServer/AdminPending.swift) and
/// settled before each request it answers, after each of its steps and at its close, checked
/// through a real admin listener on loopback: clients that never read, that read everything, that
/// hang up mid-page (docs/benchmarks.md, "The admin listener while `/sites` renders").
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

    @Test("answers copied for each connection (not shared): at most the rest of one each while unread, none once read or closed")
    func ownBytesThenZero() throws {
        let admin = try AdminListener(size: 2 * 1024 * 1024)
        defer { admin.stop() }
        let idle = try (0..<2).map { _ in try admin.client(Self.asks("/small", 200), reads: false) }
        let reader = try admin.client(Self.asks("/small", 20), reads: true)
        #expect(eventually(attempts: 300) { idle.allSatisfy { $0.arrived > 0 } })
        // One answer a turn: a connection whose socket is full holds at most the rest of the one
        // it could not write whole (the kernel holds the others it took), not the 40 MB asked.
        #expect(admin.output.held <= 3 * 200 * 1024, "held: \(admin.output.held)")
        for _ in 0..<20 {
            let answer = reader.read()
            #expect(answer?.status == 200 && answer?.received == 200 * 1024)
        }
        for client in idle { client.close() }
        #expect(eventually(attempts: 300) { admin.output.held == 0 }, "still counted: \(admin.output.held)")
    }
}

/// Near the cap: what is refused (a large answer while others wait unread) and what is not (a
/// client that read everything before its next ask; a HEAD, which sends no body).
@Suite("Admin listener: the cap on unread bytes, near it", .serialized)
struct AdminOutputCapServeTests {
    /// Pages of 20 MB under a cap of 32 MB: one fits, two do not. Large enough that a client
    /// that does not read leaves most of a page unsent on a host whose send buffers are tuned far
    /// above the usual 4 MB (`net.ipv4.tcp_wmem`).
    static let size = 20 * 1024 * 1024
    static let bound = 32 * 1024 * 1024

    /// Each page's last byte written and the next ask answered in one step: the page it read
    /// must no longer count then.
    @Test(
        "pipelined asks for two different pages on one connection that reads everything: each answered, none refused",
        arguments: [false, true])
    func pipelinedAfterRead(tail: Bool) throws {
        let admin = try AdminListener(bound: Self.bound, size: Self.size, tail: tail)
        defer { admin.stop() }
        let paths = ["/a", "/b", "/a", "/b", "/a", "/b"]
        let client = try admin.client(paths.map { ("GET", $0) }, reads: true)
        for path in paths {
            let answer = client.read()
            #expect(answer?.status == 200 && answer?.received == Self.size + admin.tail, "\(path): \(answer?.head ?? "nothing")")
            #expect(answer?.first == path.utf8.last)
            if answer?.status != 200 { break }
        }
        #expect(eventually(attempts: 300) { admin.output.held == 0 }, "still counted: \(admin.output.held)")
    }

    @Test("a page another connection holds unread refuses a different one (503, the connection closed), not the same one")
    func refusedWhileHeld() throws {
        let admin = try AdminListener(bound: Self.bound, size: Self.size)
        defer { admin.stop() }
        let idle = try admin.client([("GET", "/a")], reads: false)
        #expect(eventually(attempts: 300) { idle.arrived > 0 && admin.output.held >= Self.size })
        let other = try admin.client([("GET", "/b"), ("GET", "/healthz")], reads: true)
        let refused = other.read()
        #expect(refused?.status == 503 && refused?.head.contains("Connection: close") == true)
        #expect(other.read() == nil, "nothing after the refusal")
        let same = try admin.client([("GET", "/a")], reads: true)
        #expect(same.read()?.status == 200, "the page held is counted once: another answer of it adds nothing")
    }

    @Test("HEAD for a large page while another is held unread: answered without its body, not counted, the connection kept")
    func headNotCounted() throws {
        let admin = try AdminListener(bound: Self.bound, size: Self.size)
        defer { admin.stop() }
        admin.giveLater()
        let idle = try admin.client([("GET", "/b")], reads: false)
        #expect(eventually(attempts: 300) { idle.arrived > 0 && admin.output.held >= Self.size })
        let held = admin.output.held
        // HEAD answered at once and given later, mixed with GETs: a GET of another page is still refused.
        let asks = [("HEAD", "/a"), ("HEAD", "/later"), ("GET", "/healthz"), ("HEAD", "/a"), ("GET", "/a")]
        let client = try admin.client(asks, reads: false)
        for (method, path) in asks.dropLast() {
            let answer = client.read(head: method == "HEAD")
            #expect(answer?.status == 200, "\(method) \(path): \(answer?.head ?? "nothing")")
            if method == "HEAD" {
                #expect(answer?.length == Self.size + 1 && answer?.head.contains("Connection: close") == false)
                #expect(admin.output.held < held + 4096, "a HEAD's body is not counted: \(admin.output.held)")
            }
        }
        let refused = client.read()
        #expect(refused?.status == 503 && refused?.head.contains("Connection: close") == true)
    }
}
