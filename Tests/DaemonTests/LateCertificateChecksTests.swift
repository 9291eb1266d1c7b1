import Testing

@testable import Daemon

@Suite("Certificate pairs checked before or after readiness")
struct LateCertificateChecksTests {
    @Test("up to the bound a start checks every pair before it is ready; one more and it checks them after")
    func bound() {
        let bound = Daemon.certificateChecksBeforeReady
        #expect(Daemon.checksCertificatesBeforeReady(unchecked: 0))
        #expect(Daemon.checksCertificatesBeforeReady(unchecked: bound))
        #expect(!Daemon.checksCertificatesBeforeReady(unchecked: bound + 1))
    }
}
