public import TLS

/// What wildcard children (`ChildApprovals`) ask of the manager.
extension CertificateManager {
    /// `name`'s own automatic certificate, never its wildcard parent's: a child of a `per-name`
    /// wildcard site is served its own once issued, and asked about until then.
    public func ownCertificate(for name: String) -> TLSServer.CertificateSource? {
        servedCertificates.withLock { $0[name] }
    }
}
