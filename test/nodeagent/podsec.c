#include "test/nodeagent/podsec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "test/nodeagent/podobj.h"

/* Capability names in the order of their numbers (linux/capability.h). */
static const char *const cap_names[] = {
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
};
#define CAP_COUNT ((int)(sizeof(cap_names) / sizeof(*cap_names)))

int podsec_capability(const char *name)
{
    if (!name)
        return -EINVAL;
    if (strncasecmp(name, "CAP_", 4) == 0)
        name += 4;
    for (int i = 0; i < CAP_COUNT; i++)
        if (strcasecmp(name, cap_names[i]) == 0)
            return i;
    return -EINVAL;
}

/* An id field of the container's securityContext, else the pod's; -1 when neither sets it. */
static int id_field(const cJSON *psc, const cJSON *csc, const char *field, long long *ret,
                    struct err *e)
{
    const cJSON *v = podobj_get(csc, field, NULL);

    if (!v)
        v = podobj_get(psc, field, NULL);
    if (!v) {
        *ret = -1;
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 2147483647.0)
        return err_set(e, -EINVAL, "securityContext.%s: not a valid id", field);
    *ret = (long long)v->valuedouble;
    return 0;
}

static int caps_apply(const cJSON *list, const char *field, uint64_t *caps, bool add, struct err *e)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, list) {
        int n;

        if (cJSON_IsString(c) && strcasecmp(c->valuestring, "ALL") == 0) {
            *caps = add ? (UINT64_C(1) << CAP_COUNT) - 1 : 0;
            continue;
        }
        n = podsec_capability(cJSON_IsString(c) ? c->valuestring : NULL);
        if (n < 0)
            return err_set(e, -EINVAL, "securityContext.capabilities.%s: unknown capability %s",
                           field, cJSON_IsString(c) ? c->valuestring : "(not a string)");
        if (add)
            *caps |= UINT64_C(1) << n;
        else
            *caps &= ~(UINT64_C(1) << n);
    }
    return 0;
}

long podsec_fs_group(const cJSON *pod, bool *ret_on_root_mismatch)
{
    const cJSON *psc = podobj_get(pod, "spec", "securityContext", NULL);
    const cJSON *g = podobj_get(psc, "fsGroup", NULL);
    const char *policy = podobj_str(psc, "fsGroupChangePolicy", NULL);

    if (ret_on_root_mismatch)
        *ret_on_root_mismatch = policy && strcmp(policy, "OnRootMismatch") == 0;
    if (!cJSON_IsNumber(g) || g->valuedouble < 0 || g->valuedouble > 2147483647.0)
        return -1;
    return (long)g->valuedouble;
}

int podsec_resolve(const cJSON *pod, const cJSON *container, struct podsec *ret_sec, struct err *e)
{
    const cJSON *psc = podobj_get(pod, "spec", "securityContext", NULL);
    const cJSON *csc = podobj_get(container, "securityContext", NULL);
    const cJSON *caps = podobj_get(csc, "capabilities", NULL), *nonroot, *g;
    struct podsec s = {0};
    long long uid = -1, gid = -1; /* written by id_field on success */
    long fs_group = podsec_fs_group(pod, NULL);
    int r;

    if ((r = id_field(psc, csc, "runAsUser", &uid, e)) < 0 ||
        (r = id_field(psc, csc, "runAsGroup", &gid, e)) < 0)
        return r;
    nonroot = podobj_get(csc, "runAsNonRoot", NULL);
    if (!nonroot)
        nonroot = podobj_get(psc, "runAsNonRoot", NULL);
    if (cJSON_IsTrue(nonroot) && uid <= 0)
        return err_set(e, -EINVAL, "container has runAsNonRoot and %s",
                       uid == 0 ? "runAsUser is 0"
                                : "image will run as root (no runAsUser: this node runs images as "
                                  "root)");
    s.set_ids = uid >= 0 || gid >= 0;
    s.uid = uid > 0 ? (uid_t)uid : 0;
    s.gid = gid > 0 ? (gid_t)gid : 0;
    if (fs_group >= 0)
        s.groups[s.ngroups++] = (gid_t)fs_group;
    cJSON_ArrayForEach(g, podobj_get(psc, "supplementalGroups", NULL)) {
        if (!cJSON_IsNumber(g) || g->valuedouble < 0 || g->valuedouble > 2147483647.0)
            return err_set(e, -EINVAL, "securityContext.supplementalGroups: not a valid id");
        if (s.ngroups == PODSEC_MAX_GROUPS)
            return err_set(e, -EINVAL, "securityContext.supplementalGroups: more than %d groups",
                           PODSEC_MAX_GROUPS);
        s.groups[s.ngroups++] = (gid_t)g->valuedouble;
    }
    if (s.ngroups > 0)
        s.set_ids = true;
    s.no_new_privs = cJSON_IsFalse(podobj_get(csc, "allowPrivilegeEscalation", NULL));
    s.readonly_root = cJSON_IsTrue(podobj_get(csc, "readOnlyRootFilesystem", NULL));
    if (podobj_get(caps, "drop", NULL) || podobj_get(caps, "add", NULL)) {
        s.limit_caps = true;
        s.caps = (UINT64_C(1) << CAP_COUNT) - 1;
        if ((r = caps_apply(podobj_get(caps, "drop", NULL), "drop", &s.caps, false, e)) < 0 ||
            (r = caps_apply(podobj_get(caps, "add", NULL), "add", &s.caps, true, e)) < 0)
            return r;
    }
    *ret_sec = s;
    return 0;
}
