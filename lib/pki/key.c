/* Private keys: generate, read, compare (pki_key_*). */

#include "lib/pki/key.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "lib/pki/internal.h"

static const char *const alg_names[] = {
    [PKI_KEY_ECDSA_P256] = "ECDSA-P256", [PKI_KEY_ECDSA_P384] = "ECDSA-P384",
    [PKI_KEY_RSA_2048] = "RSA-2048",     [PKI_KEY_RSA_3072] = "RSA-3072",
    [PKI_KEY_RSA_4096] = "RSA-4096",
};

#define N_ALGS (sizeof(alg_names) / sizeof(alg_names[0]))

const char *pki_key_alg_name(enum pki_key_alg alg)
{
    if ((size_t)alg >= N_ALGS)
        return "unknown";
    return alg_names[alg];
}

int pki_key_alg_parse(const char *s, enum pki_key_alg *ret_alg)
{
    for (size_t i = 0; s && i < N_ALGS; i++) {
        if (strcmp(s, alg_names[i]) == 0) {
            *ret_alg = (enum pki_key_alg)i;
            return 0;
        }
    }
    return -EINVAL;
}

int pki_ossl_keygen(enum pki_key_alg alg, EVP_PKEY **ret_key, struct err *e)
{
    EVP_PKEY *k = NULL;

    switch (alg) {
    case PKI_KEY_ECDSA_P256:
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        break;
    case PKI_KEY_ECDSA_P384:
        k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
        break;
    case PKI_KEY_RSA_2048:
        k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
        break;
    case PKI_KEY_RSA_3072:
        k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072);
        break;
    case PKI_KEY_RSA_4096:
        k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)4096);
        break;
    default:
        return err_set(e, -EINVAL, "unknown key algorithm %d", (int)alg);
    }
    if (!k)
        return pki_ossl_err(e, -ENOMEM, "generating a %s key", pki_key_alg_name(alg));
    *ret_key = k;
    return 0;
}

int pki_key_generate(enum pki_key_alg alg, char **ret_key_pem, struct err *e)
{
    EVP_PKEY *k = NULL;
    int r;

    r = pki_ossl_keygen(alg, &k, e);
    if (r < 0)
        return r;
    r = pki_ossl_key_pem(k, ret_key_pem, e);
    EVP_PKEY_free(k);
    return r;
}

int pki_key_alg_of_pkey(EVP_PKEY *k, enum pki_key_alg *ret_alg)
{
    char group[64];

    if (EVP_PKEY_is_a(k, "RSA")) {
        switch (EVP_PKEY_get_bits(k)) {
        case 2048:
            *ret_alg = PKI_KEY_RSA_2048;
            return 0;
        case 3072:
            *ret_alg = PKI_KEY_RSA_3072;
            return 0;
        case 4096:
            *ret_alg = PKI_KEY_RSA_4096;
            return 0;
        default:
            return -ENOTSUP;
        }
    }
    if (EVP_PKEY_is_a(k, "EC")) {
        if (!EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                            NULL)) {
            ERR_clear_error();
            return -ENOTSUP;
        }
        if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0) {
            *ret_alg = PKI_KEY_ECDSA_P256;
            return 0;
        }
        if (strcmp(group, "secp384r1") == 0 || strcmp(group, "P-384") == 0) {
            *ret_alg = PKI_KEY_ECDSA_P384;
            return 0;
        }
    }
    return -ENOTSUP;
}

int pki_key_alg_of(const char *key_pem, enum pki_key_alg *ret_alg, struct err *e)
{
    EVP_PKEY *k = NULL;
    int r;

    r = pki_ossl_load_key(key_pem, "key", &k, e);
    if (r < 0)
        return r;
    r = pki_key_alg_of_pkey(k, ret_alg);
    if (r < 0)
        err_set(e, r, "key: %s keys of %d bits are not supported (use RSA or ECDSA P-256/P-384)",
                EVP_PKEY_get0_type_name(k), EVP_PKEY_get_bits(k));
    EVP_PKEY_free(k);
    return r;
}

int pki_key_public_pem(const char *key_pem, char **ret_pub_pem, struct err *e)
{
    EVP_PKEY *k = NULL;
    int r;

    r = pki_ossl_load_key(key_pem, "key", &k, e);
    if (r < 0)
        return r;
    r = pki_ossl_pubkey_pem(k, ret_pub_pem, e);
    EVP_PKEY_free(k);
    return r;
}

/* Reads the public key from a certificate or, failing that, a "PUBLIC KEY" PEM. */
static int load_public(const char *pem, const char *what, EVP_PKEY **ret, struct err *e)
{
    X509 *x = NULL;
    EVP_PKEY *k;
    BIO *b;

    if (pem && strstr(pem, "-----BEGIN PUBLIC KEY-----")) {
        size_t n = strnlen(pem, PKI_PEM_MAX + 1);
        if (n > PKI_PEM_MAX)
            return err_set(e, -ENOBUFS, "%s: larger than %d bytes", what, PKI_PEM_MAX);
        b = BIO_new_mem_buf(pem, (int)n);
        if (!b)
            return err_set(e, -ENOMEM, "out of memory");
        k = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL);
        BIO_free(b);
        if (!k)
            return pki_ossl_err(e, -EINVAL, "%s: no readable PEM public key", what);
        *ret = k;
        return 0;
    }
    int r = pki_ossl_load_cert(pem, what, &x, e);
    if (r < 0)
        return r;
    k = X509_get_pubkey(x);
    X509_free(x);
    if (!k)
        return pki_ossl_err(e, -EINVAL, "%s: unreadable public key", what);
    *ret = k;
    return 0;
}

int pki_key_check_match(const char *key_pem, const char *pub_or_cert_pem, const char *key_what,
                        const char *cert_what, struct err *e)
{
    EVP_PKEY *priv = NULL, *pub = NULL;
    int r;

    if (!key_what)
        key_what = "key";
    if (!cert_what)
        cert_what = "certificate";
    r = pki_ossl_load_key(key_pem, key_what, &priv, e);
    if (r < 0)
        goto out;
    r = load_public(pub_or_cert_pem, cert_what, &pub, e);
    if (r < 0)
        goto out;
    if (EVP_PKEY_eq(priv, pub) != 1)
        r = err_set(e, -EKEYREJECTED, "%s does not match %s", key_what, cert_what);
    ERR_clear_error();
out:
    EVP_PKEY_free(priv);
    EVP_PKEY_free(pub);
    return r;
}

int pki_key_public_check(const char *pub_pem, const char *what, struct err *e)
{
    EVP_PKEY *k = NULL;
    int r;

    if (!pub_pem || !strstr(pub_pem, "-----BEGIN PUBLIC KEY-----"))
        return err_set(e, -EINVAL, "%s: no PEM public key", what);
    r = load_public(pub_pem, what, &k, e);
    EVP_PKEY_free(k);
    return r;
}
