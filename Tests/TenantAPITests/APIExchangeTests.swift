import Testing

@testable import TenantAPI

@Suite struct APIExchangeTests {
    @Test func headerLookupIsByLowerCaseNameFirstValue() {
        let request = APIRequest(
            method: "GET", target: "/v1/sites", headers: [("authorization", "Bearer a"), ("authorization", "Bearer b")])
        #expect(request.header("authorization") == "Bearer a")
        #expect(request.header("if-match") == nil)
    }
}
