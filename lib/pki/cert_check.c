/* Reading certificates back and checking them (pki_cert_info_*, pki_cert_check_*). */

#include "lib/pki/cert.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "lib/pki/internal.h"
#include "lib/util/strutil.h"

static void strv_free(struct pki_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

static int strv_push(struct pki_strv *sv, const char *s, size_t len)
{
    char **v;
    char *copy;

    if (sv->n >= PKI_SPEC_MAX_NAMES)
        return 0; /* A certificate may hold more names than a spec; keep the first ones. */
    copy = strndup(s, len);
    v = copy ? realloc(sv->v, (sv->n + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(copy);
        return -ENOMEM;
    }
    v[sv->n++] = copy;
    sv->v = v;
    return 0;
}

void pki_cert_info_free(struct pki_cert_info *info)
{
    if (!info)
        return;
    free(info->common_name);
    free(info->issuer_common_name);
    strv_free(&info->orgs);
    strv_free(&info->dns_names);
    strv_free(&info->ips);
    free(info);
}

/* Copies every entry of nid in name, in order; the first one only into *ret_first. */
static int name_entries(const X509_NAME *name, int nid, struct pki_strv *all, char **ret_first)
{
    int idx = -1;

    if (ret_first) {
        idx = X509_NAME_get_index_by_NID(name, nid, -1);
        const ASN1_STRING *s =
            idx >= 0 ? X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx)) : NULL;
        *ret_first =
            s ? strndup((const char *)ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s))
              : strdup("");
        return *ret_first ? 0 : -ENOMEM;
    }
    while ((idx = X509_NAME_get_index_by_NID(name, nid, idx)) >= 0) {
        const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
        if (strv_push(all, (const char *)ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s)) <
            0)
            return -ENOMEM;
    }
    return 0;
}

static int read_sans(X509 *x, struct pki_cert_info *info)
{
    GENERAL_NAMES *gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    char text[INET6_ADDRSTRLEN];
    int r = 0;

    for (int i = 0; gens && r == 0 && i < sk_GENERAL_NAME_num(gens); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(gens, i);
        if (g->type == GEN_DNS) {
            r = strv_push(&info->dns_names, (const char *)ASN1_STRING_get0_data(g->d.dNSName),
                          (size_t)ASN1_STRING_length(g->d.dNSName));
        } else if (g->type == GEN_IPADD) {
            int len = ASN1_STRING_length(g->d.iPAddress);
            const unsigned char *b = ASN1_STRING_get0_data(g->d.iPAddress);
            if ((len == 4 && inet_ntop(AF_INET, b, text, sizeof(text))) ||
                (len == 16 && inet_ntop(AF_INET6, b, text, sizeof(text))))
                r = strv_push(&info->ips, text, strlen(text));
        }
    }
    GENERAL_NAMES_free(gens);
    return r;
}

static unsigned read_key_usage(X509 *x)
{
    uint32_t ku = X509_get_key_usage(x);
    unsigned out = 0;

    if (ku == UINT32_MAX) /* extension absent */
        return 0;
    if (ku & KU_DIGITAL_SIGNATURE)
        out |= PKI_KU_DIGITAL_SIGNATURE;
    if (ku & KU_KEY_ENCIPHERMENT)
        out |= PKI_KU_KEY_ENCIPHERMENT;
    if (ku & KU_KEY_CERT_SIGN)
        out |= PKI_KU_CERT_SIGN;
    if (ku & KU_CRL_SIGN)
        out |= PKI_KU_CRL_SIGN;
    return out;
}

static unsigned read_ext_usage(X509 *x)
{
    uint32_t xku = X509_get_extended_key_usage(x);
    unsigned out = 0;

    if (xku == UINT32_MAX) /* extension absent */
        return 0;
    if (xku & XKU_SSL_SERVER)
        out |= PKI_EKU_SERVER_AUTH;
    if (xku & XKU_SSL_CLIENT)
        out |= PKI_EKU_CLIENT_AUTH;
    return out;
}

static int read_serial(X509 *x, char out[static 64])
{
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *hex = bn ? BN_bn2hex(bn) : NULL;

    BN_free(bn);
    if (!hex)
        return -ENOMEM;
    snprintf(out, 64, "%s", hex);
    OPENSSL_free(hex);
    return 0;
}

static int info_from_x509(X509 *x, struct pki_cert_info **ret_info)
{
    struct pki_cert_info *info = calloc(1, sizeof(*info));
    BASIC_CONSTRAINTS *bc;
    EVP_PKEY *pub;
    int r = -ENOMEM;

    if (!info)
        return -ENOMEM;
    if (name_entries(X509_get_subject_name(x), NID_commonName, NULL, &info->common_name) < 0 ||
        name_entries(X509_get_issuer_name(x), NID_commonName, NULL, &info->issuer_common_name) <
            0 ||
        name_entries(X509_get_subject_name(x), NID_organizationName, &info->orgs, NULL) < 0 ||
        read_sans(x, info) < 0 || read_serial(x, info->serial) < 0)
        goto out;
    bc = X509_get_ext_d2i(x, NID_basic_constraints, NULL, NULL);
    info->is_ca = bc && bc->ca;
    BASIC_CONSTRAINTS_free(bc);
    info->key_usage = read_key_usage(x);
    info->ext_usage = read_ext_usage(x);
    if (pki_ossl_time(X509_get0_notBefore(x), &info->not_before) < 0 ||
        pki_ossl_time(X509_get0_notAfter(x), &info->not_after) < 0) {
        r = -EINVAL;
        goto out;
    }
    pub = X509_get0_pubkey(x);
    info->key_alg_known = pub && pki_key_alg_of_pkey(pub, &info->key_alg) == 0;
    *ret_info = info;
    info = NULL;
    r = 0;
out:
    ERR_clear_error();
    pki_cert_info_free(info);
    return r;
}

