#ifndef NESTCP_NODEAGENT_PODSEC_H
#define NESTCP_NODEAGENT_PODSEC_H

/*
 * What a container's securityContext asks of the process that runs it, as the kubelet and the
 * container runtime apply it: the pod's securityContext with the container's on top.
 *
 *   runAsUser, runAsGroup     the process's uid and gid (runAsGroup unset: gid 0, as a runtime
 *                             gives a numeric user the image has no entry for)
 *   fsGroup, supplementalGroups  its supplementary groups
 *   runAsNonRoot              refused (CreateContainerConfigError) when the uid would be 0;
 *                             an unset runAsUser runs as root here, the "image's" user
 *   allowPrivilegeEscalation  false: no_new_privs
 *   capabilities              drop (ALL or names) and add: the bounding set, and for uid 0 the
 *                             effective and permitted sets; nothing given keeps every capability
 *   readOnlyRootFilesystem    the container's root mount read-only (its volumes stay as mounted)
 *
 * Not applied: seccompProfile, appArmorProfile, seLinuxOptions, procMount, sysctls (the API
 * server's Pod Security admission checks what a pod asks for; this agent runs no runtime).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"

#define PODSEC_MAX_GROUPS 32

struct podsec {
    bool set_ids; /* runAsUser or runAsGroup given: change to uid/gid and groups */
    uid_t uid;
    gid_t gid;
    gid_t groups[PODSEC_MAX_GROUPS]; /* supplementary groups: fsGroup, supplementalGroups */
    size_t ngroups;
    bool no_new_privs;
    bool readonly_root;
    bool limit_caps; /* capabilities.drop or .add given */
    uint64_t caps;   /* with limit_caps: the capabilities kept (bit n = capability n) */
};

/* The effective security settings of container (an element of pod.spec.containers) in pod.
 * Returns 0, or -EINVAL with e naming the field (runAsNonRoot with a root user, an unknown
 * capability, a uid or gid out of range, too many groups). */
int podsec_resolve(const cJSON *pod, const cJSON *container, struct podsec *ret_sec, struct err *e);

/* The capability named name ("NET_ADMIN" or "CAP_NET_ADMIN", any case), or -EINVAL. */
int podsec_capability(const char *name);

/* The pod's spec.securityContext.fsGroup, or -1 when unset; *ret_on_root_mismatch says whether
 * fsGroupChangePolicy is OnRootMismatch (may be NULL). */
long podsec_fs_group(const cJSON *pod, bool *ret_on_root_mismatch);

#endif
