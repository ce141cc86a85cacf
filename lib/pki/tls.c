/* Serving TLS (lib/pki/tls.h). */

#include "lib/pki/tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>

#include "lib/pki/cert.h"
#include "lib/pki/internal.h"

int pki_tls_server_ctx(const char *chain_pem, const char *key_pem, const char *what,
                       SSL_CTX **ret_ctx, struct err *e)
{
    SSL_CTX *ctx = NULL;
    EVP_PKEY *key = NULL;
    X509 *x = NULL;
    BIO *b = NULL;
    int r, n = 0;

    if (!chain_pem || strnlen(chain_pem, PKI_PEM_MAX + 1) > PKI_PEM_MAX)
        return err_set(e, chain_pem ? -ENOBUFS : -EINVAL, "%s: certificate %s", what,
                       chain_pem ? "too large" : "missing");
    r = pki_ossl_load_key(key_pem, "key", &key, e);
    if (r < 0) {
        err_prefix(e, "%s: ", what);
        return r;
    }
    ctx = SSL_CTX_new(TLS_server_method());
    b = BIO_new_mem_buf(chain_pem, -1);
    if (!ctx || !b) {
        r = err_set(e, -ENOMEM, "%s: out of memory", what);
        goto out;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL))) {
        int ok = n == 0 ? SSL_CTX_use_certificate(ctx, x) : SSL_CTX_add1_chain_cert(ctx, x);
        X509_free(x);
        if (ok != 1) {
            r = pki_ossl_err(e, -EINVAL, "%s: certificate %d is not usable", what, n + 1);
            goto out;
        }
        n++;
    }
    ERR_clear_error(); /* the end of the PEM stream */
    if (n == 0) {
        r = err_set(e, -EINVAL, "%s: no PEM certificate", what);
        goto out;
    }
    if (SSL_CTX_use_PrivateKey(ctx, key) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
        r = pki_ossl_err(e, -EINVAL, "%s: the key does not match the certificate", what);
        goto out;
    }
    *ret_ctx = ctx;
    ctx = NULL;
    r = 0;
out:
    BIO_free(b);
    EVP_PKEY_free(key);
    SSL_CTX_free(ctx);
    return r;
}

/* Frees a private key's PEM after wiping it. */
static void key_free(char *pem)
{
    if (pem) {
        OPENSSL_cleanse(pem, strlen(pem));
        free(pem);
    }
}

int pki_tls_self_signed(const char *const *names, size_t n, int64_t validity, char **ret_chain_pem,
                        char **ret_key_pem, struct err *e)
{
    struct pki_cert_spec ca, leaf;
    char *ca_cert = NULL, *ca_key = NULL, *cert = NULL, *key = NULL, *chain = NULL;
    char cn[PKI_CN_MAX + 1];
    size_t len;
    int r;

    if (n == 0)
        return err_set(e, -EINVAL, "self-signed certificate: no name");
    pki_cert_spec_init(&ca);
    pki_cert_spec_init(&leaf);
    ca.is_ca = true;
    ca.validity = leaf.validity = validity > 0 ? validity : PKI_LEAF_VALIDITY_DEFAULT;
    snprintf(cn, sizeof(cn), "%.40s-ca@%lld", names[0], (long long)time(NULL));
    leaf.ext_usage = PKI_EKU_SERVER_AUTH;
    r = pki_cert_spec_set_cn(&ca, cn, e);
    if (r == 0)
        r = pki_cert_spec_set_cn(&leaf, names[0], e);
    for (size_t i = 0; r == 0 && i < n; i++)
        r = pki_cert_spec_add_san(&leaf, names[i], e);
    if (r == 0)
        r = pki_cert_issue(NULL, NULL, &ca, &ca_cert, &ca_key, e);
    if (r == 0)
        r = pki_cert_issue(ca_cert, ca_key, &leaf, &cert, &key, e);
    if (r < 0)
        goto out;
    len = strlen(cert) + strlen(ca_cert) + 1;
    chain = malloc(len);
    if (!chain) {
        r = err_set(e, -ENOMEM, "self-signed certificate: out of memory");
        goto out;
    }
    snprintf(chain, len, "%s%s", cert, ca_cert);
    *ret_chain_pem = chain;
    *ret_key_pem = key;
    key = NULL;
out:
    key_free(ca_key);
    key_free(key);
    free(ca_cert);
    free(cert);
    pki_cert_spec_done(&ca);
    pki_cert_spec_done(&leaf);
    return r;
}
