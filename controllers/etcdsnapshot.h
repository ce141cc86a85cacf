#ifndef NESTCP_CONTROLLERS_ETCDSNAPSHOT_H
#define NESTCP_CONTROLLERS_ETCDSNAPSHOT_H

/*
 * A snapshot of a tenant's etcd the user asks for (docs/upgrades.md, "Snapshots on demand"):
 * a backup before a risky change, or the data to restore elsewhere. The user annotates the
 * NestedEtcd etcd.nestcp.x-k8s.io/snapshot=<request>, any text that differs from the last
 * (e.g. a date); the etcd reconciler creates the Job of controllers/snapshot.h, controlled by
 * the NestedEtcd, that writes <name>.db to the claim of spec.snapshots, and tells its progress
 * in status.snapshot and condition SnapshotTaken. The name is what a restore
 * (controllers/etcdrestore.h) takes. A request is taken once: a failed one is retried by
 * asking again with another value.
 */

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "api/types.h"
#include "controllers/caches.h"
#include "lib/ctrl/plan.h"

#define ETCD_SNAPSHOT_ANNOTATION "etcd.nestcp.x-k8s.io/snapshot"
#define ETCD_SNAPSHOT_CONDITION "SnapshotTaken"
#define ETCD_SNAPSHOT_TAKING "Taking"
#define ETCD_SNAPSHOT_COMPLETE "Complete"
#define ETCD_SNAPSHOT_FAILED "Failed"

struct etcd_snapshot_input {
    const struct cache_view *view;
    const cJSON *etcd;        /* the NestedEtcd as cached */
    const char *ns, *cluster; /* its StatefulSet is <cluster>-etcd */
    const char *certs;        /* the etcd certs Secret the members mount */
};

struct etcd_snapshot_output {
    const char *reason; /* for the SnapshotTaken condition; NULL: leave it */
    const char *status; /* "True" or "False" */
    bool warning;
    char message[768];
};

/* The next step of the snapshot the annotation asks for; changes st (status.snapshot) and
 * plans. Returns 0 or -ENOMEM. */
int etcd_snapshot_step(const struct etcd_snapshot_input *in, struct api_component_status *st,
                       struct plan *plan, struct etcd_snapshot_output *out);

#endif
