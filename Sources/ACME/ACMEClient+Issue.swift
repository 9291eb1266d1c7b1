import Glibc
import SafeText

extension ACMEClient {
    /// The media type of an issued chain (RFC 8555 §9.1), asked for when downloading it (§7.4.2).
    public static let certificateChainMediaType = "application/pem-certificate-chain"

    /// finalize (RFC 8555 §7.4): POSTs `{"csr": base64url(DER)}` to the order's finalize URL and
    /// returns the order as the CA answered (processing, valid, or invalid with its error).
    public func finalize(_ finalizeURL: ACMEURL, csr: CertificateRequest) throws(ACMEError) -> ACMEOrder {
        try finalizeReadingRetryAfter(finalizeURL, csr: csr).order
    }

    /// The issued chain at `url` (§7.4.2): POST-as-GET, Accept `application/pem-certificate-chain`,
    /// parsed and bounded by `CertificateChain` (unchecked: `issue` checks it against the order).
    public func certificateChain(_ url: ACMEURL) throws(ACMEError) -> CertificateChain {
        try CertificateChain(pem: post(url, payload: nil, accept: Self.certificateChainMediaType).body)
    }

    /// Obtains a certificate for `names` (normalised by `OrderNames`; wildcards allowed) with a
    /// fresh key, blocking until it is issued or the issuance fails. The account must exist
    /// (`account()` first). Steps (RFC 8555 §7.4, §7.5): newOrder; for each pending
    /// authorization, the first of the solver's types the CA offers (a wildcard takes dns-01
    /// only), presented, then the CA told to validate; each authorization polled until settled;
    /// the solver's answers cleaned up (always, failure or not); the order polled to ready;
    /// finalized with a CSR over a new `LeafKey`; polled to valid; the chain downloaded and
    /// checked (`IssuedCertificate.checked`) before it is returned. Waits are bounded by
    /// `ACMEPolling` and slept through `sleep` (tests pass one that does not wait). Errors keep
    /// the CA's problem document (cleaned and bounded) for operators.
    public func issue(
        names requested: [String], solver: some ChallengeSolver, sleep: @escaping (Duration) -> Void = ACMEPolling.sleep
    ) throws(ACMEError) -> IssuedCertificate {
        let names = try OrderNames.normalized(requested)
        let what = Self.describe(names)
        var polling = ACMEPolling(sleep: sleep)
        let (orderURL, created) = try newOrder(names: names)
        let ordered = Set(created.identifiers.map(\.value))
        guard ordered == Set(names) else {
            throw .malformed(what: "order", reason: "it is for \(Self.describe(ordered.sorted())), not for \(what)")
        }
        switch created.status {
        case .invalid: throw .invalid(what: "the order for \(what)", problem: created.error)
        case .processing, .valid:
            // A finalized order's certificate is for a key this client never made (a CA handing
            // back another client's order): nothing to finish.
            throw .malformed(what: "order", reason: "the new order is already \(created.status.rawValue)")
        case .pending:
            try authorize(created, names: names, solver: solver, polling: &polling)
        case .ready: break
        }
        // RFC 8555 §7.1.6: pending → ready once every authorization is valid.
        let ready = try polling.poll(
            read: { () throws(ACMEError) in try readOrder(orderURL) },
            isFinished: { (order) throws(ACMEError) in
                switch order.status {
                case .pending: return false
                case .ready: return true
                case .invalid: throw .invalid(what: "the order for \(what)", problem: order.error)
                case .processing, .valid: throw .malformed(what: "order", reason: "it is \(order.status.rawValue) before it was finalized")
                }
            },
            describe: { "the order for \(what) (still \($0.status.rawValue))" })
        let key = try LeafKey.generate()
        let csr = try CertificateRequest(names: names, key: key)
        var finalized: (order: ACMEOrder, retryAfter: Int64?)? = try finalizeReadingRetryAfter(ready.finalize, csr: csr)
        // ready → processing → valid; pending again would be the CA going backwards.
        let issued = try polling.poll(
            read: { () throws(ACMEError) in
                if let first = finalized {
                    finalized = nil
                    return first
                }
                return try readOrder(orderURL)
            },
            isFinished: { (order) throws(ACMEError) in
                switch order.status {
                case .ready, .processing: return false
                case .valid: return true
                case .invalid: throw .invalid(what: "the order for \(what)", problem: order.error)
                case .pending: throw .malformed(what: "order", reason: "it went back to pending after it was finalized")
                }
            },
            describe: { "the order for \(what) (still \($0.status.rawValue) after finalize)" })
        guard let certificateURL = issued.certificate else {
            throw .malformed(what: "order", reason: "it is valid but has no certificate URL")
        }
        return try IssuedCertificate.checked(
            chain: certificateChain(certificateURL), key: key, names: names, certificateURL: certificateURL, now: Int64(time(nil)))
    }

