#ifndef NESTCP_TEST_PKI_CHECK_H
#define NESTCP_TEST_PKI_CHECK_H

/*
 * Checks made with OpenSSL itself, independent of lib/pki's own reading code, shared by the
 * pki unit tests. Each function is static so every test program gets its own copy.
 */

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static inline X509 *pem_x509(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

    BIO_free(b);
    return x;
}

static inline EVP_PKEY *pem_pkey(const char *pem)
{
    BIO *b = BIO_new_mem_buf(pem, -1);
    EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;

    BIO_free(b);
    return k;
}

/* X509_verify_cert with a store holding only ca_pem, for the given X509_PURPOSE_*.
 * Returns the X509_V_* result (X509_V_OK when the chain verifies). */
static inline int verify_chain(const char *ca_pem, const char *leaf_pem, int purpose)
{
    X509 *ca = pem_x509(ca_pem), *leaf = pem_x509(leaf_pem);
    X509_STORE *store = X509_STORE_new();
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    int result = -1;

    if (ca && leaf && store && ctx && X509_STORE_add_cert(store, ca) &&
        X509_STORE_CTX_init(ctx, store, leaf, NULL) && X509_STORE_CTX_set_purpose(ctx, purpose)) {
        result = X509_verify_cert(ctx) == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
    }
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    X509_free(ca);
    X509_free(leaf);
    ERR_clear_error();
    return result;
}

/* Seconds between the certificate's NotBefore and NotAfter, and NotBefore relative to now. */
static inline void cert_times(const char *pem, int64_t *ret_lifetime, int64_t *ret_nb_vs_now)
{
    X509 *x = pem_x509(pem);
    int days = 0, secs = 0;

    ASN1_TIME_diff(&days, &secs, X509_get0_notBefore(x), X509_get0_notAfter(x));
    *ret_lifetime = (int64_t)days * 86400 + secs;
    ASN1_TIME *now = ASN1_TIME_set(NULL, time(NULL));
    ASN1_TIME_diff(&days, &secs, now, X509_get0_notBefore(x));
    *ret_nb_vs_now = (int64_t)days * 86400 + secs;
    ASN1_TIME_free(now);
    X509_free(x);
}

/* True when the certificate's serial is positive and has at least min_bits bits. */
static inline bool serial_ok(const char *pem, int min_bits)
{
    X509 *x = pem_x509(pem);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    bool ok = bn && !BN_is_negative(bn) && !BN_is_zero(bn) && BN_num_bits(bn) >= min_bits;

    BN_free(bn);
    X509_free(x);
    return ok;
}

/* The text OpenSSL prints for one extension ("CA:TRUE, pathlen:0"), into out. */
static inline bool ext_text(const char *pem, int nid, char *out, size_t size, bool *ret_critical)
{
    X509 *x = pem_x509(pem);
    int idx = x ? X509_get_ext_by_NID(x, nid, -1) : -1;
    BIO *b = BIO_new(BIO_s_mem());
    bool ok = false;

    if (idx >= 0 && b) {
        X509_EXTENSION *ext = X509_get_ext(x, idx);
        if (ret_critical)
            *ret_critical = X509_EXTENSION_get_critical(ext);
        if (X509V3_EXT_print(b, ext, 0, 0)) {
            int n = BIO_read(b, out, (int)size - 1);
            out[n > 0 ? n : 0] = '\0';
            ok = true;
        }
    }
    BIO_free(b);
    X509_free(x);
    return ok;
}

#endif
