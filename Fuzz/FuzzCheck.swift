// libFuzzer entry point over what `aasad check` and the CDN watch parse (Sources/Check): bodies
// canonicalised as JSON to compare a CDN copy with the origin's, and associated-domains entries.
// Built by scripts/fuzz.sh with Sources/AASA, StrictJSON and SafeText as one module (hence no
// imports of the project's modules). CheckFuzzReplayTests runs the same checks in every test run.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    CheckFuzz.check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
