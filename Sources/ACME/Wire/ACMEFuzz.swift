import SafeText
/// What the `acme` fuzz target (Fuzz/FuzzACME.swift) does with one input, here so that the replay
/// test runs exactly the same checks: every parser of CA bytes over the whole input, and the
/// header parser over each of its lines. A refusal must be an `ACMEError`; a success must keep
/// its bounds. A violated bound stops the process (the fuzzer's finding).
public enum ACMEFuzz {
    public static func check(_ input: [UInt8]) {
        if let d = try? ACMEDirectory(body: input) {
            precondition(d.newOrder.text.utf8.count <= ACMELimits.maximumURLLength)
        }
        _ = try? ACMEAccount(body: input)
        if let order = try? ACMEOrder(body: input) {
            precondition(order.authorizations.count <= ACMELimits.maximumArrayCount)
        }
        if let authz = try? ACMEAuthorization(body: input) {
            for c in authz.challenges { precondition(c.token.map { Base64URL.isAlphabet($0.utf8) } ?? true) }
        }
        if let problem = try? ACMEProblem(body: input) {
            precondition(problem.detail.unicodeScalars.count <= ACMELimits.maximumProblemText)
            precondition(problem.subproblems.allSatisfy { $0.subproblems.isEmpty })
        }
        if let window = try? RenewalInfo(body: input) {
            precondition(window.end > window.start)
            precondition((window.start...window.end).contains(window.renewalTime(random: 0.999_999)))
        }
        if let chain = try? CertificateChain(pem: input) {
            precondition(!chain.certificates.isEmpty && chain.certificates.count <= ACMELimits.maximumChainCertificates)
        }
        if let decoded = Base64URL.decode(input) {
            precondition(Base64URL.decode(Base64URL.encode(decoded)) == decoded)
        }
        var headers = ACMEHeaders()
        for line in input.split(separator: 0x0A, omittingEmptySubsequences: false) {
            guard headers.add(line: line) else { break }
        }
        if let nonce = headers.replayNonce { precondition(nonce.utf8.count <= ACMELimits.maximumNonceLength) }
        if let wait = headers.retryAfter(now: 1_700_000_000) { precondition(wait >= 0 && wait <= ACMELimits.maximumRetryAfterSeconds) }
        _ = try? headers.location()
        precondition(headers.links.count <= ACMELimits.maximumLinks)
    }
}
