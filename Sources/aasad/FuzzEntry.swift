#if FUZZ_CONFIG
    import Daemon
    import LibFuzzerDriver

    /// libFuzzer's entry point, compiled only into the fuzzing build of aasad (scripts/fuzz.sh:
    /// `-D FUZZ_CONFIG`, where AASACommand has no `@main`).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt { LibFuzzer.check(data, size, ConfigFuzz.check) }

    /// Without `@main`, SwiftPM's renamed `main` (Sources/LibFuzzerDriver/LibFuzzer.swift).
    @_cdecl("aasad_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        LibFuzzer.run(argc, argv, fuzzConfig)
    }
#endif
