extension TLSContext {
    /// The SSL_CTX itself, for a listener of this package that drives its own connections
    /// (Sources/TenantAPI/Transport/APITLS.swift: one blocking thread per connection, HTTP/1.1
    /// only) with the certificate checks and protocol settings made here. The context stays
    /// owned by this object: the caller keeps the TLSContext alive while it uses the pointer.
    package var openSSLContext: OpaquePointer { ctx }
}
