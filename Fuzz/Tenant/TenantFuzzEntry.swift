import Glibc

#if FUZZ_TENANT
    import LibFuzzerDriver
    import TenantAPI

    /// Which check runs: `AASAD_FUZZ_TARGET=tokens` (the tokens file) or `api` (a request's
    /// bytes), set by scripts/fuzz.sh; one binary serves both, so one SwiftPM build does.
    let target: String = {
        guard let name = getenv("AASAD_FUZZ_TARGET").map({ String(cString: $0) }), ["tokens", "api"].contains(name) else {
            fatalError("set AASAD_FUZZ_TARGET to tokens or api")
        }
        return name
    }()

    /// libFuzzer's entry point: the checks are Sources/TenantAPI/TenantFuzz.swift's, which the
    /// replay tests (Tests/TenantAPITests/TenantFuzzReplayTests.swift) run on every saved input.
    @_cdecl("LLVMFuzzerTestOneInput")
    public func fuzzTenant(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        LibFuzzer.check(data, size, target == "tokens" ? TenantFuzz.tokens : TenantFuzz.request)
    }

    /// SwiftPM's renamed `main` (Sources/LibFuzzerDriver/LibFuzzer.swift).
    @_cdecl("aasad_tenant_fuzz_main")
    public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
        LibFuzzer.run(argc, argv, fuzzTenant)
    }
#else
    /// Built without `-D FUZZ_TENANT` (any ordinary `swift build`): there is no fuzzer to run.
    @main
    enum TenantFuzzUnbuilt {
        static func main() {
            let message = Array("aasad-tenant-fuzz: build it with scripts/fuzz.sh tokens (or api)\n".utf8)
            _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            exit(2)
        }
    }
#endif