int pki_cert_info_read(const char *pem, const char *what, struct pki_cert_info **ret_info,
                       struct err *e)
{
    X509 *x = NULL;
    int r;

    if (!what)
        what = "certificate";
    r = pki_ossl_load_cert(pem, what, &x, e);
    if (r < 0)
        return r;
    r = info_from_x509(x, ret_info);
    X509_free(x);
    if (r == -EINVAL)
        return err_set(e, r, "%s: unreadable validity period", what);
    if (r < 0)
        return err_set(e, r, "%s: out of memory", what);
    return 0;
}

int pki_cert_check_ca(const char *cert_pem, const char *key_pem, int64_t now, const char *cert_what,
                      const char *key_what, struct err *e)
{
    struct pki_cert_info *info = NULL;
    char when[32];
    int r;

    if (!cert_what)
        cert_what = "tls.crt";
    if (!key_what)
        key_what = "tls.key";
    if (!now)
        now = (int64_t)time(NULL);
    r = pki_cert_info_read(cert_pem, cert_what, &info, e);
    if (r < 0)
        return r;
    r = pki_key_check_match(key_pem, cert_pem, key_what, cert_what, e);
    if (r < 0)
        goto out;
    if (!info->is_ca) {
        r = err_set(e, -EINVAL, "%s is not a CA certificate (basicConstraints CA:TRUE is missing)",
                    cert_what);
    } else if (info->key_usage && !(info->key_usage & PKI_KU_CERT_SIGN)) {
        r = err_set(e, -EINVAL, "%s may not sign certificates (keyUsage lacks keyCertSign)",
                    cert_what);
    } else if (info->not_after <= now) {
        time_format_rfc3339((double)info->not_after, when);
        r = err_set(e, -EKEYEXPIRED, "%s expired at %s", cert_what, when);
    } else if (info->not_before > now) {
        time_format_rfc3339((double)info->not_before, when);
        r = err_set(e, -EKEYEXPIRED, "%s is not valid before %s", cert_what, when);
    }
out:
    pki_cert_info_free(info);
    return r;
}

/* True when both lists hold the same strings, in any order (case-insensitive). */
static bool same_set(const struct pki_strv *a, const struct pki_strv *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++) {
        bool found = false;
        for (size_t j = 0; j < b->n && !found; j++)
            found = strcasecmp(a->v[i], b->v[j]) == 0;
        if (!found)
            return false;
    }
    return true;
}

static int verify_signed_by(const char *cert_pem, const char *ca_cert_pem, struct err *e)
{
    X509 *x = NULL, *ca = NULL;
    int r;

    r = pki_ossl_load_cert(cert_pem, "certificate", &x, e);
    if (r == 0)
        r = pki_ossl_load_cert(ca_cert_pem, "CA certificate", &ca, e);
    if (r == 0 && (X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(ca)) != 0 ||
                   X509_verify(x, X509_get0_pubkey(ca)) != 1))
        r = -ESTALE;
    ERR_clear_error();
    X509_free(x);
    X509_free(ca);
    return r;
}

int pki_cert_check_leaf(const char *cert_pem, const char *ca_cert_pem,
                        const struct pki_cert_spec *spec, int64_t now, int64_t renew_before,
                        struct err *e)
{
    struct pki_cert_info *info = NULL;
    char when[32];
    int r;

    if (!now)
        now = (int64_t)time(NULL);
    r = pki_cert_info_read(cert_pem, "certificate", &info, e);
    if (r < 0)
        return r;
    r = verify_signed_by(cert_pem, ca_cert_pem, e);
    if (r == -ESTALE) {
        err_set(e, r, "%s: not signed by the current CA", info->common_name);
        goto out;
    }
    if (r < 0)
        goto out;
    r = -ESTALE;
    if (!spec->common_name || strcmp(info->common_name, spec->common_name) != 0)
        err_set(e, r, "%s: commonName differs", info->common_name);
    else if (!same_set(&info->orgs, &spec->orgs))
        err_set(e, r, "%s: organizations differ", info->common_name);
    else if (!same_set(&info->dns_names, &spec->dns_names) || !same_set(&info->ips, &spec->ips))
        err_set(e, r, "%s: subject alternative names differ", info->common_name);
    else if (info->is_ca != spec->is_ca || (!spec->is_ca && info->ext_usage != spec->ext_usage))
        err_set(e, r, "%s: usages differ", info->common_name);
    else if (!info->key_alg_known || info->key_alg != spec->key_alg)
        err_set(e, r, "%s: key algorithm differs from %s", info->common_name,
                pki_key_alg_name(spec->key_alg));
    else if (info->not_after - renew_before <= now) {
        time_format_rfc3339((double)info->not_after, when);
        err_set(e, r, "%s: expires at %s", info->common_name, when);
    } else
        r = 0;
out:
    pki_cert_info_free(info);
    return r;
}
