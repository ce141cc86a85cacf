#ifndef NESTCP_PKI_SECRET_H
#define NESTCP_PKI_SECRET_H

/*
 * Secrets holding key material, as Cluster API names and shapes them (util/secret):
 * `<cluster>-ca`, `<cluster>-etcd`, `<cluster>-proxy` (CA pairs), `<cluster>-sa` (tls.crt = the
 * public key PEM, tls.key = the private key), `<cluster>-kubeconfig` (key `value`), and leaf
 * pairs `<cluster>-<purpose>`; type `cluster.x-k8s.io/secret`, label
 * `cluster.x-k8s.io/cluster-name: <cluster>`, data base64-encoded.
 *
 * Built Secrets carry no ownerReferences; the caller adds the owner it reconciles for.
 * Messages name the Secret and the key ("Secret default/foo-ca: tls.key does not match
 * tls.crt") and never its contents.
 */

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"

#define PKI_SECRET_TYPE "cluster.x-k8s.io/secret"
#define PKI_CLUSTER_NAME_LABEL "cluster.x-k8s.io/cluster-name"
#define PKI_SECRET_TLS_CRT "tls.crt"
#define PKI_SECRET_TLS_KEY "tls.key"
#define PKI_SECRET_KUBECONFIG_KEY "value"
/* The keys <cluster>-sa holds besides tls.crt and tls.key while its key rotates
 * (docs/certificates.md): the new pair before it signs, the old public key after. */
#define PKI_SECRET_SA_NEXT_PUB "next.pub"
#define PKI_SECRET_SA_NEXT_KEY "next.key"
#define PKI_SECRET_SA_PREVIOUS_PUB "previous.pub"
/* Annotations of <cluster>-sa: when its signing key, and the next one, was made (RFC 3339);
 * the rotation request that made it. Absent: the Secret's creationTimestamp. */
#define PKI_SA_KEY_CREATED_ANNOTATION "nestcp.x-k8s.io/key-created-at"
#define PKI_SA_NEXT_KEY_CREATED_ANNOTATION "nestcp.x-k8s.io/next-key-created-at"
#define PKI_SA_ROTATION_ANNOTATION "nestcp.x-k8s.io/rotation"
/* The keys a CA Secret (<cluster>-ca, -etcd, -proxy) holds besides tls.crt and tls.key while
 * its CA rotates (docs/certificates.md): the new CA before it signs (next.*), the old one
 * after (previous.*; previous.key only while serving certificates are still issued from it).
 * The rotation request that made the new CA is the annotation PKI_SA_ROTATION_ANNOTATION. */
#define PKI_SECRET_CA_NEXT_CRT "next.crt"
#define PKI_SECRET_CA_NEXT_KEY "next.key"
#define PKI_SECRET_CA_PREVIOUS_CRT "previous.crt"
#define PKI_SECRET_CA_PREVIOUS_KEY "previous.key"

/* Cluster API's purposes. */
#define PKI_PURPOSE_CA "ca"
#define PKI_PURPOSE_ETCD "etcd"
#define PKI_PURPOSE_PROXY "proxy"
#define PKI_PURPOSE_SA "sa"
#define PKI_PURPOSE_KUBECONFIG "kubeconfig"

/* Writes "<cluster>-<purpose>". Returns 0 or -EINVAL when it does not fit or exceeds the
 * 253 characters of an object name. */
int pki_secret_name(const char *cluster, const char *purpose, char *out, size_t out_size);

/* Builds a Secret `<cluster>-<purpose>` in ns with data tls.crt and tls.key (either may be
 * NULL to leave it out). Returns 0, -EINVAL, -ENOMEM. The caller frees with cJSON_Delete. */
int pki_secret_tls_new(const char *cluster, const char *ns, const char *purpose,
                       const char *cert_pem, const char *key_pem, cJSON **ret_secret,
                       struct err *e);

