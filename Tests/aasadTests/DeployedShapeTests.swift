import Testing

/// Findings on the shapes of apple-app-site-association and assetlinks.json files deployed in
/// public repositories. Each fixture keeps a real file's structure with invented team IDs, bundle IDs and
/// paths; the golden output is what `aasad validate` tells its author.
@Suite("aasad validate on deployed AASA shapes (the real binary)")
struct DeployedShapeTests {
    struct Shape: CustomTestStringConvertible, Sendable {
        let fixture: String
        let golden: String
        let status: Int32
        let why: String
        var testDescription: String { why }
    }

    static let shapes: [Shape] = [
        Shape(
            fixture: "deployed-components-only.json", golden: "validate-deployed-components-only.txt", status: 0,
            why: "components only, no applinks.apps: clean (iOS 13+ syntax, where apps changes nothing)"),
        Shape(
            fixture: "deployed-legacy-paths.json", golden: "validate-deployed-legacy-paths.txt", status: 0,
            why: "legacy appID + paths with apps: [] (minified, apps last): clean"),
        Shape(
            fixture: "deployed-webcredentials-appclips.json", golden: "validate-deployed-webcredentials-appclips.txt", status: 0,
            why: "appclips + applinks components + webcredentials: clean"),
        Shape(
            fixture: "deployed-app-store-id.json", golden: "validate-deployed-app-store-id.txt", status: 0,
            why: "App Store ID pasted as the team ID, and in applinks.apps: warnings, still served"),
        Shape(
            fixture: "deployed-passkey-template.json", golden: "validate-deployed-passkey-template.txt", status: 1,
            why: "passkey template with empty applinks and appclips objects: refused"),
        // assetlinks.json (the file name decides the kind, hence a directory per shape).
        Shape(
            fixture: "deployed-assetlinks/typical/assetlinks.json", golden: "validate-deployed-assetlinks-typical.txt", status: 0,
            why: "App Links and credential sharing, two signing keys, a web site for credentials: clean"),
        Shape(
            fixture: "deployed-assetlinks/mistakes/assetlinks.json", golden: "validate-deployed-assetlinks-mistakes.txt", status: 1,
            why: "a lower-case fingerprint and a site with :443/: refused, each with the value to write"),
        Shape(
            fixture: "deployed-assetlinks/include/assetlinks.json", golden: "validate-deployed-assetlinks-include.txt", status: 0,
            why: "one include statement, as Google's docs show: clean"),
    ]

    @Test("validate prints the expected findings", arguments: shapes)
    func findings(_ shape: Shape) throws {
        let out = try AASAD.run(["validate", "Fixtures/\(shape.fixture)"])
        #expect(out.status == shape.status, "\(out.stdout)\(out.stderr)")
        try AASAD.expectGolden(out.stdout, shape.golden)
    }
}
