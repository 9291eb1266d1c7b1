// libFuzzer entry point over the verdicts' file (`validated-contents` under the state directory:
// contents and certificate pairs known valid, so that a restart skips validating them again).
// Built by scripts/fuzz.sh with Sources/SiteStore/KnownValid.swift (the file's format, apart from
// its reading from disk in KnownValid+Disk.swift) and KnownValidFuzz.swift as one module (hence no
// import). KnownValidFuzz.check verifies that a damaged file is ignored whole, that the keys read
// are exactly a well-formed file's lines, sorted, each once and found, and that what is written
// back reads back the same. VerdictsFuzzReplayTests replays the corpus and the saved failures.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = KnownValidFuzz.check(bytes) { fatalError(failure) }
    return 0
}
