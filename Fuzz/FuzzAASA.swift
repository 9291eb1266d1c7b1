// libFuzzer entry point over everything in AASA that reads untrusted bytes: the strict JSON
// parser, the AASA and assetlinks.json validators, URL parsing, the matcher, and TerminalText.
// Built by scripts/fuzz.sh together with Sources/AASA, StrictJSON and SafeText as one module (hence no import).

/// URLs every valid file is matched against: empty path, deep path, query items, fragment,
/// escapes and non-ASCII, so each matcher branch runs.
let probeURLs = [
    "https://e.com", "https://e.com/", "https://e.com/a/b/c?x=1&x=2&y#frag",
    "https://e.com/caf%C3%A9/%2F?q=a%20b#%41", "/\u{E9}?\u{1F600}=1",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let result = AppSiteAssociation.validate(bytes)
    precondition(result.diagnostics.count <= DocumentDecoder.maximumDiagnostics + 1, "unbounded report")
    if result.isValid, let document = result.document {
        let matcher = Matcher(document)
        for probe in probeURLs {
            if let url = try? LinkURL(parsing: probe) {
                _ = try? matcher.evaluate(url, budget: 2_000_000)
            }
        }
    }
    _ = AssetLinks.validate(bytes)
    if let text = String(validating: bytes, as: UTF8.self) {
        _ = try? LinkURL(parsing: text)
        _ = Pattern(text)
    }
    // What a terminal is shown of the same bytes: no control or bidi character is left, escaping
    // again changes nothing, and valid UTF-8 is shown as its String is.
    let shown = TerminalText.escaped(utf8: bytes)
    precondition(!shown.unicodeScalars.contains(where: TerminalText.isEscaped), "a control or bidi character shown as it is")
    precondition(TerminalText.escaped(shown) == shown, "escaping twice differs from once")
    if let text = String(validating: bytes, as: UTF8.self) { precondition(TerminalText.escaped(text) == shown) }
    return 0
}
