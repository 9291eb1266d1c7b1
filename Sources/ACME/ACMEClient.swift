import Reactor
import SafeText
import StrictJSON
import Synchronization

/// An ACME (RFC 8555) client for one CA directory and one account key: the directory, nonces
/// with badNonce retries, the account (created or found again, with optional External Account
/// Binding), orders and their authorizations. Blocking; one request at a time per client.
public final class ACMEClient: Sendable {
    /// How often a request is re-sent after a badNonce error (RFC 8555 §6.5: the client should
    /// retry with the nonce from the error). pebble rejects 5 % of good nonces by default, so
    /// five retries make a spurious failure a 3-in-10-million event; a CA rejecting every nonce
    /// still fails fast.
    public static let maximumBadNonceRetries = 5

    public let directoryURL: ACMEURL
    public let key: AccountKey
    public let http: HTTPSClient
    public let nonces = NoncePool()
    private let state = Mutex<(directory: ACMEDirectory?, account: ACMEURL?)>((nil, nil))

    public init(directoryURL: ACMEURL, key: AccountKey, http: HTTPSClient) {
        self.directoryURL = directoryURL
        self.key = key
        self.http = http
    }

    /// The directory, fetched once.
    public func directory() throws(ACMEError) -> ACMEDirectory {
        if let cached = state.withLock({ $0.directory }) { return cached }
        let response = try http.request(.get, directoryURL)
        guard response.isSuccess else { throw Self.failure(response, what: "directory") }
        let directory = try ACMEDirectory(body: response.body)
        state.withLock { $0.directory = directory }
        return directory
    }

    /// The account's URL once `account` has run.
    public var accountURL: ACMEURL? { state.withLock { $0.account } }

    /// External Account Binding credentials (RFC 8555 §7.3.4): the key identifier and the MAC
    /// key, base64url as CAs hand it out.
    public struct ExternalAccountBinding: Sendable {
        public var keyID: String
        public var macKey: [UInt8]

        public init(keyID: String, macKeyBase64URL: String) throws(ACMEError) {
            guard let key = Base64URL.decode(macKeyBase64URL), !key.isEmpty else {
                throw .crypto("the EAB MAC key is not base64url")
            }
            self.keyID = keyID
            macKey = key
        }
    }

    /// newAccount (§7.3): creates the key's account, or finds it when it exists (the CA answers
    /// 200 with the same URL). `onlyReturnExisting` looks up without creating (§7.3.1).
    @discardableResult
    public func account(
        contact: [String] = [], externalAccountBinding: ExternalAccountBinding? = nil, onlyReturnExisting: Bool = false
    ) throws(ACMEError) -> (url: ACMEURL, account: ACMEAccount) {
        let directory = try directory()
        var members = [#""termsOfServiceAgreed":true"#]
        if !contact.isEmpty { members.append(#""contact":[\#(contact.map { JSONValue.quote($0) }.joined(separator: ","))]"#) }
        if onlyReturnExisting { members.append(#""onlyReturnExisting":true"#) }
        if let eab = externalAccountBinding {
            let binding = try JWS.externalAccountBinding(key: key, keyID: eab.keyID, macKey: eab.macKey, url: directory.newAccount)
            members.append(#""externalAccountBinding":\#(binding)"#)
        }
        let response = try post(directory.newAccount, payload: "{" + members.joined(separator: ",") + "}", signer: .jwk)
        guard let url = try response.headers.location() else {
            throw .malformed(what: "newAccount response", reason: "no Location field")
        }
        let account = try ACMEAccount(body: response.body)
        state.withLock { $0.account = url }
        return (url, account)
    }

    /// newOrder (§7.4) for DNS names; the order's URL and the order.
    public func newOrder(names: [String]) throws(ACMEError) -> (url: ACMEURL, order: ACMEOrder) {
        let directory = try directory()
        let identifiers = names.map { ACMEIdentifier(dns: $0).json }.joined(separator: ",")
        let response = try post(directory.newOrder, payload: #"{"identifiers":[\#(identifiers)]}"#)
        guard let url = try response.headers.location() else { throw .malformed(what: "newOrder response", reason: "no Location field") }
        return (url, try ACMEOrder(body: response.body))
    }

    /// An order, fetched again (POST-as-GET, §6.3).
    public func order(_ url: ACMEURL) throws(ACMEError) -> ACMEOrder {
        try ACMEOrder(body: post(url, payload: nil).body)
    }

    /// An authorization (§7.5), POST-as-GET.
    public func authorization(_ url: ACMEURL) throws(ACMEError) -> ACMEAuthorization {
        try ACMEAuthorization(body: post(url, payload: nil).body)
    }

    /// Tells the CA a challenge is ready to validate (§7.5.1: POST `{}`).
    public func respond(to challenge: ACMEURL) throws(ACMEError) -> ACMEChallenge {
        try ACMEChallenge(body: post(challenge, payload: "{}").body)
    }

    /// A signed POST (the account's `kid` unless `signer` says otherwise), re-sent with a fresh
    /// nonce after badNonce. Success is a 2xx; anything else throws, with the problem document
    /// when the CA sent one. `accept` is the Accept field, when one is needed.
    public func post(_ url: ACMEURL, payload: String?, signer chosen: JWS.Signer? = nil, accept: String? = nil) throws(ACMEError)
        -> HTTPSResponse
    {
        let signer: JWS.Signer
        if let chosen { signer = chosen } else { signer = try accountSigner() }
        var attempt = 0
        while true {
            let nonce = try nextNonce()
            let body = try JWS.request(key: key, signer: signer, url: url, nonce: nonce, payload: payload)
            let response = try http.request(.post, url, body: body, accept: accept)
            nonces.add(response.headers.replayNonce)
            if response.isSuccess { return response }
            let error = Self.failure(response, what: "response")
            if case .problem(let problem, _) = error, problem.isBadNonce, attempt < Self.maximumBadNonceRetries {
                attempt += 1
                continue
            }
            throw error
        }
    }

    private func accountSigner() throws(ACMEError) -> JWS.Signer {
        guard let url = accountURL else { throw .malformed(what: "request", reason: "no account yet: call account() first") }
        return .kid(url)
    }

    /// A nonce from the pool, or a new one from newNonce (§7.2: HEAD).
    private func nextNonce() throws(ACMEError) -> String {
        if let nonce = nonces.take() { return nonce }
        let response = try http.request(.head, try directory().newNonce)
        guard response.isSuccess || response.status == 204, let nonce = response.headers.replayNonce else {
            throw .malformed(what: "newNonce response", reason: "HTTP \(response.status) without a valid Replay-Nonce")
        }
        return nonce
    }

    /// A non-2xx response as an error: the problem document when the body is one, else the status.
    static func failure(_ response: HTTPSResponse, what: String) -> ACMEError {
        if var problem = try? ACMEProblem(body: response.body) {
            problem.retryAfter = response.headers.retryAfter(now: WallClock.seconds())
            return .problem(problem, status: response.status)
        }
        return .malformed(what: what, reason: "HTTP \(response.status) without a problem document")
    }
}
