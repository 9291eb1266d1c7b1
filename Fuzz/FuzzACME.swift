// libFuzzer entry point over the ACME client's parsers of what a CA sends (Sources/ACME/Wire):
// the directory, account, order, authorization, challenge and problem JSON, the response header
// lines (Replay-Nonce, Location, Retry-After, Link) and the PEM certificate chain; an input whose
// first byte is 0x1E (`ACMEFuzz.recordMarker`) is instead a record file replicas share in the
// storage directory (Sources/ACME/RecordText.swift, RecordValues.swift). Built by scripts/fuzz.sh
// with Sources/StrictJSON, SafeText and HTTPCore as one module (hence no imports).
// Every input must parse or fail with an ACMEError, never trap, leak or hang; what parsed must
// respect its bounds. ACMEFuzzReplayTests runs the same checks in every test run.

import CAASAOpenSSL

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    ACMEFuzz.check(Array(UnsafeBufferPointer(start: data, count: size)))
    return 0
}