    /// Answers every pending authorization of `order`: present all, then ask the CA to validate
    /// all, then poll each until settled, so many names validate in parallel at the CA. What was
    /// presented is cleaned up on every way out.
    private func authorize(
        _ order: ACMEOrder, names: [String], solver: some ChallengeSolver, polling: inout ACMEPolling
    ) throws(ACMEError) {
        // One authorization per identifier (§7.1.3): more would be fetched and polled for nothing.
        guard order.authorizations.count <= names.count, Set(order.authorizations).count == order.authorizations.count else {
            throw .malformed(
                what: "order", reason: "it lists \(order.authorizations.count) authorizations (some twice?) for \(names.count) names")
        }
        var presented: [(type: String, name: String, token: String)] = []
        defer { for answer in presented { solver.cleanUp(type: answer.type, name: answer.name, token: answer.token) } }
        var started: [(url: ACMEURL, name: String, challenge: ACMEChallenge)] = []
        for url in order.authorizations {
            let authorization = try authorization(url)
            let name = try Self.orderName(of: authorization, names: names)
            switch authorization.status {
            case .valid: continue
            case .pending: break
            case .invalid, .deactivated, .expired, .revoked:
                throw .invalid(
                    what: "the authorization for \(name)" + (authorization.status == .invalid ? "" : " (\(authorization.status.rawValue))"),
                    problem: authorization.challenges.lazy.compactMap(\.error).first)
            }
            let challenge = try Self.choose(from: authorization, name: name, types: solver.types)
            // choose() returns only challenges with a token.
            let token = challenge.token ?? ""
            presented.append((challenge.type, authorization.identifier.value, token))
            try solver.present(
                type: challenge.type, name: authorization.identifier.value, token: token,
                keyAuthorization: key.keyAuthorization(token: token))
            started.append((url, name, challenge))
        }
        // §7.5.1: a processing challenge is being validated already (an earlier attempt asked).
        for entry in started where entry.challenge.status == .pending { _ = try respond(to: entry.challenge.url) }
        for entry in started {
            _ = try polling.poll(
                read: { () throws(ACMEError) in try read(entry.url) { (body) throws(ACMEError) in try ACMEAuthorization(body: body) } },
                isFinished: { (authorization) throws(ACMEError) in
                    switch authorization.status {
                    case .pending: return false
                    case .valid: return true
                    case .invalid, .deactivated, .expired, .revoked:
                        // The answered challenge's error says what the CA's validation saw.
                        let answered = authorization.challenges.first { $0.url == entry.challenge.url }
                        throw .invalid(
                            what: "the authorization for \(entry.name) (\(entry.challenge.type)"
                                + (authorization.status == .invalid ? ")" : ", \(authorization.status.rawValue))"),
                            problem: answered?.error ?? authorization.challenges.lazy.compactMap(\.error).first)
                    }
                },
                describe: { "the authorization for \(entry.name) (still \($0.status.rawValue))" })
        }
    }

    /// The order name an authorization is for (its identifier, with `*.` for a wildcard one,
    /// §7.1.4); an authorization for a name not requested is refused before anything is presented.
    static func orderName(of authorization: ACMEAuthorization, names: [String]) throws(ACMEError) -> String {
        // §7.1.4: a wildcard authorization names the base domain, without "*.": a "*" here would
        // reach the solver as part of a DNS record name.
        guard !authorization.identifier.value.contains("*") else {
            throw .malformed(what: "authorization", reason: "its identifier \(authorization.identifier.value) holds a \"*\"")
        }
        let name = authorization.wildcard ? "*." + authorization.identifier.value : authorization.identifier.value
        guard names.contains(name) else {
            throw .malformed(what: "authorization", reason: "it is for \(ACMEProblem.clean(name)), which was not requested")
        }
        return name
    }

    /// The first of `types` the authorization offers as a pending or processing challenge with a
    /// token; a wildcard name takes dns-01 only (RFC 8555 §7.1.3, RFC 8737 §3).
    static func choose(from authorization: ACMEAuthorization, name: String, types: [String]) throws(ACMEError) -> ACMEChallenge {
        let wildcard = authorization.wildcard || OrderNames.isWildcard(name)
        for type in types where !wildcard || type == ChallengeType.dns01 {
            if let challenge = authorization.challenges.first(where: {
                $0.type == type && $0.token != nil && ($0.status == .pending || $0.status == .processing)
            }) {
                return challenge
            }
        }
        // The CA's type names are cleaned and bounded already; only a few are shown.
        let offered = Set(authorization.challenges.map { String($0.type.prefix(64)) }).sorted().prefix(8)
        throw .noChallenge(name: name, offered: Array(offered), answerable: types.filter { !wildcard || $0 == ChallengeType.dns01 })
    }

    /// A resource by POST-as-GET, with the Retry-After the CA sent along (RFC 8555 §8.2, §7.4).
    private func read<Value>(_ url: ACMEURL, parse: ([UInt8]) throws(ACMEError) -> Value) throws(ACMEError) -> (Value, retryAfter: Int64?) {
        let response = try post(url, payload: nil)
        return (try parse(response.body), response.headers.retryAfter(now: Int64(time(nil))))
    }

    private func readOrder(_ url: ACMEURL) throws(ACMEError) -> (ACMEOrder, retryAfter: Int64?) {
        try read(url) { (body) throws(ACMEError) in try ACMEOrder(body: body) }
    }

    private func finalizeReadingRetryAfter(
        _ url: ACMEURL, csr: CertificateRequest
    ) throws(ACMEError) -> (order: ACMEOrder, retryAfter: Int64?) {
        let response = try post(url, payload: #"{"csr":"\#(Base64URL.encode(csr.der))"}"#)
        return (try ACMEOrder(body: response.body), response.headers.retryAfter(now: Int64(time(nil))))
    }

    /// Names for a message: the first three, then how many more.
    static func describe(_ names: [String]) -> String {
        let shown = names.prefix(3).joined(separator: ", ")
        return names.count > 3 ? shown + " and \(names.count - 3) more" : shown
    }
}
