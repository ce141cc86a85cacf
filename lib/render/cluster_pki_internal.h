#ifndef NESTCP_RENDER_CLUSTER_PKI_INTERNAL_H
#define NESTCP_RENDER_CLUSTER_PKI_INTERNAL_H

/* What lib/render/cluster_pki.c (the CAs, the check memo, issuing) shares with
 * lib/render/cluster_certs.c (the components' certs Secrets and the admin kubeconfig). Not
 * part of the render API. */

#include <stdbool.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "lib/pki/cert.h"
#include "lib/pki/kubeadm.h"
#include "lib/pki/secret.h"
#include "lib/render/cluster.h"

enum ca_index { CA_CLUSTER = 0, CA_ETCD, CA_PROXY, CA_SA, CA__COUNT };
_Static_assert((int)API_CA_CLUSTER == CA_CLUSTER && (int)API_CA_ETCD == CA_ETCD &&
                   (int)API_CA_FRONT_PROXY == CA_PROXY && (int)API_CA__COUNT == CA_SA,
               "enum api_ca lists the CAs in the order of enum ca_index");

struct render_cluster_pki {
    const struct render_cluster *rc;
    struct pki_pem_pair ca[CA__COUNT]; /* CA_SA: cert_pem is the public key */
    /* <c>-sa while its key rotates: the new pair before it signs, the old public key after. */
    char *sa_next_pub, *sa_next_key, *sa_previous_pub;
    /* The other CAs while they rotate (docs/certificates.md). */
    struct pki_ca_rotation rot[CA_SA];
    /* What each CA's certificates are verified with (ca.crt, sa.pub, a kubeconfig's
     * certificate-authority-data): the signing CA or key first, then the next or the
     * previous one during a rotation. */
    char *trust[CA__COUNT];
    cJSON *created;
    int64_t now, renew_before;
    struct pki_cluster pc;
    /* pki_cluster_digest of pc, taken once: a leaf's check digest covers it in place of the
     * spec built from pc. "" when it could not be taken (no leaf check is remembered). */
    char pc_digest[PKI_CLUSTER_DIGEST_MAX];
};

/* Frees key material after wiping it; NULL is ignored. */
void render_pki_free_text(char *s);

/* The CA pair a leaf is issued from, and checked against. */
struct pki_pem_pair render_pki_signer_of(const struct render_cluster_pki *pki,
                                         enum pki_kubeadm_cert which);

/* pki_cert_issue with a key from the key source. */
int render_pki_issue_cert(const struct render_cluster_pki *pki, const char *ca_cert_pem,
                          const char *ca_key_pem, const struct pki_cert_spec *spec,
                          char **ret_cert_pem, char **ret_key_pem, struct err *e);

/* The check memo: a digest of everything a check reads; a check whose digest passed before
 * is not run again (render_cluster_set_check_memo). */
struct digest {
    EVP_MD_CTX *ctx;
    bool ok;
};

bool render_digest_begin(const struct render_cluster *rc, struct digest *d, const char *tag);
/* render_digest_begin, then the renewal window. */
bool render_pki_digest_begin(const struct render_cluster_pki *pki, struct digest *d,
                             const char *tag);
void render_pki_digest_str(struct digest *d, const char *s);
void render_pki_digest_int(struct digest *d, long long v);
void render_pki_digest_strv(struct digest *d, const struct pki_strv *v);
void render_pki_digest_end(struct digest *d, char out[RENDER_CLUSTER_HASH_MAX]);
bool render_pki_memo_passed(const struct render_cluster_pki *pki, const char *digest,
                            int64_t *ret_due);
void render_pki_memo_remember(const struct render_cluster_pki *pki, const char *digest,
                              int64_t due);
/* Keeps the earlier of *at and t (*at 0: none yet; t 0: nothing); at may be NULL. */
void render_pki_keep_earlier(int64_t *at, int64_t t);

#endif
