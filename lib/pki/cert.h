#ifndef NESTCP_PKI_CERT_H
#define NESTCP_PKI_CERT_H

/*
 * X.509 certificates as PEM text: describe one with a `struct pki_cert_spec`, issue it from a
 * CA (or self-sign a CA), read one back into a `struct pki_cert_info`, and check a CA pair or
 * an existing leaf against the spec it should satisfy.
 *
 * What is issued (see docs/certificates.md):
 * - version 3, a random positive serial of 127 bits, NotBefore = now - 5 min;
 * - CA: basicConstraints critical CA:TRUE pathlen:0, keyUsage critical keyCertSign, cRLSign,
 *   digitalSignature; default validity 10 years (3650 days);
 * - leaf: basicConstraints critical CA:FALSE, keyUsage critical digitalSignature (+
 *   keyEncipherment for RSA keys), extendedKeyUsage from the spec; default validity 365 days,
 *   never past the CA's NotAfter;
 * - subjectKeyIdentifier (SHA-1 of the public key), authorityKeyIdentifier on leaves;
 * - subject O=... (in spec order) then CN; SANs DNS names then IPs, each in spec order;
 * - signed with SHA-256, or SHA-384 when the signing key is ECDSA P-384.
 * Given the same spec and CA, everything but the serial, keys and signature is identical.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/pki/key.h"
#include "lib/util/err.h"

#define PKI_CA_VALIDITY_DEFAULT ((int64_t)3650 * 24 * 3600)
#define PKI_LEAF_VALIDITY_DEFAULT ((int64_t)365 * 24 * 3600)
#define PKI_BACKDATE ((int64_t)5 * 60)
/* At most this many organisations, DNS names or IPs in one spec. */
#define PKI_SPEC_MAX_NAMES 256
/* X.509's upper bound for a commonName. */
#define PKI_CN_MAX 64

/* extendedKeyUsage bits. */
enum pki_ext_usage {
    PKI_EKU_SERVER_AUTH = 1u << 0,
    PKI_EKU_CLIENT_AUTH = 1u << 1,
};

/* keyUsage bits (as read back). */
enum pki_key_usage {
    PKI_KU_DIGITAL_SIGNATURE = 1u << 0,
    PKI_KU_KEY_ENCIPHERMENT = 1u << 1,
    PKI_KU_CERT_SIGN = 1u << 2,
    PKI_KU_CRL_SIGN = 1u << 3,
};

/* An owned list of strings. */
struct pki_strv {
    char **v;
    size_t n;
};

struct pki_cert_spec {
    char *common_name;         /* required, 1..64 bytes */
    struct pki_strv orgs;      /* subject O, in order */
    struct pki_strv dns_names; /* lower-cased, without duplicates */
    struct pki_strv ips;       /* canonical text (inet_ntop), without duplicates */
    unsigned ext_usage;        /* enum pki_ext_usage bits; ignored for CAs */
    bool is_ca;
    enum pki_key_alg key_alg; /* of the key pki_cert_issue generates; default ECDSA-P256 */
    int64_t validity;         /* seconds; 0: the default for a CA or a leaf */
    int64_t now;              /* seconds since the epoch; 0: the wall clock */
};

/* An empty spec (ECDSA-P256, leaf, default validity). pki_cert_spec_done frees it. */
void pki_cert_spec_init(struct pki_cert_spec *spec);
void pki_cert_spec_done(struct pki_cert_spec *spec);

/* Setters that copy their argument. Return 0, -EINVAL (empty, too long, or a character that
 * has no place in a DNS name; message in e), -E2BIG (more than PKI_SPEC_MAX_NAMES), -ENOMEM.
 * pki_cert_spec_add_san files s as an IP address when it parses as one, else as a DNS name;
 * a name already present is skipped. */
int pki_cert_spec_set_cn(struct pki_cert_spec *spec, const char *cn, struct err *e);
int pki_cert_spec_add_org(struct pki_cert_spec *spec, const char *org, struct err *e);
int pki_cert_spec_add_dns(struct pki_cert_spec *spec, const char *name, struct err *e);
int pki_cert_spec_add_ip(struct pki_cert_spec *spec, const char *ip, struct err *e);
int pki_cert_spec_add_san(struct pki_cert_spec *spec, const char *s, struct err *e);

