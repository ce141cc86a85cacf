/* Certificate specs and issuing (pki_cert_spec_*, pki_cert_issue*). */

#include "lib/pki/cert.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "lib/pki/internal.h"
#include "lib/util/strutil.h"

#define SERIAL_BYTES 16

static void strv_done(struct pki_strv *sv)
{
    for (size_t i = 0; i < sv->n; i++)
        free(sv->v[i]);
    free(sv->v);
    sv->v = NULL;
    sv->n = 0;
}

static bool strv_has(const struct pki_strv *sv, const char *s)
{
    for (size_t i = 0; i < sv->n; i++)
        if (strcasecmp(sv->v[i], s) == 0)
            return true;
    return false;
}

/* Appends a copy of s (skipping it when dedup and already present). */
static int strv_add(struct pki_strv *sv, const char *s, bool dedup, struct err *e)
{
    char **v;
    char *copy;

    if (dedup && strv_has(sv, s))
        return 0;
    if (sv->n >= PKI_SPEC_MAX_NAMES)
        return err_set(e, -E2BIG, "more than %d names", PKI_SPEC_MAX_NAMES);
    copy = strdup(s);
    v = copy ? realloc(sv->v, (sv->n + 1) * sizeof(*v)) : NULL;
    if (!v) {
        free(copy);
        return err_set(e, -ENOMEM, "out of memory");
    }
    v[sv->n++] = copy;
    sv->v = v;
    return 0;
}

void pki_cert_spec_init(struct pki_cert_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->key_alg = PKI_KEY_ECDSA_P256;
}

void pki_cert_spec_done(struct pki_cert_spec *spec)
{
    if (!spec)
        return;
    free(spec->common_name);
    strv_done(&spec->orgs);
    strv_done(&spec->dns_names);
    strv_done(&spec->ips);
    spec->common_name = NULL;
}

/* Printable ASCII without the characters that would confuse a reader of a subject line. */
static bool printable(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
            return false;
    return true;
}

int pki_cert_spec_set_cn(struct pki_cert_spec *spec, const char *cn, struct err *e)
{
    char *copy;

    if (!cn || !*cn || strlen(cn) > PKI_CN_MAX || !printable(cn))
        return err_set(e, -EINVAL, "commonName must be 1 to %d printable ASCII characters",
                       PKI_CN_MAX);
    copy = strdup(cn);
    if (!copy)
        return err_set(e, -ENOMEM, "out of memory");
    free(spec->common_name);
    spec->common_name = copy;
    return 0;
}

int pki_cert_spec_add_org(struct pki_cert_spec *spec, const char *org, struct err *e)
{
    if (!org || !*org || strlen(org) > PKI_CN_MAX || !printable(org))
        return err_set(e, -EINVAL, "organization must be 1 to %d printable ASCII characters",
                       PKI_CN_MAX);
    return strv_add(&spec->orgs, org, true, e);
}

static bool dns_name_ok(const char *s)
{
    size_t n = strlen(s);

    size_t label = 0;

    if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.' || strstr(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        label = c == '.' ? 0 : label + 1;
        if (label > 63)
            return false;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_' || (c == '*' && i == 0 && s[1] == '.')))
            return false;
    }
    return true;
}

int pki_cert_spec_add_dns(struct pki_cert_spec *spec, const char *name, struct err *e)
{
    char lower[254];
    size_t n;

    if (!name || !dns_name_ok(name))
        return err_set(e, -EINVAL, "\"%.80s\" is not a valid DNS name",
                       name && printable(name) ? name : "(unprintable)");
    n = strlen(name);
    for (size_t i = 0; i <= n; i++)
        lower[i] = (name[i] >= 'A' && name[i] <= 'Z') ? (char)(name[i] - 'A' + 'a') : name[i];
    return strv_add(&spec->dns_names, lower, true, e);
}

