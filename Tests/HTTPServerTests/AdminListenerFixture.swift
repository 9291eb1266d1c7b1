import Glibc
import HTTPServer
import Logging
import Reactor
import Served
import Synchronization
import TestSupport

/// A real admin listener on loopback (its own worker thread and epoll loop, as aasad runs it),
/// answering a few fixed paths, its clients' unread bytes counted in `output`: what the cap on
/// them (`AdminOutput`) is checked through, with real sockets.
///
/// `/a` and `/b`: two large pages, each always from its own storage (as `/sites` is answered
/// from the page kept for the next ask); `/later`: `pageA`, given later (`PendingAnswer`)
/// once `giveLater` is called, as a render gives `/sites`; `/small`: 200 KB, copied for each
/// answer; `/held`: `ok`, counted, its first ask holding the admin worker's thread at `gate`;
/// `/probe`: `ok`, noting how many `/held` were answered before it; anything else: `ok`.
final class AdminListener {
    let output: AdminOutput
    let port: Int
    let pageA: [UInt8]
    let pageB: [UInt8]
    private let server: Server
    private let later: PendingAnswer
    private let laterAsks: Asks
    private let heldAsks: Asks
    private var clients: [AdminClient] = []
    /// Where the first ask for `/held` waits.
    let gate: Gate

    /// Bytes of each page's `tail`: 1, or 0 (the page whole in its body, as `/sites` is without
    /// an ACME manager).
    let tail: Int

    /// `bound`: the cap on unread bytes; `size`: each page's body; `tail`: whether a tail of one
    /// byte follows it.
    init(bound: Int = AdminOutput.maximumHeld, size: Int, tail: Bool = true) throws {
        let tail = tail ? Array("}".utf8) : []
        let output = AdminOutput(bound: bound)
        let pageA = [UInt8](repeating: UInt8(ascii: "a"), count: size)
        let pageB = [UInt8](repeating: UInt8(ascii: "b"), count: size)
        let small = [UInt8](repeating: UInt8(ascii: "s"), count: 200 * 1024)
        let later = PendingAnswer()
        let laterAsks = Asks()
        let heldAsks = Asks()
        let gate = Gate()
        let endpoint = AdminEndpoint(output: output) { target in
            switch target {
            case "/a": return .now(Self.answer(pageA, tail))
            case "/b": return .now(Self.answer(pageB, tail))
            case "/later":
                laterAsks.count.add(1, ordering: .relaxed)
                return .later(later)
            case "/small": return .now(AdminEndpoint.Answer(status: .ok, body: small))
            case "/held":
                if heldAsks.count.add(1, ordering: .relaxed).newValue == 1 { gate.hold() }
            case "/probe":
                heldAsks.beforeProbe.store(heldAsks.count.load(ordering: .relaxed), ordering: .relaxed)
            default: break
            }
            return .now(AdminEndpoint.Answer(status: .ok, body: Array("ok\n".utf8)))
        }
        let configuration = Server.Configuration(
            https: [], http: [], threads: 1, admin: try SocketAddress(parsing: "127.0.0.1:0"), adminEndpoint: endpoint)
        server = Server(
            configuration: configuration, store: SnapshotStore(Snapshot(generation: 1, sites: [], defaultCertificate: nil)), tls: nil,
            logger: Logger(label: "test.admin", factory: { _ in SwiftLogNoOpLogHandler() }))
        self.later = later
        self.laterAsks = laterAsks
        self.heldAsks = heldAsks
        self.gate = gate
        try server.start()
        port = Int(server.boundAdmin!.port)
        self.output = output
        self.tail = tail.count
        self.pageA = pageA
        self.pageB = pageB
    }

    private static func answer(_ page: [UInt8], _ tail: [UInt8]) -> AdminEndpoint.Answer {
        AdminEndpoint.Answer(status: .ok, contentType: "application/json", body: page, tail: tail)
    }

    /// Asks for `/later` so far.
    var asksLater: Int { laterAsks.count.load(ordering: .relaxed) }

    /// Asks for `/held` answered before the last `/probe` (-1: no probe yet).
    var heldBeforeProbe: Int { heldAsks.beforeProbe.load(ordering: .relaxed) }

    /// Gives `/later`'s answer: `pageA`, to every request that waits for it and every one after.
    func giveLater() { later.fulfil(Self.answer(pageA, Array("}".utf8))) }

    /// A client that sends `requests` (each a method and a path) in one write. `reads: false`
    /// gives it a small receive buffer, so that the kernel holds little of what it does not read:
    /// the rest stays unsent, counted.
    func client(_ requests: [(method: String, path: String)], reads: Bool) throws -> AdminClient {
        guard let fd = Loopback.connect(port: port, receiveBuffer: reads ? nil : 4096) else { throw Refused() }
        let client = AdminClient(fd: fd)
        clients.append(client)
        Loopback.setReceiveTimeout(fd, seconds: 60)
        Loopback.send(fd, Array(requests.map { "\($0.method) \($0.path) HTTP/1.1\r\nHost: localhost\r\n\r\n" }.joined().utf8))
        return client
    }

    struct Refused: Error {}

    /// Closes the clients left open, then stops the server.
    func stop() {
        for client in clients { client.close() }
        server.stop()
    }
}

private final class Asks: Sendable {
    let count = Atomic<Int>(0)
    let beforeProbe = Atomic<Int>(-1)
}

/// One client of an `AdminListener`.
final class AdminClient {
    let fd: Int32
    private var reader: ResponseReader
    private(set) var closed = false

    init(fd: Int32) {
        self.fd = fd
        reader = ResponseReader(fd: fd)
    }

    struct Answer {
        var status: Int
        var length: Int
        var head: String
        /// The body's bytes, counted (a page is not kept).
        var received: Int
        /// The body's first byte.
        var first: UInt8?
    }

    /// Bytes arrived and not read yet (FIONREAD): nonzero once the server answered.
    var arrived: Int { reader.arrived }

    /// Reads the next answer; `head`: a HEAD's, without a body. nil: the connection ended first.
    func read(head: Bool = false) -> Answer? {
        guard let fields = reader.head() else { return nil }
        var answer = Answer(status: fields.status, length: fields.length, head: fields.text, received: 0)
        guard !head else { return answer }
        (_, answer.received, answer.first) = reader.body(fields.length, keep: false)
        return answer
    }

    /// Reads up to `bytes` of what arrived, then closes: a client that hangs up mid-page.
    func hangUp(after bytes: Int = 0) {
        var left = bytes
        while left > 0, reader.fill() { left -= reader.drop() }
        close()
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }
}
