/* Which changes of a running etcd keep its data (controllers/etcdsafety.h). */

#include "controllers/etcdsafety.h"

#include <stdio.h>
#include <string.h>

static void why_not_persistent(const struct etcd_safety_input *in, char *out, size_t size)
{
    char expire[96] = "";
    int n;

    if (in->certs_expire)
        snprintf(expire, sizeof(expire),
                 "; its certificates expire on %s and renewing them is a roll, so renew "
                 "before then",
                 in->certs_expire);
    if (in->live_replicas > 1) {
        snprintf(out, size,
                 "etcd StatefulSet %s keeps the tenant's data in emptyDir volumes%s: a replaced "
                 "member starts empty and is removed and added again through etcd's API, one "
                 "at a time, copying the whole data set from the others; a 1-member etcd on "
                 "emptyDir cannot be rolled at all. Use persistentVolumeClaim storage for new "
                 "control planes",
                 in->name,
                 in->storage_kept ? " (spec.storage is unset and the StatefulSet was made "
                                    "before persistentVolumeClaim became the default)"
                                  : "");
        return;
    }
    n = snprintf(out, size,
                 "etcd StatefulSet %s keeps the tenant's data in emptyDir volumes%s: its only "
                 "member would start empty if its pod were replaced, so nestcp does not roll "
                 "it (version, flag and certificate changes wait)%s. Scale it to 3 members "
                 "(spec.replicas), which then roll one at a time with their data copied from "
                 "the others, or move the data to persistentVolumeClaim storage by recreating "
                 "the control plane from a backup (etcdctl snapshot save)",
                 in->name,
                 in->storage_kept ? " (spec.storage is unset and the StatefulSet was made "
                                    "before persistentVolumeClaim became the default)"
                                  : "",
                 expire);
    if (n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n,
                 ", or annotate the NestedEtcd %s=true to roll it anyway and lose every key",
                 ETCD_SAFETY_ACCEPT_DATA_LOSS);
}

void etcd_safety_check(const struct etcd_safety_input *in, struct etcd_safety *out)
{
    bool want_claims = in->storage == API_STORAGE_PVC;

    memset(out, 0, sizeof(*out));
    if (!in->exists) {
        out->not_persistent = !want_claims;
        if (out->not_persistent)
            snprintf(out->message, sizeof(out->message),
                     "etcd keeps the tenant's data in emptyDir volumes: it is lost when a "
                     "member pod is replaced, and nestcp will not roll it");
        return;
    }
    out->not_persistent = !in->live_claims;
    if (want_claims && !in->live_claims && in->live_replicas >= 3 &&
        in->replicas == in->live_replicas) {
        out->moving_to_claims = true;
        snprintf(out->message, sizeof(out->message),
                 "etcd StatefulSet %s moves its members from emptyDir to claims of their own, one "
                 "at a time: each is removed, started on a new claim and added again from the "
                 "others",
                 in->name);
        return;
    }
    if (want_claims != in->live_claims) {
        out->refusal = "EtcdStorageChangeRefused";
        if (want_claims && in->replicas != in->live_replicas)
            snprintf(out->message, sizeof(out->message),
                     "NestedEtcd spec.storage: emptyDir -> persistentVolumeClaim is refused "
                     "while spec.replicas changes (%d -> %d): change one, then the other",
                     in->live_replicas, in->replicas);
        else if (want_claims)
            snprintf(out->message, sizeof(out->message),
                     "NestedEtcd spec.storage: emptyDir -> persistentVolumeClaim is refused for "
                     "%d member: its only member would start empty on its claim. Scale it to 3 "
                     "members first (spec.replicas); its members then move to claims one at a "
                     "time, copying the data from the others",
                     in->live_replicas);
        else
            snprintf(out->message, sizeof(out->message),
                     "NestedEtcd spec.storage: persistentVolumeClaim -> emptyDir is refused: the "
                     "StatefulSet %s's volume claims cannot change in place, and moving members "
                     "off their claims is not supported; set spec.storage back to "
                     "persistentVolumeClaim",
                     in->name);
        return;
    }
    if (out->not_persistent) {
        why_not_persistent(in, out->message, sizeof(out->message));
        /* Several members are replaced one at a time and added again from the others; the
         * only member cannot be. */
        if (in->changes && in->live_replicas == 1 && !in->accept_data_loss)
            out->refusal = "DataNotPersistent";
    }
}
