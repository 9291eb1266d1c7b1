import SafeText
import StrictJSON

/// The directory (RFC 8555 §7.1.1): where each operation is, and the CA's terms.
public struct ACMEDirectory: Sendable, Equatable {
    public var newNonce: ACMEURL
    public var newAccount: ACMEURL
    public var newOrder: ACMEURL
    public var revokeCert: ACMEURL?
    public var keyChange: ACMEURL?
    /// ACME Renewal Information (RFC 9773), where the CA offers it.
    public var renewalInfo: ACMEURL?
    public var termsOfService: String?
    /// §7.3.4: the CA requires External Account Binding on newAccount.
    public var externalAccountRequired: Bool

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        let o = try ACMEObject(body: body, what: "directory")
        newNonce = try o.requiredURL("newNonce")
        newAccount = try o.requiredURL("newAccount")
        newOrder = try o.requiredURL("newOrder")
        revokeCert = try o.url("revokeCert")
        keyChange = try o.url("keyChange")
        renewalInfo = try o.url("renewalInfo")
        let meta = try o.object("meta")
        termsOfService = try meta?.string("termsOfService").map { ACMEProblem.clean($0) }
        externalAccountRequired = try meta?.bool("externalAccountRequired") ?? false
    }
}

/// An identifier (RFC 8555 §9.7.7): only `dns` is used; the value is a DNS name in its ASCII
/// form, with a leading `*.` for a wildcard order.
public struct ACMEIdentifier: Sendable, Hashable, CustomStringConvertible {
    public var value: String

    public init(dns value: String) { self.value = value }

    init(_ object: ACMEObject) throws(ACMEError) {
        let type = try object.requiredString("type")
        guard type == "dns" else { throw .malformed(what: object.what, reason: "identifier type \(JSONValue.quote(type)) is not dns") }
        let value = try object.requiredString("value")
        let bytes = Array(value.utf8)
        // RFC 1035 §2.3.1 letters, digits, hyphens and dots (RFC 5890 A-labels are that too), and
        // the wildcard prefix of RFC 8555 §7.1.3; anything else is not a name we could ask for.
        guard !bytes.isEmpty, bytes.count <= ACMELimits.maximumNameLength,
            bytes.allSatisfy({ c in
                (c >= 0x61 && c <= 0x7A) || (c >= 0x41 && c <= 0x5A) || (c >= 0x30 && c <= 0x39) || c == 0x2D || c == 0x2E || c == 0x2A
            })
        else { throw .malformed(what: object.what, reason: "identifier \(JSONValue.quote(ACMEProblem.clean(value))) is not a DNS name") }
        self.value = value.lowercased()
    }

    /// `{"type":"dns","value":"…"}`.
    var json: String { "{\"type\":\"dns\",\"value\":\(JSONValue.quote(value))}" }

    public var description: String { value }
}

/// An account (RFC 8555 §7.1.2).
public struct ACMEAccount: Sendable, Equatable {
    public enum Status: String, Sendable { case valid, deactivated, revoked }

    public var status: Status
    public var contact: [String]
    public var orders: ACMEURL?

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        let o = try ACMEObject(body: body, what: "account")
        status = try parseStatus(o)
        contact = try o.strings("contact")?.map { ACMEProblem.clean($0) } ?? []
        orders = try o.url("orders")
    }
}

/// An order (RFC 8555 §7.1.3).
public struct ACMEOrder: Sendable, Equatable {
    public enum Status: String, Sendable { case pending, ready, processing, valid, invalid }

    public var status: Status
    public var expires: String?
    public var identifiers: [ACMEIdentifier]
    public var authorizations: [ACMEURL]
    public var finalize: ACMEURL
    public var certificate: ACMEURL?
    public var error: ACMEProblem?

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        let o = try ACMEObject(body: body, what: "order")
        status = try parseStatus(o)
        expires = try o.string("expires").map { ACMEProblem.clean($0) }
        identifiers = []
        for item in try o.array("identifiers") ?? [] { identifiers.append(try ACMEIdentifier(ACMEObject(item, what: "order.identifiers"))) }
        authorizations = []
        for item in try o.array("authorizations") ?? [] {
            guard let s = item.stringValue else { throw .malformed(what: "order", reason: "authorizations holds \(item.typeName)") }
            authorizations.append(try ACMEURL(s, what: "order.authorizations"))
        }
        finalize = try o.requiredURL("finalize")
        certificate = try o.url("certificate")
        error = try o.object("error").map { (p) throws(ACMEError) in try ACMEProblem(p, nested: false) }
    }
}

/// An authorization (RFC 8555 §7.1.4) and its challenges.
public struct ACMEAuthorization: Sendable, Equatable {
    public enum Status: String, Sendable { case pending, valid, invalid, deactivated, expired, revoked }

    public var identifier: ACMEIdentifier
    public var status: Status
    public var wildcard: Bool
    public var challenges: [ACMEChallenge]

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        let o = try ACMEObject(body: body, what: "authorization")
        guard let id = try o.object("identifier") else { throw .malformed(what: "authorization", reason: "identifier is missing") }
        identifier = try ACMEIdentifier(id)
        status = try parseStatus(o)
        wildcard = try o.bool("wildcard") ?? false
        challenges = []
        for item in try o.array("challenges") ?? [] { challenges.append(try ACMEChallenge(ACMEObject(item, what: "challenge"))) }
    }
}

/// A challenge (RFC 8555 §7.1.5, §8). Types other than the three of RFC 8555 and RFC 8737 are
/// kept with their type name so a newer CA's offer does not fail the whole authorization.
public struct ACMEChallenge: Sendable, Equatable {
    public enum Status: String, Sendable { case pending, processing, valid, invalid }

    public var type: String
    public var url: ACMEURL
    public var status: Status
    /// §8.3: base64url only, bounded; nil for a challenge type without one.
    public var token: String?
    public var error: ACMEProblem?

    public init(body: some Collection<UInt8>) throws(ACMEError) {
        try self.init(ACMEObject(body: body, what: "challenge"))
    }

    init(_ o: ACMEObject) throws(ACMEError) {
        type = ACMEProblem.clean(try o.requiredString("type"))
        url = try o.requiredURL("url")
        status = try parseStatus(o)
        token = try o.string("token")
        if let token {
            // The token names a file in the shared storage and a path on the plain listener: only
            // the base64url alphabet (RFC 8555 §8.3) keeps "/" and ".." out of both.
            guard !token.isEmpty, token.utf8.count <= ACMELimits.maximumTokenLength, Base64URL.isAlphabet(token.utf8) else {
                throw .malformed(what: "challenge", reason: "the token is not 1 to \(ACMELimits.maximumTokenLength) base64url characters")
            }
        }
        error = try o.object("error").map { (p) throws(ACMEError) in try ACMEProblem(p, nested: false) }
    }
}

/// The `status` member, one of the values RFC 8555 §7.1.6 lists for the resource.
private func parseStatus<S: RawRepresentable<String>>(_ o: ACMEObject) throws(ACMEError) -> S {
    let text = try o.requiredString("status")
    guard let status = S(rawValue: text) else {
        throw .malformed(what: o.what, reason: "status \(JSONValue.quote(ACMEProblem.clean(text))) is not one RFC 8555 defines")
    }
    return status
}
