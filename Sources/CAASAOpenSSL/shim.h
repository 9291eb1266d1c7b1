#ifndef CAASAOPENSSL_SHIM_H
#define CAASAOPENSSL_SHIM_H

// libssl and libcrypto (OpenSSL 3.0, Debian's libssl-dev), plus wrappers for what Swift cannot
// call directly: macros and variadic functions. Each wrapper says why it exists.

#include <openssl/bio.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Refuses to give a passphrase: a key must be stored decrypted (no prompt on a terminal).
static int CAASAOpenSSL_no_passphrase(char *buffer, int size, int rwflag, void *userdata) {
    (void)buffer; (void)size; (void)rwflag; (void)userdata;
    return 0;
}

// A PEM private key decoded as the one key type `type` names ("EC", "RSA", "ED25519": the
// certificate's key type). PEM_read_bio_PrivateKey tries every decoder OpenSSL 3 has, about four
// times the work for a P-256 key (0.4 ms against 0.1 ms), which counted at 50,000 sites with
// pairs of their own. NULL when the key is not of that type, is encrypted or is damaged: the
// caller reads it again the generic way, for the error to report. OSSL_KEYMGMT_SELECT_KEYPAIR is
// a macro over two others.
static inline EVP_PKEY *CAASAOpenSSL_read_private_key_of_type(BIO *bio, const char *type) {
    EVP_PKEY *key = NULL;
    OSSL_DECODER_CTX *ctx = OSSL_DECODER_CTX_new_for_pkey(&key, "PEM", NULL, type, OSSL_KEYMGMT_SELECT_KEYPAIR, NULL, NULL);
    if (ctx == NULL) return NULL;
    if (OSSL_DECODER_CTX_set_pem_password_cb(ctx, CAASAOpenSSL_no_passphrase, NULL) != 1 || OSSL_DECODER_from_bio(ctx, bio) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    OSSL_DECODER_CTX_free(ctx);
    return key;
}

// SSL_CTX_set_min_proto_version is a macro over SSL_CTX_ctrl.
static inline int CAASAOpenSSL_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

// SSL_CTX_set_max_proto_version is a macro over SSL_CTX_ctrl.
static inline int CAASAOpenSSL_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}

// SSL_CTX_set_mode is a macro over SSL_CTX_ctrl.
static inline long CAASAOpenSSL_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }

// SSL_CTX_set_session_cache_mode is a macro over SSL_CTX_ctrl.
static inline long CAASAOpenSSL_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

// SSL_CTX_set_tlsext_servername_callback is a macro over SSL_CTX_callback_ctrl with a cast.
static inline long CAASAOpenSSL_SSL_CTX_set_tlsext_servername_callback(SSL_CTX *ctx, int (*cb)(SSL *, int *, void *)) {
    return SSL_CTX_set_tlsext_servername_callback(ctx, cb);
}

// SSL_CTX_set_tlsext_servername_arg is a macro over SSL_CTX_ctrl.
static inline long CAASAOpenSSL_SSL_CTX_set_tlsext_servername_arg(SSL_CTX *ctx, void *arg) {
    return SSL_CTX_set_tlsext_servername_arg(ctx, arg);
}

// SSL_CTX_add_extra_chain_cert is a macro over SSL_CTX_ctrl.
static inline long CAASAOpenSSL_SSL_CTX_add_extra_chain_cert(SSL_CTX *ctx, X509 *cert) {
    return SSL_CTX_add_extra_chain_cert(ctx, cert);
}

// SSL_CTX_set1_groups_list is a macro over SSL_CTX_ctrl.
static inline long CAASAOpenSSL_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) {
    return SSL_CTX_set1_groups_list(ctx, list);
}

// SSL_CTX_set_tlsext_ticket_key_evp_cb is a macro over SSL_CTX_callback_ctrl with a cast.
static inline long CAASAOpenSSL_SSL_CTX_set_tlsext_ticket_key_evp_cb(
    SSL_CTX *ctx, int (*cb)(SSL *, unsigned char *, unsigned char *, EVP_CIPHER_CTX *, EVP_MAC_CTX *, int)) {
    return SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, cb);
}

// SSL_set_mode is a macro over SSL_ctrl.
static inline long CAASAOpenSSL_SSL_set_mode(SSL *ssl, long mode) { return SSL_set_mode(ssl, mode); }

// EVP_EC_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call.
static inline EVP_PKEY *CAASAOpenSSL_EVP_EC_gen(const char *curve) { return EVP_EC_gen(curve); }

// EVP_RSA_gen is a macro over the variadic EVP_PKEY_Q_keygen, which Swift cannot call.
static inline EVP_PKEY *CAASAOpenSSL_EVP_RSA_gen(unsigned int bits) { return EVP_RSA_gen(bits); }

// OPENSSL_free is a macro that passes the caller's file and line.
static inline void CAASAOpenSSL_OPENSSL_free(void *p) { OPENSSL_free(p); }

// The SSL_ERROR_* and option constants are macros of a type Swift imports inconsistently.
static const int CAASAOpenSSL_SSL_ERROR_WANT_READ = SSL_ERROR_WANT_READ;
static const int CAASAOpenSSL_SSL_ERROR_WANT_WRITE = SSL_ERROR_WANT_WRITE;
static const int CAASAOpenSSL_SSL_ERROR_ZERO_RETURN = SSL_ERROR_ZERO_RETURN;
static const int CAASAOpenSSL_SSL_ERROR_SYSCALL = SSL_ERROR_SYSCALL;
static const int CAASAOpenSSL_SSL_ERROR_SSL = SSL_ERROR_SSL;
static const uint64_t CAASAOpenSSL_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t CAASAOpenSSL_SSL_OP_CIPHER_SERVER_PREFERENCE = SSL_OP_CIPHER_SERVER_PREFERENCE;
static const uint64_t CAASAOpenSSL_SSL_OP_PRIORITIZE_CHACHA = SSL_OP_PRIORITIZE_CHACHA;
static const uint64_t CAASAOpenSSL_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const uint64_t CAASAOpenSSL_SSL_OP_NO_TICKET = SSL_OP_NO_TICKET;
static const uint64_t CAASAOpenSSL_SSL_OP_IGNORE_UNEXPECTED_EOF = SSL_OP_IGNORE_UNEXPECTED_EOF;
static const long CAASAOpenSSL_SSL_MODE_RELEASE_BUFFERS = SSL_MODE_RELEASE_BUFFERS;
static const long CAASAOpenSSL_SSL_MODE_ENABLE_PARTIAL_WRITE = SSL_MODE_ENABLE_PARTIAL_WRITE;
static const long CAASAOpenSSL_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER = SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
static const long CAASAOpenSSL_SSL_SESS_CACHE_SERVER = SSL_SESS_CACHE_SERVER;
static const int CAASAOpenSSL_SSL_TLSEXT_ERR_OK = SSL_TLSEXT_ERR_OK;
static const int CAASAOpenSSL_SSL_TLSEXT_ERR_NOACK = SSL_TLSEXT_ERR_NOACK;
static const int CAASAOpenSSL_SSL_TLSEXT_ERR_ALERT_FATAL = SSL_TLSEXT_ERR_ALERT_FATAL;
static const int CAASAOpenSSL_TLSEXT_NAMETYPE_host_name = TLSEXT_NAMETYPE_host_name;

#endif
