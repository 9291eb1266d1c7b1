#if FUZZ_CONFIG
    import Daemon

    /// libFuzzer's entry point, compiled only into the fuzzing build of aasad (scripts/fuzz.sh:
    /// `-D FUZZ_CONFIG`, where AASACommand has no `@main`).
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzConfig(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        let failures = ConfigFuzz.check(bytes)
        precondition(failures.isEmpty, failures.joined(separator: "\n"))
        return 0
    }

    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// SwiftPM links an executable with `main` renamed to `<target>_main` (so that tests can link
    /// the module): without `@main`, this is that symbol, and it hands over to libFuzzer's driver.
    @_cdecl("aasad_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        var count = argc
        var arguments = argv
        return runFuzzerDriver(&count, &arguments, fuzzConfig)
    }
#endif
