// libFuzzer entry point over TLSContext's certificate chain and private key loading (PEM through
// OpenSSL), which reads files operators and their deploy tools write. Built by scripts/fuzz.sh
// together with Sources/TLS and Sources/Hashing as one module (hence no import of TLS).
// Input: the chain, a NUL byte, the key (PEM never holds a NUL); without a NUL the whole input is
// both, as a file holding a certificate and its key would be. Every input must load or fail with a
// TLSError (the typed throw), never crash, leak or hang; a loaded chain's names must answer.
//
// Each input goes through what TLSContext.init does with the bytes: PEMCredentials reads and checks
// them, and `install` puts them into a context. The context is one for the whole process, set up
// by TLSContext.configure as every real one is, instead of a new SSL_CTX per input (SSL_CTX_new
// alone took 64% of the time, perf -runs=1500). What `install` decides does not depend on what an
// earlier input left in it: the key was checked against this leaf already, so the certificate slot
// and key slot it uses are this input's; only the extra chain certificates add up, and they are
// cleared first. PEMFuzzReplayTests replays the corpus through TLSContext.init itself.

import CAASAOpenSSL

/// The process's one context (never freed: it lives as long as the fuzzer).
private let sharedContext: OpaquePointer = {
    guard let ctx = SSL_CTX_new(TLS_server_method()) else { fatalError("SSL_CTX_new: \(TLSError.openSSLReasons())") }
    do {
        try TLSContext.configure(ctx, minimumVersion: .tls12)
    } catch {
        fatalError("\(error)")
    }
    return ctx
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let chain: ArraySlice<UInt8>
    let key: ArraySlice<UInt8>
    if let nul = bytes.firstIndex(of: 0) {
        chain = bytes[..<nul]
        key = bytes[(nul + 1)...]
    } else {
        chain = bytes[...]
        key = bytes[...]
    }
    do {
        let credentials = try PEMCredentials(chainPEM: Array(chain), keyPEM: Array(key), source: "fuzz")
        _ = SSL_CTX_ctrl(sharedContext, SSL_CTRL_CLEAR_EXTRA_CHAIN_CERTS, 0, nil)
        try credentials.install(into: sharedContext, source: "fuzz")
        _ = credentials.names.covers("a.fuzz.test")
    } catch {
        precondition(!error.description.isEmpty, "an error without a reason")
    }
    // OpenSSL's per-thread error queue keeps the file and function names of the errors it handed
    // out (ERR_get_error pops without freeing them) until the next ERR_clear_error. An input that
    // ends with a TLSError thus allocates more than it frees, and libFuzzer answers every such
    // input with a whole-process LeakSanitizer scan: 80% of the time under ASan (perf), 20 instead
    // of 490 inputs a second. Clearing here returns the queue to where the input found it, so a
    // scan runs only when memory is really kept.
    ERR_clear_error()
    return 0
}
