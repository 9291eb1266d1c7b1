import SafeText
/// What the `acme` fuzz target (Fuzz/FuzzACME.swift) does with one input, here so that the replay
/// test runs exactly the same checks: every parser of CA bytes over the whole input, and the
/// header parser over each of its lines. A refusal must be an `ACMEError`; a success must keep
/// its bounds. A violated bound stops the process (the fuzzer's finding). An input whose first
/// byte is `recordMarker` is instead a record file of the storage directory after it (`records`).
public enum ACMEFuzz {
    /// The first byte that makes an input a replica's record file (ASCII's record separator, which
    /// no CA answer starts with).
    public static let recordMarker: UInt8 = 0x1E

    public static func check(_ input: [UInt8]) {
        if input.first == recordMarker {
            records(Array(input.dropFirst()))
            return
        }
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

    /// A record file replicas share (RecordValues.swift) through each record's strict parse: what
    /// parsed has at most `RecordText.maximumDigits` digits a value and survives its own text, and
    /// the times a reader derives from it stay in their bounds at any clock.
    static func records(_ file: [UInt8]) {
        let bound: Int64 = 999_999_999_999
        let clocks: [Int64] = [0, 1_700_000_000, bound, .max, .min]
        if let failure = BackoffRecord(parsing: file) {
            precondition(failure.failedAt <= bound && failure.failures >= 0 && failure.nextAttempt <= bound)
            precondition(BackoffRecord(parsing: Array(failure.text.utf8)) == failure)
            for now in clocks + [failure.failedAt, failure.nextAttempt] {
                if let next = BackoffRecord.effectiveNextAttempt(failure, now: now) {
                    precondition(next >= failure.failedAt && next - failure.failedAt <= Backoff.longestWait)
                }
                let rebased = BackoffRecord.rebased(failure, now: now)
                precondition(rebased.failures == failure.failures)
                precondition(BackoffRecord.effectiveNextAttempt(rebased, now: now).map { $0 >= now } ?? false)
            }
        }
        if let recorded = DemandRecord.parse(file) {
            precondition(recorded >= 0 && recorded <= bound)
            precondition(DemandRecord.parse(Array(DemandRecord.text(recorded).utf8)) == recorded)
            for now in clocks + [recorded] {
                if let time = DemandRecord.demandTime(recorded, now: now) { precondition(time <= now && time == min(recorded, now)) }
            }
        }
        if let child = ChildRecord(parsing: file) {
            precondition(child.approvedUntil <= bound && child.lastSeen <= bound && child.approvedUntil >= 0 && child.lastSeen >= 0)
            precondition(ChildRecord(parsing: Array(child.text.utf8)) == child)
        }
    }
}
