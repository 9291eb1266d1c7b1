// libFuzzer entry point over TLSContext's certificate chain and private key loading (PEM through
// OpenSSL), which reads files operators and their deploy tools write. Built by scripts/fuzz.sh
// together with Sources/TLS as one module (hence no import).
// Input: the chain, a NUL byte, the key (PEM never holds a NUL); without a NUL the whole input is
// both, as a file holding a certificate and its key would be. Every input must load or fail with a
// TLSError (the typed throw), never crash, leak or hang; a loaded context's names must answer.

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
        let context = try TLSContext(chainPEM: Array(chain), keyPEM: Array(key), identity: "fuzz", source: "fuzz")
        _ = context.names.covers("a.fuzz.test")
    } catch {
        precondition(!error.description.isEmpty, "an error without a reason")
    }
    return 0
}
