import HTTP1
import HTTP2
import TLS

/// One client connection, owned by one worker (connections never move between loops).
final class Connection {
    /// Where the connection is in a request's life (named as nginx names its phases).
    enum Phase: Equatable {
        /// TLS handshake in progress.
        case handshaking
        /// Waiting for (the rest of) a request head; `started` once its first byte arrived.
        case readingRequest(started: Bool)
        /// Output pending that the socket would not take yet; reading is paused (back-pressure).
        case writing
        /// The last response is out; the write side is shut and input is read and dropped until the
        /// peer closes, so a late pipelined request cannot turn into a reset that destroys the
        /// response (nginx's lingering close).
        case lingering
    }

    let fd: Int32
    let generation: UInt32
    var transport: Transport
    var phase: Phase
    /// Bytes read but not answered yet, from `inputOffset` on: an unfinished request head, or
    /// pipelined requests waiting for the socket to take earlier responses (empty almost always:
    /// complete requests are parsed straight from the worker's read buffer). Bounded by
    /// `Limits.maximumBufferedInput`: reading stops while requests wait (back-pressure).
    var input: [UInt8] = []
    /// Where the unanswered input starts. Answering moves it; the array is compacted only when the
    /// answered part is at least half of it, so a long pipeline costs linear work, not one move
    /// of the whole backlog per request.
    var inputOffset = 0
    /// Output the socket did not take yet, from `outputOffset` on.
    var output: [UInt8] = []
    var outputOffset = 0
    var parser = HTTP1Parser()
    /// Close once the pending output is written.
    var closeAfterWrite = false
    /// Monotonic second at which the current phase times out.
    var deadline: Int64
    /// Identifies the connection's live timer entry (see `TimerWheel.Entry`).
    var timerTicket: UInt32 = 0
    /// Accepted on the admin listener: answered by the admin endpoint, never with sites.
    var isAdmin = false
    /// The client's address, for the access log (set only when there is one).
    var client = "-"
    /// The listener it is counted under (nil for the admin listener, which is not counted).
    var counted: Traffic.ListenerClass?
    /// The HTTP/2 session, when ALPN chose h2.
    var http2: HTTP2Session?
    /// HTTP/2: the monotonic second since which the session has held an incomplete request (a
    /// stream whose END_STREAM has not come); nil when it holds none.
    var incompleteSince: Int64?
    /// The certificate the TLS handshake chose, for the 421 rule.
    var tlsIdentity: Responder.TLSIdentity = .none
    /// Interest registered with epoll.
    var watchingWrite = false
    var watchingRead = true
    /// Requests answered on this connection.
    var requests = 0

    init(fd: Int32, generation: UInt32, transport: Transport, deadline: Int64) {
        self.fd = fd
        self.generation = generation
        self.transport = transport
        phase = transport.isTLS ? .handshaking : .readingRequest(started: false)
        self.deadline = deadline
    }

    var hasPendingOutput: Bool { outputOffset < output.count }

    /// Input read and not yet answered.
    var bufferedInput: Int { input.count - inputOffset }

    /// Keeps bytes after what is buffered, compacting first when most of the buffer is answered.
    func appendInput(_ bytes: UnsafeRawBufferPointer) {
        if inputOffset > 0 && inputOffset >= input.count / 2 {
            input.removeFirst(inputOffset)
            inputOffset = 0
        }
        input.append(contentsOf: bytes)
    }

    /// Marks `count` buffered bytes as answered.
    func consumeInput(_ count: Int) {
        inputOffset += count
        if inputOffset >= input.count { clearInput() }
    }

    func clearInput() {
        input.removeAll(keepingCapacity: input.capacity <= 64 * 1024)
        inputOffset = 0
    }

    /// Queues bytes after the output still pending, so nothing is ever written ahead of it.
    func appendOutput(_ bytes: [UInt8]) {
        if outputOffset > 0 {
            output.removeFirst(outputOffset)
            outputOffset = 0
        }
        output.append(contentsOf: bytes)
    }
}

/// How bytes move on a connection: straight on the socket, or through TLS.
enum Transport {
    case plain
    case tls(TLSConnection)

    var isTLS: Bool {
        if case .tls = self { return true }
        return false
    }
}
