import HTTP1
import HTTPCore

/// Every bound and timeout of a connection, named, with the reason for its value.
public struct Limits: Sendable, Equatable {
    /// TLS handshake must finish within this many seconds (a client that opens a socket and sends
    /// nothing holds a descriptor for at most this long).
    public var handshakeTimeout: Int64 = 10
    /// A request head, once begun, must be complete within this many seconds (slowloris).
    public var requestTimeout: Int64 = 10
    /// An idle keep-alive connection is closed after this many seconds (the bench anchors use 60).
    public var idleTimeout: Int64 = 60
    /// A client that stops reading a pending response is dropped after this many seconds.
    public var writeTimeout: Int64 = 30
    /// After the last response, input is drained for at most this many seconds before closing.
    public var lingerTimeout: Int64 = 2
    /// Output buffered before the worker stops parsing pipelined requests and waits for the socket
    /// (pipelining back-pressure).
    public var outputHighWater = 64 * 1024
    /// Reads per readiness event: bounds one connection's share of a loop iteration.
    public var readsPerEvent = 4
    /// Rounds of answering already-read pipelined requests per readiness event, each up to
    /// `outputHighWater` of output: 16 × 64 KB = 1 MB a connection may write per read of its
    /// input, at most `readsPerEvent` reads an event, before others get their turn (h2o bounds a
    /// socket's writes per loop round the same way; the socket's send buffer bounds it further).
    /// When the rounds run out with requests still queued, the connection waits for writability,
    /// not for input. An admin connection spends them all on one answer (one request a turn:
    /// `ConnectionMachine.answerHTTP1`).
    public var answerRoundsPerEvent = 16
    /// Input read but not yet answered, at most (bytes): reading stops while complete requests
    /// wait for the socket (pipelining back-pressure, as swift-nio's HTTPServerPipelineHandler
    /// stops reading while a response is pending), so a client that sends requests and never
    /// reads holds one read buffer plus one unfinished head, not everything it sent (and, over
    /// TLS, what OpenSSL read ahead: at most its own read buffer, about 16 KB). Reading
    /// resumes only when what is buffered is less than one head, so a read can never pass this.
    public var maximumBufferedInput = Worker.readBufferSize + HTTP1Parser.maximumHeadLength
    /// Connections accepted per readiness event of a listener (nginx accepts in batches as well).
    public var acceptBatch = 64
    /// Seconds accepting pauses after EMFILE/ENFILE instead of spinning on a full descriptor table.
    public var acceptPause: Int64 = 1
    /// On a graceful stop, seconds open connections get to finish before they are closed.
    public var drainTimeout: Int64 = 10
    /// Connections one worker keeps open at most; at the limit it stops accepting until one
    /// closes (new clients wait in the listen backlog). 0: bounded only by the descriptor limit.
    public var maxConnections = 0
    /// Bytes the fields of all incomplete HTTP/2 requests may hold together, every worker's
    /// sessions counted (`RequestBudget`, default 32 MB); past it, streams that would wait for
    /// more and new connections are refused. Set when the server starts (a reload keeps the
    /// first value).
    public var incompleteRequestBytes = RequestBudget.defaultLimit

    public init() {}
}