/* Generates a key of spec->key_alg and a certificate for it. With ca_cert_pem and ca_key_pem
 * both NULL the certificate is self-signed and spec->is_ca must be set; otherwise the CA pair
 * signs it and must be a CA whose key matches. Results are PEM strings the caller frees.
 * Returns 0, -EINVAL (bad spec or CA; message names it), -EKEYREJECTED (CA key does not match
 * the CA certificate), -ENOMEM. */
int pki_cert_issue(const char *ca_cert_pem, const char *ca_key_pem,
                   const struct pki_cert_spec *spec, char **ret_cert_pem, char **ret_key_pem,
                   struct err *e);

/* Like pki_cert_issue but certifies an existing key (spec->key_alg is ignored). */
int pki_cert_issue_for_key(const char *ca_cert_pem, const char *ca_key_pem,
                           const struct pki_cert_spec *spec, const char *key_pem,
                           char **ret_cert_pem, struct err *e);

/* What a certificate says. */
struct pki_cert_info {
    char *common_name; /* "" when the subject has none */
    char *issuer_common_name;
    struct pki_strv orgs;
    struct pki_strv dns_names;
    struct pki_strv ips;
    bool is_ca;         /* basicConstraints CA:TRUE */
    unsigned key_usage; /* enum pki_key_usage bits; 0 when the extension is absent */
    unsigned ext_usage; /* enum pki_ext_usage bits; 0 when the extension is absent */
    int64_t not_before; /* seconds since the epoch */
    int64_t not_after;
    bool key_alg_known; /* false for keys outside enum pki_key_alg */
    enum pki_key_alg key_alg;
    char serial[64]; /* upper-case hex, no leading zeros */
};

/* Reads the first certificate of pem. *ret_info is freed with pki_cert_info_free.
 * Returns 0, -EINVAL (no certificate; message names `what`, NULL: "certificate"), -ENOMEM. */
int pki_cert_info_read(const char *pem, const char *what, struct pki_cert_info **ret_info,
                       struct err *e);
void pki_cert_info_free(struct pki_cert_info *info);

/* The earliest NotAfter (seconds since the epoch) among the certificates ("CERTIFICATE"
 * blocks) of pem, read from the DER without decoding names, extensions or the public key:
 * cheap enough to watch every certificate of every cluster. Other blocks are skipped.
 * Returns 0, -EINVAL (no certificate, or a damaged one; message names `what`, NULL:
 * "certificate"), -ENOBUFS (larger than PKI_PEM_MAX), -ENOMEM. */
int pki_cert_not_after(const char *pem, const char *what, int64_t *ret_not_after, struct err *e);

/* Validates a CA pair as supplied by a user: both parse, the key matches the certificate, the
 * certificate is a CA that may sign certificates, and now (0: the wall clock) lies within its
 * validity. Messages name the inputs as cert_what/key_what (NULL: "tls.crt"/"tls.key"), e.g.
 * "tls.key does not match tls.crt". Returns 0, -EINVAL, -EKEYREJECTED (mismatch),
 * -EKEYEXPIRED (expired or not yet valid). */
int pki_cert_check_ca(const char *cert_pem, const char *key_pem, int64_t now, const char *cert_what,
                      const char *key_what, struct err *e);

/* Decides whether an issued leaf is still the one spec describes: signed by ca_cert_pem, with
 * the same CN, organisations, SAN sets, CA flag and extended usages, and more than
 * renew_before seconds of validity left at now (0: the wall clock). Returns 0 when it can be
 * kept, -ESTALE when it should be reissued (the reason is in e), -EINVAL when a PEM does not
 * parse. */
int pki_cert_check_leaf(const char *cert_pem, const char *ca_cert_pem,
                        const struct pki_cert_spec *spec, int64_t now, int64_t renew_before,
                        struct err *e);

#endif
