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
            for p in [problem] + problem.subproblems { precondition(p.acmeType == shortName(p.type)) }
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

    /// RFC 8555's short name in a problem type, as `ACMEProblem.acmeType` must give it: the type
    /// with its first nine bytes (`urn:ietf:`, RFC 8141's case-insensitive scheme and namespace
    /// identifier) lowered in ASCII only starts with the namespace, and the rest is the name.
    static func shortName(_ type: String) -> String? {
        let bytes = Array(type.utf8)
        let lowered = bytes.prefix(9).map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 } + bytes.dropFirst(9)
        let namespace = Array("urn:ietf:params:acme:error:".utf8)
        guard lowered.starts(with: namespace) else { return nil }
        return String(decoding: lowered.dropFirst(namespace.count), as: UTF8.self)
    }

    /// A record file replicas share (RecordValues.swift) through each record's strict parse: what
    /// parsed has at most `RecordText.maximumDigits` digits a value and survives its own text; the
    /// times a reader derives from it follow their documented rules at any clock; and what a
    /// replica writes after reading it (a rebase, its own next failure) parses again.
    static func records(_ file: [UInt8]) {
        let bound = RecordText.maximumValue
        let clocks: [Int64] = [0, 1_700_000_000, bound, .max, .min]
        if let failure = BackoffRecord(parsing: file) {
            precondition(failure.failedAt >= 0 && failure.failedAt <= bound && failure.failures >= 0 && failure.nextAttempt <= bound)
            precondition(BackoffRecord(parsing: Array(failure.text.utf8)) == failure)
            let tolerance = BackoffRecord.clockSkewTolerance
            let wait = min(max(failure.nextAttempt - failure.failedAt, 0), Backoff.longestWait)
            for now in clocks + [failure.failedAt, failure.nextAttempt, failure.failedAt - tolerance, failure.failedAt - tolerance - 1] {
                // Absent exactly when dated more than the tolerance ahead of `now`; otherwise the
                // writer's time plus its wait, never negative nor past the longest.
                let ahead = now <= Int64.max - tolerance && failure.failedAt > now + tolerance
                precondition(BackoffRecord.effectiveNextAttempt(failure, now: now) == (ahead ? nil : failure.failedAt + wait))
                let rebased = BackoffRecord.rebased(failure, now: now)
                precondition(rebased.failures == failure.failures && rebased.failedAt == now)
                precondition(BackoffRecord.effectiveNextAttempt(rebased, now: now) == (now > Int64.max - wait ? .max : now + wait))
                precondition(BackoffRecord(parsing: Array(rebased.text.utf8)) != nil)
            }
            // Adopted by a replica whose next failure counts one more: the record it writes parses.
            var backoff = Backoff()
            backoff.adopt(failures: failure.failures, nextAttempt: BackoffRecord.effectiveNextAttempt(failure, now: failure.failedAt))
            let next = backoff.failed(now: failure.failedAt, random: 0.5)
            let written = BackoffRecord(failedAt: failure.failedAt, failures: backoff.failures, nextAttempt: next)
            precondition(BackoffRecord(parsing: Array(written.text.utf8)) != nil)
        }
        if let recorded = DemandRecord.parse(file) {
            precondition(recorded >= 0 && recorded <= bound)
            precondition(DemandRecord.parse(Array(DemandRecord.text(recorded).utf8)) == recorded)
            let lifetime = DemandRecord.lifetime
            for now in clocks + [recorded, recorded - lifetime, recorded - lifetime + 1, recorded + lifetime - 1, recorded + lifetime] {
                // Live only at clocks less than a lifetime from its time, either side (two
                // lifetimes at most), counting from its time or `now`, whichever is earlier.
                let live = now > recorded - lifetime && now < recorded + lifetime
                precondition(DemandRecord.demandTime(recorded, now: now) == (live ? min(recorded, now) : nil))
            }
        }
        if let child = ChildRecord(parsing: file) {
            precondition(child.approvedUntil <= bound && child.lastSeen <= bound && child.approvedUntil >= 0 && child.lastSeen >= 0)
            precondition(ChildRecord(parsing: Array(child.text.utf8)) == child)
        }
    }
}