/* Builds the Secret `<cluster>-kubeconfig` with the kubeconfig text under `value`. */
int pki_secret_kubeconfig_new(const char *cluster, const char *ns, const char *kubeconfig,
                              cJSON **ret_secret, struct err *e);

/* Reads tls.crt and tls.key from a Secret object into PEM strings the caller frees. Either
 * out-parameter may be NULL to skip that key. Returns 0, -ENOENT (a requested key is absent),
 * -EINVAL (not base64, not text, or the object is not a Secret), -ENOBUFS (larger than
 * PKI_PEM_MAX), -ENOMEM. */
int pki_secret_read_tls(const cJSON *secret, char **ret_cert_pem, char **ret_key_pem,
                        struct err *e);

/* Reads `value` of a kubeconfig Secret (NUL-terminated; caller frees). */
int pki_secret_read_kubeconfig(const cJSON *secret, char **ret_kubeconfig, size_t *ret_len,
                               struct err *e);

/* Validates a CA Secret (generated or supplied by a user): tls.crt and tls.key present and
 * parse, the key matches the certificate, the certificate is a CA, and it is valid at now
 * (0: the wall clock). Returns 0 or the code of pki_secret_read_tls / pki_cert_check_ca, with
 * e.g. "Secret default/foo-ca: tls.crt is not a CA certificate ...". */
int pki_secret_check_ca(const cJSON *secret, int64_t now, struct err *e);

/* Validates a service-account Secret: tls.key parses and tls.crt is its public key. */
int pki_secret_check_sa(const cJSON *secret, struct err *e);

/* Reads the rotation keys of a service-account Secret, as pki_secret_read_tls reads tls.*:
 * next.pub, next.key, previous.pub. An absent key leaves its out-parameter NULL; each present
 * one is a PEM string the caller frees; nothing is parsed (pki_secret_check_sa_rotation checks
 * them). Returns 0, -EINVAL (not base64, not text, or not a Secret), -ENOBUFS, -ENOMEM. */
int pki_secret_read_sa_rotation(const cJSON *secret, char **ret_next_pub, char **ret_next_key,
                                char **ret_previous_pub, struct err *e);

/* Validates the rotation keys of a service-account Secret: next.pub and next.key both or
 * neither, the key matching; previous.pub a public key. Returns 0, -EINVAL ("Secret ns/c-sa:
 * next.key does not match next.pub", "...: next.pub is present without next.key"), -ENOBUFS,
 * -ENOMEM. */
int pki_secret_check_sa_rotation(const cJSON *secret, struct err *e);

/* The rotation keys of a CA Secret, each a PEM string or NULL when absent. */
struct pki_ca_rotation {
    char *next_crt, *next_key;         /* both or neither */
    char *previous_crt, *previous_key; /* previous.key only with previous.crt */
};

/* Reads the rotation keys of a CA Secret, as pki_secret_read_tls reads tls.*: an absent key
 * is NULL; nothing is parsed (pki_secret_check_ca_rotation checks them). Returns 0, -EINVAL
 * (not base64, not text, or not a Secret), -ENOBUFS, -ENOMEM; *ret is filled only on success
 * and freed with pki_ca_rotation_done. */
int pki_secret_read_ca_rotation(const cJSON *secret, struct pki_ca_rotation *ret, struct err *e);
void pki_ca_rotation_done(struct pki_ca_rotation *rot);

/* Validates the rotation keys of a CA Secret: next.crt/next.key a CA pair valid at now (0: the
 * wall clock), as pki_secret_check_ca checks tls.*; previous.crt a CA certificate;
 * previous.key its key. Returns 0, -EINVAL ("Secret ns/c-ca: next.key does not match
 * next.crt", "...: previous.key is present without previous.crt"), -EKEYEXPIRED, -ENOBUFS,
 * -ENOMEM. */
int pki_secret_check_ca_rotation(const cJSON *secret, int64_t now, struct err *e);

#endif