/* Canonical text of an IP address, or -EINVAL. */
static int ip_canonical(const char *s, char out[static INET6_ADDRSTRLEN])
{
    unsigned char bin[16];

    if (inet_pton(AF_INET, s, bin) == 1)
        return inet_ntop(AF_INET, bin, out, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
    if (inet_pton(AF_INET6, s, bin) == 1)
        return inet_ntop(AF_INET6, bin, out, INET6_ADDRSTRLEN) ? 0 : -EINVAL;
    return -EINVAL;
}

int pki_cert_spec_add_ip(struct pki_cert_spec *spec, const char *ip, struct err *e)
{
    char canon[INET6_ADDRSTRLEN];

    if (!ip || ip_canonical(ip, canon) < 0)
        return err_set(e, -EINVAL, "\"%.80s\" is not an IP address",
                       ip && printable(ip) ? ip : "(unprintable)");
    return strv_add(&spec->ips, canon, true, e);
}

int pki_cert_spec_add_san(struct pki_cert_spec *spec, const char *s, struct err *e)
{
    char canon[INET6_ADDRSTRLEN];

    if (s && ip_canonical(s, canon) == 0)
        return strv_add(&spec->ips, canon, true, e);
    return pki_cert_spec_add_dns(spec, s, e);
}

/* ---- issuing ---- */

static int set_serial(X509 *x, struct err *e)
{
    unsigned char bytes[SERIAL_BYTES];
    BIGNUM *bn = NULL;
    int r = -ENOMEM;

    /* 127 random bits: the top bit is cleared so the DER INTEGER stays positive without a
     * padding byte; an all-zero draw (probability 2^-127) is redrawn. */
    do {
        if (RAND_bytes(bytes, sizeof(bytes)) != 1)
            return pki_ossl_err(e, -EIO, "drawing a serial number");
        bytes[0] &= 0x7f;
        bn = BN_bin2bn(bytes, sizeof(bytes), bn);
        if (!bn)
            goto out;
    } while (BN_is_zero(bn));
    if (BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
        r = 0;
out:
    BN_free(bn);
    OPENSSL_cleanse(bytes, sizeof(bytes));
    return r < 0 ? pki_ossl_err(e, r, "setting the serial number") : 0;
}

static int set_subject(X509 *x, const struct pki_cert_spec *spec, struct err *e)
{
    X509_NAME *name = X509_get_subject_name(x);

    for (size_t i = 0; i < spec->orgs.n; i++)
        if (!X509_NAME_add_entry_by_NID(name, NID_organizationName, MBSTRING_UTF8,
                                        (const unsigned char *)spec->orgs.v[i], -1, -1, 0))
            return pki_ossl_err(e, -EINVAL, "organization \"%s\"", spec->orgs.v[i]);
    if (!X509_NAME_add_entry_by_NID(name, NID_commonName, MBSTRING_UTF8,
                                    (const unsigned char *)spec->common_name, -1, -1, 0))
        return pki_ossl_err(e, -EINVAL, "commonName \"%s\"", spec->common_name);
    return 0;
}

static int add_conf_ext(X509 *x, int nid, const char *value, struct err *e)
{
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, NULL, nid, value);
    int ok;

    if (!ext)
        return pki_ossl_err(e, -ENOMEM, "building extension %s", OBJ_nid2sn(nid));
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : pki_ossl_err(e, -ENOMEM, "adding extension %s", OBJ_nid2sn(nid));
}

static int add_sans(X509 *x, const struct pki_cert_spec *spec, struct err *e)
{
    GENERAL_NAMES *gens;
    int r = -ENOMEM;

    if (spec->dns_names.n == 0 && spec->ips.n == 0)
        return 0;
    gens = sk_GENERAL_NAME_new_null();
    if (!gens)
        goto out;
    for (size_t i = 0; i < spec->dns_names.n; i++) {
        GENERAL_NAME *g = GENERAL_NAME_new();
        ASN1_IA5STRING *s = ASN1_IA5STRING_new();
        if (!g || !s || !ASN1_STRING_set(s, spec->dns_names.v[i], -1)) {
            GENERAL_NAME_free(g);
            ASN1_IA5STRING_free(s);
            goto out;
        }
        GENERAL_NAME_set0_value(g, GEN_DNS, s);
        if (!sk_GENERAL_NAME_push(gens, g)) {
            GENERAL_NAME_free(g);
            goto out;
        }
    }
    for (size_t i = 0; i < spec->ips.n; i++) {
        ASN1_OCTET_STRING *ip = a2i_IPADDRESS(spec->ips.v[i]);
        GENERAL_NAME *g = ip ? GENERAL_NAME_new() : NULL;
        if (!g) {
            ASN1_OCTET_STRING_free(ip);
            goto out;
        }
        GENERAL_NAME_set0_value(g, GEN_IPADD, ip);
        if (!sk_GENERAL_NAME_push(gens, g)) {
            GENERAL_NAME_free(g);
            goto out;
        }
    }
    if (X509_add1_ext_i2d(x, NID_subject_alt_name, gens, 0, X509V3_ADD_DEFAULT) == 1)
        r = 0;
out:
    GENERAL_NAMES_free(gens);
    return r < 0 ? pki_ossl_err(e, r, "adding subjectAltName") : 0;
}

/* The key identifier of a certificate: its subjectKeyIdentifier when present, else the SHA-1
 * of its public key bits (RFC 5280 4.2.1.2, method 1). */
static ASN1_OCTET_STRING *key_id(X509 *x)
{
    ASN1_OCTET_STRING *id = X509_get_ext_d2i(x, NID_subject_key_identifier, NULL, NULL);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;

    if (id)
        return id;
    if (!X509_pubkey_digest(x, EVP_sha1(), md, &len))
        return NULL;
    id = ASN1_OCTET_STRING_new();
    if (id && !ASN1_OCTET_STRING_set(id, md, (int)len)) {
        ASN1_OCTET_STRING_free(id);
        id = NULL;
    }
    return id;
}

static int add_key_ids(X509 *x, X509 *issuer, struct err *e)
{
    ASN1_OCTET_STRING *ski = key_id(x);
    AUTHORITY_KEYID *akid = NULL;
    int r = -ENOMEM;

    if (!ski || X509_add1_ext_i2d(x, NID_subject_key_identifier, ski, 0, X509V3_ADD_DEFAULT) != 1)
        goto out;
    if (issuer) {
        akid = AUTHORITY_KEYID_new();
        if (!akid || !(akid->keyid = key_id(issuer)))
            goto out;
        if (X509_add1_ext_i2d(x, NID_authority_key_identifier, akid, 0, X509V3_ADD_DEFAULT) != 1)
            goto out;
    }
    r = 0;
out:
    ASN1_OCTET_STRING_free(ski);
    AUTHORITY_KEYID_free(akid);
    return r < 0 ? pki_ossl_err(e, r, "adding key identifiers") : 0;
}

static const EVP_MD *digest_for(EVP_PKEY *signer)
{
    enum pki_key_alg alg;

    if (pki_key_alg_of_pkey(signer, &alg) == 0 && alg == PKI_KEY_ECDSA_P384)
        return EVP_sha384();
    return EVP_sha256();
}

static int set_time(ASN1_TIME *t, int64_t when, struct err *e)
{
    if (!ASN1_TIME_set(t, (time_t)when))
        return pki_ossl_err(e, -EINVAL, "setting validity");
    return 0;
}

/* Checks that an issuing CA pair is usable and returns its NotAfter. */
static int check_issuer(X509 *ca, EVP_PKEY *ca_key, int64_t now, int64_t *ret_not_after,
                        struct err *e)
{
    BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(ca, NID_basic_constraints, NULL, NULL);
    bool is_ca = bc && bc->ca;
    int64_t not_after;

    BASIC_CONSTRAINTS_free(bc);
    if (!is_ca)
        return err_set(e, -EINVAL, "CA certificate is not a CA (basicConstraints CA:TRUE)");
    if (EVP_PKEY_eq(X509_get0_pubkey(ca), ca_key) != 1) {
        ERR_clear_error();
        return err_set(e, -EKEYREJECTED, "CA key does not match CA certificate");
    }
    if (pki_ossl_time(X509_get0_notAfter(ca), &not_after) < 0)
        return err_set(e, -EINVAL, "CA certificate has an unreadable NotAfter");
    if (not_after <= now)
        return err_set(e, -EKEYEXPIRED, "CA certificate has expired");
    *ret_not_after = not_after;
    return 0;
}

static int sign(X509 *ca, EVP_PKEY *ca_key, const struct pki_cert_spec *spec, EVP_PKEY *key,
                char **ret_cert_pem, struct err *e)
{
    int64_t now = spec->now ? spec->now : (int64_t)time(NULL);
    int64_t validity = spec->validity;
    int64_t not_after;
    bool rsa = EVP_PKEY_is_a(key, "RSA");
    X509 *x = NULL;
    const char *eku = NULL;
    int r;

    if (!spec->common_name)
        return err_set(e, -EINVAL, "commonName is required");
    if (!ca && !spec->is_ca)
        return err_set(e, -EINVAL, "%s: only a CA may be self-signed", spec->common_name);
    if (validity < 0)
        return err_set(e, -EINVAL, "%s: negative validity", spec->common_name);
    if (spec->ext_usage == (PKI_EKU_SERVER_AUTH | PKI_EKU_CLIENT_AUTH))
        eku = "serverAuth,clientAuth";
    else if (spec->ext_usage == PKI_EKU_SERVER_AUTH)
        eku = "serverAuth";
    else if (spec->ext_usage == PKI_EKU_CLIENT_AUTH)
        eku = "clientAuth";
    else if (spec->ext_usage != 0)
        return err_set(e, -EINVAL, "%s: unknown extended key usage", spec->common_name);
    if (validity == 0)
        validity = spec->is_ca ? PKI_CA_VALIDITY_DEFAULT : PKI_LEAF_VALIDITY_DEFAULT;
    not_after = now + validity;
    if (ca) {
        int64_t ca_not_after = 0;
        r = check_issuer(ca, ca_key, now, &ca_not_after, e);
        if (r < 0)
            return r;
        if (not_after > ca_not_after)
            not_after = ca_not_after;
    }

    r = -ENOMEM;
    x = X509_new();
    if (!x)
        goto fail;
    if (!X509_set_version(x, X509_VERSION_3) || !X509_set_pubkey(x, key))
        goto fail;
    if ((r = set_serial(x, e)) < 0 || (r = set_subject(x, spec, e)) < 0)
        goto out;
    if (!X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : X509_get_subject_name(x)))
        goto fail;
    if ((r = set_time(X509_getm_notBefore(x), now - PKI_BACKDATE, e)) < 0 ||
        (r = set_time(X509_getm_notAfter(x), not_after, e)) < 0)
        goto out;

    if (spec->is_ca) {
        r = add_conf_ext(x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", e);
        if (r == 0)
            r = add_conf_ext(x, NID_key_usage, "critical,digitalSignature,keyCertSign,cRLSign", e);
    } else {
        r = add_conf_ext(x, NID_basic_constraints, "critical,CA:FALSE", e);
        if (r == 0)
            r = add_conf_ext(
                x, NID_key_usage,
                rsa ? "critical,digitalSignature,keyEncipherment" : "critical,digitalSignature", e);
        if (r == 0 && eku)
            r = add_conf_ext(x, NID_ext_key_usage, eku, e);
    }
    if (r == 0)
        r = add_key_ids(x, ca, e);
    if (r == 0)
        r = add_sans(x, spec, e);
    if (r < 0)
        goto out;
    if (!X509_sign(x, ca ? ca_key : key, digest_for(ca ? ca_key : key))) {
        r = pki_ossl_err(e, -EINVAL, "%s: signing", spec->common_name);
        goto out;
    }
    r = pki_ossl_cert_pem(x, ret_cert_pem, e);
    goto out;
fail:
    r = pki_ossl_err(e, r, "%s: building the certificate", spec->common_name);
out:
    X509_free(x);
    return r;
}

/* Loads the optional CA pair; both or neither must be given. */
static int load_ca(const char *ca_cert_pem, const char *ca_key_pem, X509 **ret_ca,
                   EVP_PKEY **ret_ca_key, struct err *e)
{
    int r;

    *ret_ca = NULL;
    *ret_ca_key = NULL;
    if (!ca_cert_pem && !ca_key_pem)
        return 0;
    if (!ca_cert_pem || !ca_key_pem)
        return err_set(e, -EINVAL, "a CA needs both its certificate and its key");
    r = pki_ossl_load_cert(ca_cert_pem, "CA certificate", ret_ca, e);
    if (r < 0)
        return r;
    r = pki_ossl_load_key(ca_key_pem, "CA key", ret_ca_key, e);
    if (r < 0) {
        X509_free(*ret_ca);
        *ret_ca = NULL;
    }
    return r;
}

/* Loads the CA pair (if any) and signs key with it. */
static int issue(const char *ca_cert_pem, const char *ca_key_pem, const struct pki_cert_spec *spec,
                 EVP_PKEY *key, char **ret_cert_pem, struct err *e)
{
    X509 *ca = NULL;
    EVP_PKEY *ca_key = NULL;
    int r;

    r = load_ca(ca_cert_pem, ca_key_pem, &ca, &ca_key, e);
    if (r < 0)
        return r;
    r = sign(ca, ca_key, spec, key, ret_cert_pem, e);
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    return r;
}

int pki_cert_issue_for_key(const char *ca_cert_pem, const char *ca_key_pem,
                           const struct pki_cert_spec *spec, const char *key_pem,
                           char **ret_cert_pem, struct err *e)
{
    EVP_PKEY *key = NULL;
    int r;

    r = pki_ossl_load_key(key_pem, "key", &key, e);
    if (r < 0)
        return r;
    r = issue(ca_cert_pem, ca_key_pem, spec, key, ret_cert_pem, e);
    EVP_PKEY_free(key);
    return r;
}

int pki_cert_issue(const char *ca_cert_pem, const char *ca_key_pem,
                   const struct pki_cert_spec *spec, char **ret_cert_pem, char **ret_key_pem,
                   struct err *e)
{
    EVP_PKEY *key = NULL;
    char *key_pem = NULL, *cert_pem = NULL;
    int r;

    r = pki_ossl_keygen(spec->key_alg, &key, e);
    if (r < 0)
        return r;
    r = issue(ca_cert_pem, ca_key_pem, spec, key, &cert_pem, e);
    if (r == 0)
        r = pki_ossl_key_pem(key, &key_pem, e);
    EVP_PKEY_free(key);
    if (r < 0) {
        free(cert_pem);
        return r;
    }
    *ret_cert_pem = cert_pem;
    *ret_key_pem = key_pem;
    return 0;
}
