// The shim between libFuzzer and the fuzz targets SwiftPM builds (scripts/fuzz.sh `config`:
// Sources/aasad/FuzzEntry.swift; `tokens` and `api`: Fuzz/Tenant/TenantFuzzEntry.swift). Compiled
// only with their -D flag: an ordinary build links no libFuzzer, so this module is empty there.
#if FUZZ_CONFIG || FUZZ_TENANT
    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// What a SwiftPM-built fuzz target's entry points do: libFuzzer's `main` is not linked into
    /// an executable SwiftPM builds, whose `main` SwiftPM renames to `<module>_main` (so that tests
    /// can link the module); the target defines that symbol with `run`, and
    /// `LLVMFuzzerTestOneInput` with `check`.
    public enum LibFuzzer {
        /// Hands the process's arguments to libFuzzer's driver, which calls `input` with each input.
        public static func run(
            _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?,
            _ input: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
        ) -> CInt {
            var count = argc
            var arguments = argv
            return runFuzzerDriver(&count, &arguments, input)
        }

        /// One input: what `failures` finds wrong with its bytes stops the process, so that
        /// libFuzzer keeps the input as a crash.
        public static func check(_ data: UnsafePointer<UInt8>?, _ size: Int, _ failures: ([UInt8]) -> [String]) -> CInt {
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
            let found = failures(bytes)
            precondition(found.isEmpty, found.joined(separator: "\n"))
            return 0
        }
    }
#endif
