#ifndef NESTCP_NODEAGENT_NODEAGENT_H
#define NESTCP_NODEAGENT_NODEAGENT_H

/*
 * The Kubernetes side of the node agent: what the scheduler and the kubelet would do for one
 * node of the local super cluster.
 *
 *   - registers a Node (Ready, 127.0.0.1, plenty of capacity) and heartbeats it every
 *     `heartbeat` seconds (node status and a Lease in kube-node-lease);
 *   - binds Pending, unscheduled pods (those matching one of `selectors`, or all) to that Node
 * through pods/binding;
 *   - runs the pods bound to the Node with the local runtime (runtime.h), with Secrets,
 *     ConfigMaps, PersistentVolumeClaims, PersistentVolumes and Services from informers; a
 *     pod's containers start once every claim it mounts is Bound, on the PersistentVolume's
 *     hostPath or local path;
 *   - writes each pod's status (merge patch of pods/status) when it changed;
 *   - finishes deletions as the kubelet does: stop gracefully, then delete with
 *     gracePeriodSeconds 0.
 *
 * Everything runs on the loop. Logs go through lib/util/log.h.
 */

#include "lib/kube/client.h"
#include "lib/util/err.h"
#include "test/nodeagent/runtime.h"

struct ev_loop;
struct nodeagent;

struct nodeagent_opts {
    const char *node_name; /* NULL: "nestcp-node" */
    /* Label selectors of the pods to bind: a pod matching any of them (NULL-terminated; NULL
     * or empty: every pod). */
    const char *const *selectors;
    const char *namespace_; /* bind only pods of this namespace; NULL: any */
    double heartbeat;       /* seconds; 0: 10 */
    /* state_dir, images, pod_net, backoff, cluster_domain; the callbacks, resolve and
     * node_name are the agent's own. */
    struct runtime_opts runtime;
};

/* Creates the agent on loop with a client for cfg (borrowed). Returns 0, -EINVAL (detail in e),
 * -ENOMEM, or an error creating the state directory. */
int nodeagent_new(struct ev_loop *loop, const struct kube_config *cfg,
                  const struct nodeagent_opts *opts, struct nodeagent **ret_agent, struct err *e);

/* Starts the informers; the Node is registered and pods are bound and run once the Secret,
 * ConfigMap, PersistentVolumeClaim, PersistentVolume and Service caches have synced.
 * Returns 0 or a negative code. */
int nodeagent_start(struct nodeagent *na);

/* Stops binding, stops every pod (SIGTERM, SIGKILL after at most max_grace seconds), writes
 * their final status and marks the Node not ready (giving up on the API server after a few
 * seconds), then calls done from the loop. */
void nodeagent_shutdown(struct nodeagent *na, double max_grace, void (*done)(void *userdata),
                        void *userdata);

/* Frees the agent, killing any process still running. Accepts NULL. */
void nodeagent_free(struct nodeagent *na);

#endif
