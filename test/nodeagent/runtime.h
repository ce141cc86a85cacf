#ifndef NESTCP_NODEAGENT_RUNTIME_H
#define NESTCP_NODEAGENT_RUNTIME_H

/*
 * The local runtime: runs Pods (cJSON objects as the API server returns them) as host
 * processes on one libev loop (the default loop: child watchers need it).
 *
 * Per pod: a loopback pod IP 127.<net>.<n>.<m> (never in 127.0.0.0/24), a directory
 * <state>/pods/<ns>_<pod> holding its volumes, its /etc/hosts and one <container>.log per
 * container, and per container a process in its own mount namespace (see proc.h, podvol.h,
 * hosts.h). Containers restart as restartPolicy says, with the kubelet's exponential back-off;
 * probes run as probe.h describes; a stop sends SIGTERM to each container's process group and
 * SIGKILL once the grace period has passed.
 *
 * Nothing here talks to an API server: the owner feeds pods and Services in, answers Secret,
 * ConfigMap, PersistentVolumeClaim and PersistentVolume look-ups, and is told when a pod's
 * status may have changed or a stop has finished. A pod whose claims are not all bound waits
 * (podvol_claims_resolve) until runtime_refresh_volumes finds them bound.
 * Callbacks run from the loop, never from inside a runtime_* call, and may call back into the
 * runtime (also runtime_pod_remove for the pod they are about).
 */

#include <stdbool.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"
#include "test/nodeagent/imagemap.h"
#include "test/nodeagent/podobj.h"

struct ev_loop;
struct runtime;

struct runtime_callbacks {
    /* The pod's status (runtime_pod_status) may differ from what it was. */
    void (*pod_changed)(void *userdata, const char *namespace_, const char *name);
    /* A stop begun by runtime_pod_stop or runtime_stop_all has finished: no process of the
     * pod is left. */
    void (*pod_stopped)(void *userdata, const char *namespace_, const char *name);
    /* Something a person may want in a log: reason is a kubelet event reason ("Started",
     * "BackOff", "Killing", "Unhealthy", "Failed"), message says what and why. May be NULL. */
    void (*event)(void *userdata, const char *namespace_, const char *name, const char *container,
                  const char *reason, const char *message);
};

struct runtime_opts {
    const char *state_dir;         /* required; created if missing */
    const struct imagemap *images; /* required, borrowed */
    const char *node_name;         /* spec.nodeName for the downward API; NULL: "nestcp-node" */
    const char *host_ip;           /* NULL: "127.0.0.1" */
    const char *cluster_domain;    /* NULL: "cluster.local" */
    const char *api_host;          /* KUBERNETES_SERVICE_HOST of every container; NULL: unset */
    const char *api_port;          /* KUBERNETES_SERVICE_PORT; with api_host */
    unsigned pod_net;              /* pod IPs are 127.<pod_net>.<n>.<m>, n in 1..254 */
    double backoff_base;           /* first restart delay in seconds; 0: 10 */
    double backoff_max;            /* longest restart delay; 0: 300 */
    podobj_resolve_fn resolve;     /* Secrets, ConfigMaps, claims, volumes; NULL: none */
    struct runtime_callbacks cb;
    void *userdata;
};

/* Returns 0, -EINVAL (missing state_dir or images, pod_net > 255), an errno creating the
 * state directory, -ENOMEM. */
int runtime_new(struct ev_loop *loop, const struct runtime_opts *opts, struct runtime **ret_rt,
                struct err *e);

/* Kills every process still running (SIGKILL to each process group, then waits for them) and
 * frees the runtime. Use runtime_stop_all first for a graceful stop. Accepts NULL. */
void runtime_free(struct runtime *rt);

/* Runs pod, or takes in a newer version of a pod it runs (same uid: labels and readiness
 * gates change; container specs are kept from the first version, as they are immutable).
 * Problems with the pod's containers (no local binary, missing Secret) do not fail the call:
 * they show in the pod's status. Returns 0, -EBUSY (a pod of that name with another uid is
 * still known: remove it first), -EINVAL (no name, namespace or containers), -ENOSPC (no pod
 * IP left), -ENOMEM. */
int runtime_pod_apply(struct runtime *rt, const cJSON *pod, struct err *e);

/* Begins stopping the pod: no more restarts; SIGTERM now, SIGKILL after grace seconds
 * (grace < 0: the pod's terminationGracePeriodSeconds, default 30). pod_stopped follows, also
 * when nothing was running. Returns 0 or -ENOENT. */
int runtime_pod_stop(struct runtime *rt, const char *namespace_, const char *name, double grace);

/* Forgets the pod (killing what is left, if anything) and deletes its volumes and hosts file;
 * container logs and the directories of its claims' PersistentVolumes stay. Returns 0 or
 * -ENOENT. */
int runtime_pod_remove(struct runtime *rt, const char *namespace_, const char *name);

/* Whether a stop of the pod has finished (no process left). */
bool runtime_pod_stopped(const struct runtime *rt, const char *namespace_, const char *name);

/* Whether the runtime knows the pod, and its uid (borrowed), or NULL. */
const char *runtime_pod_uid(const struct runtime *rt, const char *namespace_, const char *name);

/* The pod's status as the kubelet reports it (phase, hostIP, podIP(s), startTime, conditions,
 * containerStatuses), a new object (caller frees), or NULL when unknown or out of memory. */
cJSON *runtime_pod_status(const struct runtime *rt, const char *namespace_, const char *name);

/* The pid of a container's running process, or -ENOENT. */
int runtime_container_pid(const struct runtime *rt, const char *namespace_, const char *name,
                          const char *container, pid_t *ret_pid);

/* The pod's directory (<state>/pods/<ns>_<pod>), borrowed, or NULL. */
const char *runtime_pod_dir(const struct runtime *rt, const char *namespace_, const char *name);

/* Replaces the Services names resolve through (an array of Service objects; copied; NULL for
 * none) and rewrites hosts files that change. Returns 0 or -ENOMEM. */
int runtime_set_services(struct runtime *rt, const cJSON *services);

/* Re-reads every pod's Secrets and ConfigMaps (after one changed): rewrites volume files, and
 * starts the containers of pods that waited for a missing one or for a claim to be bound. */
void runtime_refresh_volumes(struct runtime *rt);

/* Stops every pod (grace as in runtime_pod_stop with grace < 0, at most max_grace seconds);
 * done runs from the loop once no process is left. */
void runtime_stop_all(struct runtime *rt, double max_grace, void (*done)(void *userdata),
                      void *userdata);

/* Number of processes (containers) running now. */
unsigned runtime_running(const struct runtime *rt);

#endif
