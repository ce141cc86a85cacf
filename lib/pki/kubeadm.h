#ifndef NESTCP_PKI_KUBEADM_H
#define NESTCP_PKI_KUBEADM_H

/*
 * The kubeadm certificate set of one tenant control plane: which certificates there are, what
 * each says (pki_kubeadm_spec), which CA signs it (pki_kubeadm_signer), and a whole set
 * generated at once (struct pki_kubeadm_set) for `nestcp render` and for benchmarks.
 *
 * Controllers generate the three CAs and the service-account key once (each lands in its
 * Cluster API Secret) and issue or renew leaves one at a time:
 *
 *     struct pki_cert_spec spec;
 *     r = pki_kubeadm_spec(&cluster, PKI_KUBEADM_APISERVER, 0, &spec, e);
 *     r = pki_cert_issue(ca_crt, ca_key, &spec, &crt, &key, e);
 *     pki_cert_spec_done(&spec);
 *
 * The names, subjects and SANs are listed in docs/certificates.md.
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/util/err.h"

#define PKI_DEFAULT_SERVICE_DOMAIN "cluster.local"
#define PKI_DEFAULT_SERVICE_CIDR "10.96.0.0/12"
/* The most etcd members a cluster's certificates describe. Controllers name fewer (NestedEtcd
 * allows 7); 16 is what their shared etcd certificates named before, which they still accept. */
#define PKI_MAX_ETCD_MEMBERS 16

/* What the certificates of one tenant cluster depend on. Strings are borrowed. A field added
 * here is one pki_cluster_digest must cover. */
struct pki_cluster {
    const char *name;           /* the Cluster's name, a DNS label */
    const char *ns;             /* its namespace in the super cluster */
    const char *service_domain; /* the tenant cluster's DNS domain; NULL: "cluster.local" */
    const char *super_domain;   /* the super cluster's DNS domain (where the etcd and
                                   apiserver Services live); NULL: "cluster.local" */
    const char *const
        *service_cidrs; /* tenant Service CIDRs (one per family); none: 10.96.0.0/12 */
    size_t n_service_cidrs;
    const char *endpoint_host;     /* controlPlaneEndpoint.host (DNS name or IP); NULL: none */
    const char *const *extra_sans; /* more apiserver SANs (DNS names or IPs) */
    size_t n_extra_sans;
    int etcd_members;         /* etcd replicas, 1..PKI_MAX_ETCD_MEMBERS; 0 means 1 */
    enum pki_key_alg key_alg; /* for every key generated; default ECDSA-P256 */
    int64_t ca_validity;      /* seconds; 0: 10 years */
    int64_t leaf_validity;    /* seconds; 0: 1 year */
    int64_t now;              /* seconds since the epoch; 0: the wall clock */
};

enum pki_kubeadm_cert {
    PKI_KUBEADM_CA = 0,         /* CN kubernetes */
    PKI_KUBEADM_ETCD_CA,        /* CN etcd-ca */
    PKI_KUBEADM_FRONT_PROXY_CA, /* CN front-proxy-ca */
    PKI_KUBEADM_APISERVER,      /* serving cert of kube-apiserver */
    PKI_KUBEADM_APISERVER_KUBELET_CLIENT,
    PKI_KUBEADM_APISERVER_ETCD_CLIENT,
    PKI_KUBEADM_FRONT_PROXY_CLIENT,
    PKI_KUBEADM_ETCD_SERVER, /* per member */
    PKI_KUBEADM_ETCD_PEER,   /* per member */
    PKI_KUBEADM_ETCD_HEALTHCHECK_CLIENT,
    PKI_KUBEADM_CONTROLLER_MANAGER, /* client cert of the controller-manager kubeconfig */
    PKI_KUBEADM_ADMIN,              /* client cert of the <cluster>-kubeconfig */
    PKI_KUBEADM__COUNT
};

