#ifndef NESTCP_CMD_DESCRIBE_H
#define NESTCP_CMD_DESCRIBE_H

/*
 * What `nestcp describe` prints, as a pure function of the objects it read: the Cluster API
 * Cluster and NestedCluster when there are any, the NestedControlPlane, its three components,
 * their StatefulSets and Pods and the certificates each component mounts, with Ready
 * conditions, versions, the rollout target and certificate expiry. Only NotAfter dates are
 * taken from Secrets; no other Secret data reaches the output.
 */

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cmd/nestcp/tree.h"
#include "lib/render/cluster.h"
#include "lib/util/buf.h"
#include "lib/util/err.h"

/* Where a certificate expiry comes from. */
struct describe_expiry {
    const char *secret; /* the Secret's name, NULL when there is none to read */
    int code;           /* 0, or why it could not be read (message in msg) */
    char msg[256];
    int64_t not_after; /* the earliest NotAfter of its certificates */
    char key[128];     /* the key that holds that certificate */
};

struct describe_component {
    const char *ref_name; /* the name the control plane gives it, or NULL */
    cJSON *obj;           /* the component, or NULL when it does not exist */
    cJSON *statefulset;   /* the StatefulSet it controls, or NULL */
    cJSON *pods;          /* an array of that StatefulSet's Pods, or NULL */
    struct describe_expiry certs;
};

struct describe_input {
    const char *ns;
    cJSON *cluster;        /* the Cluster API Cluster, or NULL */
    cJSON *nested_cluster; /* the NestedCluster, or NULL */
    cJSON *ncp;            /* required */
    const char *cluster_name;
    struct describe_component comps[RENDER_PART__COUNT];
    struct describe_expiry kubeconfig; /* the admin kubeconfig's client certificate */
    bool show_conditions;              /* every condition as a line of its own */
    int64_t now;                       /* seconds since the epoch, for "in N days" */
};

/* The status column of a nestcp object or Cluster: its Ready condition ("Ready: True",
 * "Ready: False (Reason): message", "Ready: -" without one), then what its status says of
 * versions, replicas and the rollout. Appends to out; 0 or -ENOMEM. */
int describe_object_status(const cJSON *obj, struct buf *out);

/* "3/3 ready, 3 updated, revision <rev>" for a StatefulSet; "Ready: True, Running" for a Pod. */
int describe_statefulset_status(const cJSON *sts, struct buf *out);
int describe_pod_status(const cJSON *pod, struct buf *out);

/* "expires 2027-12-05 14:00 UTC (in 364 days; apiserver.crt)", or "expired ..." */
int describe_expiry_status(const struct describe_expiry *x, int64_t now, struct buf *out);

/* The earliest NotAfter among the certificates of a Secret: every key ending in .crt, and the
 * client certificate of every kubeconfig (keys ending in .conf, and `value`). Private keys are
 * not read. Fills x->not_after and x->key, or x->code and x->msg (-ENOENT: no certificate). */
void describe_secret_expiry(const cJSON *secret, struct describe_expiry *x);

/* Builds the tree of in. Returns 0, -ENOMEM, -E2BIG. */
int describe_build(const struct describe_input *in, struct tree *t);

#endif
