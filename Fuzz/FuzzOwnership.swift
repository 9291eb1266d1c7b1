// libFuzzer entry point over HostOwnership, the rule of which site holds which host name (tenants
// write site.yaml aliases; the operator names sites/). Built by scripts/fuzz.sh together with
// Sources/SiteStore/HostOwnership.swift, HostOwnershipFuzz.swift and AliasPolicy.swift,
// Sources/Served/HostName.swift and Punycode.swift, and Sources/SafeText as one module (hence no
// import). An input is a program of changes to a few sites; after each,
// HostOwnershipFuzz.check verifies the rule's invariants (a name held by at most one site, a
// directory name by its own site, no change to one site moving a host another serves, and the
// incremental decision equal to a fresh one and to a restart's). OwnershipFuzzReplayTests replays
// the corpus and the saved failures through the same checks.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    if let failure = HostOwnershipFuzz.check(bytes) { fatalError(failure) }
    return 0
}
