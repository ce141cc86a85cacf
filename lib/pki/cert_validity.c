/* The validity period of certificates, read without decoding the rest (pki_cert_not_after). */

#include "lib/pki/cert.h"

#include <errno.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/pem.h>

#include "lib/pki/internal.h"

/* Reads the header of the next DER element of [*p, end) with the expected tag (universal
 * class) and leaves *p at its contents. Returns the contents' length, or -1. */
static long der_enter(const unsigned char **p, const unsigned char *end, int want_tag)
{
    const unsigned char *q = *p;
    long len;
    int tag, cls;

    if (q >= end || (ASN1_get_object(&q, &len, &tag, &cls, end - q) & 0x80) ||
        cls != V_ASN1_UNIVERSAL || tag != want_tag || len > end - q)
        return -1;
    *p = q;
    return len;
}

/* Moves *p past the next DER element of [*p, end). Returns 0 or -1. */
static int der_skip(const unsigned char **p, const unsigned char *end)
{
    const unsigned char *q = *p;
    long len;
    int tag, cls;

    if (q >= end || (ASN1_get_object(&q, &len, &tag, &cls, end - q) & 0x80) || len > end - q)
        return -1;
    *p = q + len;
    return 0;
}

/*
 * The NotAfter of one DER certificate:
 *   Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
 *                   signature, issuer, validity SEQUENCE { notBefore, notAfter }, ... }, ... }
 * Returns 0 or -EINVAL.
 */
static int der_not_after(const unsigned char *der, long n, int64_t *ret)
{
    const unsigned char *p = der, *end = der + n, *q;
    ASN1_TIME *t = NULL;
    long len;
    int tag, cls, r = -EINVAL;

    if ((len = der_enter(&p, end, V_ASN1_SEQUENCE)) < 0)
        return -EINVAL;
    end = p + len;
    if ((len = der_enter(&p, end, V_ASN1_SEQUENCE)) < 0)
        return -EINVAL;
    end = p + len;
    /* The version is explicitly tagged [0], and absent for version 1. */
    q = p;
    if (q < end && !(ASN1_get_object(&q, &len, &tag, &cls, end - q) & 0x80) &&
        cls == V_ASN1_CONTEXT_SPECIFIC && tag == 0 && der_skip(&p, end) < 0)
        return -EINVAL;
    if (der_skip(&p, end) < 0 || der_skip(&p, end) < 0 || der_skip(&p, end) < 0)
        return -EINVAL; /* serialNumber, signature, issuer */
    if ((len = der_enter(&p, end, V_ASN1_SEQUENCE)) < 0)
        return -EINVAL;
    end = p + len;
    if (der_skip(&p, end) < 0) /* notBefore */
        return -EINVAL;
    if (d2i_ASN1_TIME(&t, &p, end - p) && pki_ossl_time(t, ret) == 0)
        r = 0;
    ASN1_TIME_free(t);
    return r;
}

int pki_cert_not_after(const char *pem, const char *what, int64_t *ret_not_after, struct err *e)
{
    int64_t earliest = INT64_MAX;
    bool found = false;
    BIO *b;
    size_t n;
    int r = 0;

    if (!what)
        what = "certificate";
    if (!pem)
        return err_set(e, -EINVAL, "%s: missing", what);
    n = strnlen(pem, PKI_PEM_MAX + 1);
    if (n > PKI_PEM_MAX)
        return err_set(e, -ENOBUFS, "%s: larger than %d bytes", what, PKI_PEM_MAX);
    if (!(b = BIO_new_mem_buf(pem, (int)n)))
        return err_set(e, -ENOMEM, "%s: out of memory", what);
    ERR_clear_error();
    for (;;) {
        char *name = NULL, *header = NULL;
        unsigned char *der = NULL;
        long len = 0;
        int64_t t;

        if (!PEM_read_bio(b, &name, &header, &der, &len)) {
            /* No further block is the normal end; anything else is a damaged block. */
            if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE)
                r = err_set(e, -EINVAL, "%s: damaged PEM block", what);
            break;
        }
        if (strcmp(name, PEM_STRING_X509) == 0) {
            if (der_not_after(der, len, &t) < 0)
                r = err_set(e, -EINVAL, "%s: unreadable certificate validity", what);
            else if (t < earliest)
                earliest = t;
            found = true;
        }
        OPENSSL_free(name);
        OPENSSL_free(header);
        OPENSSL_clear_free(der, len > 0 ? (size_t)len : 0); /* another block may be a key */
        if (r < 0)
            break;
    }
    ERR_clear_error();
    BIO_free(b);
    if (r < 0)
        return r;
    if (!found)
        return err_set(e, -EINVAL, "%s: no readable PEM certificate", what);
    *ret_not_after = earliest;
    return 0;
}