/* kubeadm's file name of each certificate ("ca", "etcd/ca", "front-proxy-ca", "apiserver",
 * "apiserver-kubelet-client", "apiserver-etcd-client", "front-proxy-client", "etcd/server",
 * "etcd/peer", "etcd/healthcheck-client", "controller-manager", "admin"). */
const char *pki_kubeadm_name(enum pki_kubeadm_cert which);

/* The Cluster API Secret purpose of each certificate, so its Secret is `<cluster>-<purpose>`:
 * "ca", "etcd", "proxy" for the CAs (Cluster API's names), and for leaves "apiserver",
 * "apiserver-kubelet-client", "apiserver-etcd-client", "front-proxy-client", "etcd-server",
 * "etcd-peer", "etcd-healthcheck-client", "controller-manager", "admin". */
const char *pki_kubeadm_purpose(enum pki_kubeadm_cert which);

/* The CA that signs a certificate (a CA signs itself). */
enum pki_kubeadm_cert pki_kubeadm_signer(enum pki_kubeadm_cert which);

/* Checks a cluster's parameters (names are DNS labels, CIDRs parse and have room for a first
 * address, extra SANs are DNS names or IPs, member count in range). Returns 0 or -EINVAL
 * with the field in e. */
int pki_cluster_validate(const struct pki_cluster *cluster, struct err *e);

/* Fills *ret_spec (pki_cert_spec_done frees it) with the spec of one certificate. For
 * PKI_KUBEADM_ETCD_SERVER/PEER, member is the member index; member -1 gives one certificate
 * valid for every member (a StatefulSet whose pods share one Secret). Other certificates
 * ignore member. Returns 0, -EINVAL (bad parameters or member index), -ENOMEM. What it reads
 * from cluster, pki_cluster_digest covers. */
int pki_kubeadm_spec(const struct pki_cluster *cluster, enum pki_kubeadm_cert which, int member,
                     struct pki_cert_spec *ret_spec, struct err *e);

#define PKI_CLUSTER_DIGEST_MAX 65 /* 64 hex digits and a NUL */

/* The SHA-256, in hex, of everything pki_kubeadm_spec reads from cluster but the clock (now),
 * led by a tag that changes whenever what a spec holds does: two clusters with the same digest
 * give the same spec of each certificate (or the same error), apart from when it starts. A
 * caller can so recognise a certificate checked before without building its spec again.
 * Returns 0 or -ENOMEM. */
int pki_cluster_digest(const struct pki_cluster *cluster,
                       char ret_digest[static PKI_CLUSTER_DIGEST_MAX]);

/* A PEM pair. For the service-account key, cert_pem is the public key PEM. */
struct pki_pem_pair {
    char *cert_pem;
    char *key_pem;
};

/* Every certificate and key of one cluster. pairs[] holds one per enum value except the etcd
 * server and peer certificates, which are per member in etcd_server[] / etcd_peer[]. */
struct pki_kubeadm_set {
    struct pki_pem_pair pairs[PKI_KUBEADM__COUNT];
    struct pki_pem_pair sa; /* service-account signing key */
    struct pki_pem_pair *etcd_server;
    struct pki_pem_pair *etcd_peer;
    int etcd_members;
};

/* An empty set for etcd_members members (1..PKI_MAX_ETCD_MEMBERS). Returns 0, -EINVAL,
 * -ENOMEM. pki_kubeadm_set_free accepts NULL and wipes key material before freeing. */
int pki_kubeadm_set_new(int etcd_members, struct pki_kubeadm_set **ret_set);
void pki_kubeadm_set_free(struct pki_kubeadm_set *set);
void pki_pem_pair_done(struct pki_pem_pair *pair);

/* Generates every piece of the set that is still missing (a NULL cert_pem), signing leaves
 * with the CAs already in the set, so callers may place user-supplied CAs first. On failure
 * the pieces generated so far stay in the set. Returns 0, -EINVAL, -ENOMEM. */
int pki_kubeadm_set_fill(const struct pki_cluster *cluster, struct pki_kubeadm_set *set,
                         struct err *e);

#endif
