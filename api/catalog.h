#ifndef NESTCP_API_CATALOG_H
#define NESTCP_API_CATALOG_H

/*
 * What the installed packages know, as validation and defaulting need it. api/ does not read
 * packages itself; lib/render fills this in. Every member may be NULL (and a NULL catalog is
 * allowed everywhere): the checks and defaults that need it are then skipped.
 *
 * Versions are passed in canonical form, without a leading "v" ("1.36.3").
 */

#include <stdbool.h>

#define API_CATALOG_KUBERNETES "kubernetes"
#define API_CATALOG_ETCD "etcd"

struct api_catalog {
    void *ctx;
    /* True when the packages can run `component` ("kubernetes" or "etcd") at `version`. */
    bool (*knows_version)(void *ctx, const char *component, const char *version);
    /* True when `version` is older than every line the packages ship for `component`: a
     * retired line, which no newer nestcp will run again. */
    bool (*retired_version)(void *ctx, const char *component, const char *version);
    /* The lines shipped for `component`, "1.35, 1.36, 1.37" (borrowed until the next call). */
    const char *(*supported_lines)(void *ctx, const char *component);
    /* True when Kubernetes `k8s_version` has the feature gate `gate`. */
    bool (*knows_feature_gate)(void *ctx, const char *k8s_version, const char *gate);
    /* The etcd version Kubernetes `k8s_version` needs (borrowed), or NULL if unknown. */
    const char *(*etcd_version_for)(void *ctx, const char *k8s_version);
    /* The Kubernetes version to use when none is given (borrowed), or NULL. */
    const char *(*default_version)(void *ctx);
};

#endif
