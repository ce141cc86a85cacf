/* The OpenSSL boundary of lib/pki: PEM in and out, error queue to struct err. */

#include "lib/pki/internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include "lib/pki/key.h"

int pki_ossl_err(struct err *e, int code, const char *fmt, ...)
{
    char msg[ERR_MSG_MAX / 2];
    char reason[256] = "";
    unsigned long ossl = ERR_peek_error();
    va_list ap;

    if (ossl) {
        const char *r = ERR_reason_error_string(ossl);
        if (r)
            snprintf(reason, sizeof(reason), ": %s", r);
        else
            snprintf(reason, sizeof(reason), ": OpenSSL error %lx", ossl);
    }
    ERR_clear_error();
    if (!e)
        return code;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(e, code, "%s%s", msg, reason);
}

/* A password callback that never supplies one, so an encrypted key fails instead of
 * prompting on a terminal. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
    return 0;
}

static int open_pem(const char *pem, const char *what, BIO **ret_bio, struct err *e)
{
    size_t n;
    BIO *b;

    if (!pem)
        return err_set(e, -EINVAL, "%s: missing", what);
    n = strnlen(pem, PKI_PEM_MAX + 1);
    if (n > PKI_PEM_MAX)
        return err_set(e, -ENOBUFS, "%s: larger than %d bytes", what, PKI_PEM_MAX);
    b = BIO_new_mem_buf(pem, (int)n);
    if (!b)
        return err_set(e, -ENOMEM, "%s: out of memory", what);
    *ret_bio = b;
    return 0;
}

/* The keys parsed last, by the sha256 of their PEM text. OpenSSL 3 sets up its decoders for
 * every parse, which is most of a parse's cost, and a CA's key is parsed for every certificate
 * it signs and every check. Each slot holds a reference to its key; the least recently used
 * slot is reused. The process is one thread (one event loop). */
#define KEY_MEMO_SLOTS 32

static struct key_memo {
    unsigned char md[SHA256_DIGEST_LENGTH];
    EVP_PKEY *key;
    unsigned long used; /* key_memo_clock when last handed out; 0: empty */
} key_memo[KEY_MEMO_SLOTS];
static unsigned long key_memo_clock, key_memo_hits;

static EVP_PKEY *key_memo_get(const unsigned char *md)
{
    for (int i = 0; i < KEY_MEMO_SLOTS; i++) {
        struct key_memo *m = &key_memo[i];
        if (m->used && memcmp(m->md, md, sizeof(m->md)) == 0 && EVP_PKEY_up_ref(m->key) == 1) {
            m->used = ++key_memo_clock;
            key_memo_hits++;
            return m->key;
        }
    }
    return NULL;
}

static void key_memo_put(const unsigned char *md, EVP_PKEY *k)
{
    struct key_memo *m = &key_memo[0];

    for (int i = 1; i < KEY_MEMO_SLOTS && m->used; i++)
        if (!key_memo[i].used || key_memo[i].used < m->used)
            m = &key_memo[i];
    if (EVP_PKEY_up_ref(k) != 1)
        return; /* only an optimisation */
    EVP_PKEY_free(m->key);
    memcpy(m->md, md, sizeof(m->md));
    m->key = k;
    m->used = ++key_memo_clock;
}

unsigned long pki_ossl_key_memo_hits(void)
{
    return key_memo_hits;
}

void pki_ossl_key_memo_clear(void)
{
    for (int i = 0; i < KEY_MEMO_SLOTS; i++) {
        EVP_PKEY_free(key_memo[i].key);
        key_memo[i] = (struct key_memo){{0}, NULL, 0};
    }
}

int pki_ossl_load_key(const char *pem, const char *what, EVP_PKEY **ret_key, struct err *e)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    bool digested;
    BIO *b = NULL;
    EVP_PKEY *k;
    int r;

    r = open_pem(pem, what, &b, e);
    if (r < 0)
        return r;
    digested = EVP_Digest(pem, strlen(pem), md, NULL, EVP_sha256(), NULL) == 1;
    if (digested && (k = key_memo_get(md))) {
        BIO_free(b);
        *ret_key = k;
        return 0;
    }
    k = PEM_read_bio_PrivateKey(b, NULL, no_password, NULL);
    BIO_free(b);
    if (!k)
        return pki_ossl_err(e, -EINVAL, "%s: no readable PEM private key", what);
    ERR_clear_error();
    if (digested)
        key_memo_put(md, k);
    *ret_key = k;
    return 0;
}

int pki_ossl_load_cert(const char *pem, const char *what, X509 **ret_cert, struct err *e)
{
    BIO *b = NULL;
    X509 *x;
    int r;

    r = open_pem(pem, what, &b, e);
    if (r < 0)
        return r;
    x = PEM_read_bio_X509(b, NULL, no_password, NULL);
    BIO_free(b);
    if (!x)
        return pki_ossl_err(e, -EINVAL, "%s: no readable PEM certificate", what);
    ERR_clear_error();
    *ret_cert = x;
    return 0;
}

static int bio_to_string(BIO *b, char **ret, struct err *e)
{
    char *data;
    long n = BIO_get_mem_data(b, &data);
    char *s;

    if (n < 0)
        return err_set(e, -ENOMEM, "PEM encoding failed");
    s = malloc((size_t)n + 1);
    if (!s)
        return err_set(e, -ENOMEM, "out of memory");
    memcpy(s, data, (size_t)n);
    s[n] = '\0';
    *ret = s;
    return 0;
}

int pki_ossl_key_pem(EVP_PKEY *key, char **ret_pem, struct err *e)
{
    BIO *b = BIO_new(BIO_s_mem());
    int r;

    if (!b)
        return err_set(e, -ENOMEM, "out of memory");
    if (!PEM_write_bio_PrivateKey_traditional(b, key, NULL, NULL, 0, NULL, NULL))
        r = pki_ossl_err(e, -ENOMEM, "encoding a private key");
    else
        r = bio_to_string(b, ret_pem, e);
    BIO_free(b);
    return r;
}

int pki_ossl_pubkey_pem(EVP_PKEY *key, char **ret_pem, struct err *e)
{
    BIO *b = BIO_new(BIO_s_mem());
    int r;

    if (!b)
        return err_set(e, -ENOMEM, "out of memory");
    if (!PEM_write_bio_PUBKEY(b, key))
        r = pki_ossl_err(e, -ENOMEM, "encoding a public key");
    else
        r = bio_to_string(b, ret_pem, e);
    BIO_free(b);
    return r;
}

int pki_ossl_cert_pem(X509 *cert, char **ret_pem, struct err *e)
{
    BIO *b = BIO_new(BIO_s_mem());
    int r;

    if (!b)
        return err_set(e, -ENOMEM, "out of memory");
    if (!PEM_write_bio_X509(b, cert))
        r = pki_ossl_err(e, -ENOMEM, "encoding a certificate");
    else
        r = bio_to_string(b, ret_pem, e);
    BIO_free(b);
    return r;
}

int pki_ossl_time(const ASN1_TIME *t, int64_t *ret)
{
    struct tm tm;

    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return -EINVAL;
    *ret = (int64_t)timegm(&tm);
    return 0;
}
