import ACME
import TestSupport

extension Pebble {
    var directoryURL: ACMEURL { try! ACMEURL(directory) }

    /// A client for this pebble with a new account key.
    func client(key: AccountKey? = nil) throws -> ACMEClient {
        ACMEClient(
            directoryURL: directoryURL, key: try key ?? AccountKey.generate(),
            http: try HTTPSClient(configuration: .init(caFile: caFile)))
    }
}
