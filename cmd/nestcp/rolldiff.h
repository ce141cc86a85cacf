#ifndef NESTCP_CMD_ROLLDIFF_H
#define NESTCP_CMD_ROLLDIFF_H

/*
 * What `nestcp plan` says of one component: whether the StatefulSet this nestcp renders would
 * roll the one that runs, and why. A pure function of the two objects.
 *
 * A StatefulSet rolls when the config hash of its pod template (the annotation
 * nestcp.x-k8s.io/config-hash, lib/render/cluster.h) changes. The changes are named from the
 * pod templates: each container's image (its version), its flags (command and args as
 * --name=value), the certificates Secret mounted as volume "certs", and any other field the
 * rendered template sets to another value than the running one has (fields only the API
 * server fills in are not compared).
 */

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

enum rolldiff_kind {
    ROLLDIFF_VERSION,      /* a container's image: what = container, from/to = the tags */
    ROLLDIFF_FLAG,         /* what = "--name", from/to = values ("(unset)": absent) */
    ROLLDIFF_CERTIFICATES, /* what = "certs", from/to = the Secrets' names */
    ROLLDIFF_FIELD,        /* what = the path in the StatefulSet, from/to = JSON values */
};

#define ROLLDIFF_MAX 32
#define ROLLDIFF_UNSET "(unset)"

struct rolldiff_change {
    enum rolldiff_kind kind;
    char container[64]; /* for versions and flags */
    char what[192];
    char from[256];
    char to[256];
};

struct rolldiff {
    bool roll;             /* the config hashes differ */
    char running_hash[72]; /* "" when the running one has none */
    char rendered_hash[72];
    size_t n;    /* changes named, at most ROLLDIFF_MAX */
    size_t more; /* changes found past ROLLDIFF_MAX */
    struct rolldiff_change changes[ROLLDIFF_MAX];
};

/* Compares the rendered StatefulSet with the running one. The changes are listed only when
 * the hashes differ. Returns 0, -EINVAL (rendered is not a StatefulSet with a pod template),
 * -ENOMEM. */
int rolldiff_statefulset(const cJSON *rendered, const cJSON *running, struct rolldiff *ret);

/* "version", "flag", "certificates", "field". */
const char *rolldiff_kind_name(enum rolldiff_kind kind);

#endif
