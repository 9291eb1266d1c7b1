// libFuzzer entry point over the HTTP/1.1 request parser, which reads untrusted network bytes,
// and the field functions the server then applies to what it parsed (Host, If-None-Match,
// If-Modified-Since: a date that trapped was once one step past the parser). Built by scripts/fuzz.sh
// together with Sources/HTTP1 and Sources/HTTPCore as one module (hence no import).
// Besides not crashing, every parsed request must stay inside the input, and feeding the same
// bytes in two pieces must give the same answer. The same bytes also go through the parser's
// body mode (the tenant API's listener, Sources/TenantAPI/Transport) and its field walk: every
// field and the Content-Length digits must lie inside the head, and a head the file server's
// mode accepts must be accepted by the body mode too.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var parser = HTTP1Parser()
    var offset = 0
    var requests = 0
    while offset < size && requests < 64 {
        let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
        guard case .complete(let head) = parser.parse(rest) else { break }
        for range in [head.target, head.path] + [head.host, head.ifNoneMatch, head.ifModifiedSince, head.userAgent].compactMap({ $0 }) {
            precondition(range.lowerBound >= 0 && range.upperBound <= head.length, "a field outside its request")
        }
        precondition(head.length > 0 && head.length <= rest.count, "a request longer than the input")
        func field(_ range: Range<Int>?) -> UnsafeRawBufferPointer? { range.map { UnsafeRawBufferPointer(rebasing: rest[$0]) } }
        if let host = field(head.host) { _ = HTTPFields.normalizeHost(host) }
        _ = HTTPFields.notModified(etag: "\"abc\"", lastModified: 0, ifNoneMatch: field(head.ifNoneMatch), ifModifiedSince: field(head.ifModifiedSince))
        offset += head.length
        parser.reset()
        requests += 1
    }
    var bodies = HTTP1Parser(acceptsBodies: true)
    var plain = HTTP1Parser()
    let withBodies = bodies.parse(bytes)
    if case .complete(let head) = withBodies {
        if let digits = head.contentLength {
            precondition(digits.lowerBound >= 0 && digits.upperBound <= head.length, "Content-Length outside its request")
        }
        var fields = 0
        HTTP1Parser.forEachField(bytes, head) { name, value in
            precondition(name.lowerBound >= 0 && name.upperBound <= value.lowerBound, "a field name after its value")
            precondition(!name.isEmpty && value.upperBound <= head.length - 2, "a field outside its head")
            fields += 1
        }
        precondition(fields <= head.length / 3, "more fields than lines")
    }
    if case .complete = plain.parse(bytes) {
        guard case .complete = withBodies else { preconditionFailure("the body mode refused a head the file server's mode took") }
    }
    if size > 1 {
        var whole = HTTP1Parser()
        var split = HTTP1Parser()
        let half = size / 2
        let first = split.parse(UnsafeRawBufferPointer(rebasing: bytes[..<half]))
        let expected = whole.parse(bytes)
        if case .incomplete = first {
            precondition(split.parse(bytes) == expected, "the answer depends on where the input was split")
        }
    }
    return 0
}
