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

/* The keys and certificates parsed last, by the sha256 of their PEM text. OpenSSL 3 sets up
 * its decoders for every key it parses, a certificate's public key included, which is most
 * of a parse's cost; a CA's key and certificate are parsed for every certificate it signs, and
 * the same certificates are read on every reconcile. Each slot holds a reference to its
 * object; the least recently used slot is reused. The process is one thread (one event
 * loop). */
#define PARSED_SLOTS 32

struct parsed {
    unsigned char md[SHA256_DIGEST_LENGTH];
    void *obj;          /* EVP_PKEY or X509 */
    unsigned long used; /* parsed_clock when last handed out; 0: empty */
};
static struct parsed parsed_keys[PARSED_SLOTS], parsed_certs[PARSED_SLOTS];
static unsigned long parsed_clock, parsed_hits;

static bool up_ref(bool is_key, void *obj)
{
    return is_key ? EVP_PKEY_up_ref(obj) == 1 : X509_up_ref(obj) == 1;
}

static void put_ref(bool is_key, void *obj)
{
    if (is_key)
        EVP_PKEY_free(obj);
    else
        X509_free(obj);
}

static void *parsed_get(struct parsed *t, bool is_key, const unsigned char *md)
{
    for (int i = 0; i < PARSED_SLOTS; i++)
        if (t[i].used && memcmp(t[i].md, md, sizeof(t[i].md)) == 0 && up_ref(is_key, t[i].obj)) {
            t[i].used = ++parsed_clock;
            parsed_hits++;
            return t[i].obj;
        }
    return NULL;
}

static void parsed_put(struct parsed *t, bool is_key, const unsigned char *md, void *obj)
{
    struct parsed *m = &t[0];

    for (int i = 1; i < PARSED_SLOTS && m->used; i++)
        if (!t[i].used || t[i].used < m->used)
            m = &t[i];
    if (!up_ref(is_key, obj))
        return; /* only an optimisation */
    if (m->used)
        put_ref(is_key, m->obj);
    memcpy(m->md, md, sizeof(m->md));
    m->obj = obj;
    m->used = ++parsed_clock;
}

unsigned long pki_ossl_parsed_hits(void)
{
    return parsed_hits;
}

void pki_ossl_parsed_clear(void)
{
    for (int i = 0; i < PARSED_SLOTS; i++) {
        if (parsed_keys[i].used)
            put_ref(true, parsed_keys[i].obj);
        if (parsed_certs[i].used)
            put_ref(false, parsed_certs[i].obj);
        parsed_keys[i] = parsed_certs[i] = (struct parsed){{0}, NULL, 0};
    }
}

/* The first private key (is_key) or certificate of pem, from the memo or parsed. */
static void *load(const char *pem, const char *what, bool is_key, struct err *e, int *ret)
{
    struct parsed *t = is_key ? parsed_keys : parsed_certs;
    unsigned char md[SHA256_DIGEST_LENGTH];
    bool digested;
    BIO *b = NULL;
    void *obj;

    *ret = open_pem(pem, what, &b, e);
    if (*ret < 0)
        return NULL;
    digested = EVP_Digest(pem, strlen(pem), md, NULL, EVP_sha256(), NULL) == 1;
    if (digested && (obj = parsed_get(t, is_key, md))) {
        BIO_free(b);
        return obj;
    }
    obj = is_key ? (void *)PEM_read_bio_PrivateKey(b, NULL, no_password, NULL)
                 : (void *)PEM_read_bio_X509(b, NULL, no_password, NULL);
    BIO_free(b);
    if (!obj) {
        *ret = pki_ossl_err(e, -EINVAL, "%s: no readable PEM %s", what,
                            is_key ? "private key" : "certificate");
        return NULL;
    }
    ERR_clear_error();
    if (digested)
        parsed_put(t, is_key, md, obj);
    return obj;
}

int pki_ossl_load_key(const char *pem, const char *what, EVP_PKEY **ret_key, struct err *e)
{
    int r;
    EVP_PKEY *k = load(pem, what, true, e, &r);

    if (k)
        *ret_key = k;
    return r;
}

int pki_ossl_load_cert(const char *pem, const char *what, X509 **ret_cert, struct err *e)
{
    int r;
    X509 *x = load(pem, what, false, e, &r);

    if (x)
        *ret_cert = x;
    return r;
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
