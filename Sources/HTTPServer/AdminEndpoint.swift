public import HTTPCore

/// The admin listener's answers (DESIGN.md "Operations"): plain HTTP on its own worker thread, so
/// a large answer (the state of 100,000 sites) never holds up serving. The command supplies the
/// content; this type frames it.
public struct AdminEndpoint: Sendable {
    /// One admin answer: a status, a media type and a body. The status is one of the statuses
    /// the server can send, so an answer cannot carry one the status line would have to guess.
    public struct Answer: Sendable {
        public var status: Status
        public var contentType: String
        public var body: [UInt8]

        public init(status: Status, contentType: String = "text/plain; charset=utf-8", body: [UInt8]) {
            self.status = status
            self.contentType = contentType
            self.body = body
        }
    }

    /// Answers a GET for a path; nil for an unknown path (404).
    public typealias Handler = @Sendable (String) -> Answer?

    private let handler: Handler

    public init(_ handler: @escaping Handler) {
        self.handler = handler
    }

    func respond(method: Method, path: String) -> Response {
        guard let answer = handler(path) else { return .error(.notFound, close: false) }
        guard method != .other else { return .error(.methodNotAllowed, close: false) }
        let headers = PreparedFields([
            (name: "Content-Type", value: answer.contentType), (name: "Content-Length", value: "\(answer.body.count)"),
            (name: "Cache-Control", value: "no-store"), (name: "X-Content-Type-Options", value: "nosniff"),
        ])
        // The HEAD rule is applied where every response's is: Exchange.answer.
        return Response(status: answer.status, headers: headers, body: answer.body, sendsBody: true, close: false)
    }
}
