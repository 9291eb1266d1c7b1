import Foundation
import SiteStore
import TenantAPI

/// The `api:` section of aasad.yaml: the tenant API (docs/api.md), off unless `listen` is set.
package struct APISettings: Equatable, Sendable {
    /// The API's own listener (`127.0.0.1:8444`, `[::1]:8444`, `:8444`); nil: off.
    package var listen: String?
    /// The tokens file (`APITokensFile`), read again when it changes.
    package var tokensFile: String?
    /// The API's certificate chain and key (PEM): required when `listen` is not a loopback address.
    package var tlsCertificate: String?
    package var tlsKey: String?
    /// Writes are refused (405, with the reason): git-sync or another tool owns the config directory.
    package var readOnly = false
    /// Requests per token per minute.
    package var requestsPerMinute = TenantAPI.defaultRequestsPerMinute
    /// From one request a minute to a hundred thousand (over 1,600 a second, more than one
    /// process writes sites at).
    package static let requestsPerMinuteBounds: ClosedRange<Int> = 1...100_000
    /// The port the ownership checker fetches a name's `/.well-known/aasad-verify/` on
    /// (Sources/TenantAPI/VerificationChecker.swift): 80 unless a port mapping puts the plain
    /// listener elsewhere.
    package var verifyPort = 80
    package static let verifyPortBounds: ClosedRange<Int> = 1...65_535
    /// Whether the ownership checker fetches names that resolve to loopback or private
    /// addresses (`VerificationChecker.Configuration.allowsPrivateAddresses`): off, since a
    /// public CA cannot reach them; on for a private CA or split-horizon DNS.
    package var verifyPrivateAddresses = false

    /// Whether `listen` names a loopback address only (127.0.0.0/8, ::1, an IPv4-mapped
    /// 127.0.0.0/8, localhost), where plain HTTP is allowed: the listener's own reading of the
    /// value (TenantAPI's APIListenAddress), so the settings and the listener never disagree.
    package static func isLoopback(_ listen: String) -> Bool { APIListenAddress.isLoopback(listen) }

    /// Problems of the section's values together.
    func consistencyProblems() -> [(key: String, message: String)] {
        var problems: [(key: String, message: String)] = []
        if (tlsCertificate == nil) != (tlsKey == nil) {
            problems.append(("api.tls-certificate", "api.tls-certificate and api.tls-key are set together"))
        }
        guard let listen else { return problems }
        if tokensFile == nil {
            problems.append(("api.tokens-file", "must be set when api.listen is: without tokens every request is refused"))
        }
        if !Self.isLoopback(listen) && (tlsCertificate == nil || tlsKey == nil) {
            problems.append(
                (
                    "api.listen",
                    "\(listen) is not a loopback address: set api.tls-certificate and api.tls-key (tokens never cross a network in clear)"
                ))
        }
        return problems
    }

    /// Problems of the files the section names, for `aasad validate`: the tokens file must parse,
    /// and the TLS pair be readable. (At start a bad tokens file refuses every request, logged.)
    package func fileProblems(source: String) -> [ServerSettings.Problem] {
        var problems: [(key: String, message: String)] = []
        if let tokensFile {
            switch ConfigLoader.readBounded(path: tokensFile, limit: APITokensFile.maximumFileSize) {
            case .failure(let error):
                problems.append(("api.tokens-file", "cannot read \(tokensFile): \(error)"))
            case .success(let bytes) where bytes.count > APITokensFile.maximumFileSize:
                problems.append(("api.tokens-file", "\(tokensFile) is larger than 1 MB"))
            case .success(let bytes):
                do {
                    _ = try APITokensFile.parse(String(decoding: bytes, as: UTF8.self))
                } catch {
                    problems.append(("api.tokens-file", "\(tokensFile): \(error)"))
                }
            }
        }
        for (key, path) in [("api.tls-certificate", tlsCertificate), ("api.tls-key", tlsKey)] {
            guard let path else { continue }
            if case .failure(let error) = ConfigLoader.readBounded(path: path, limit: CertificateFiles.maximumFileSize) {
                problems.append((key, "cannot read \(path): \(error)"))
            }
        }
        return problems.map { ServerSettings.Problem(source: source, key: $0.key, message: $0.message) }
    }
}
