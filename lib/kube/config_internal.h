#ifndef NESTCP_KUBE_CONFIG_INTERNAL_H
#define NESTCP_KUBE_CONFIG_INTERNAL_H

/* What config.c shares with config_merge.c; not for use outside lib/kube. */

#include <cjson/cJSON.h>
#include <stddef.h>

#include "lib/kube/config.h"

/* One parsed kubeconfig file among those being merged. */
struct kube_config_source {
    const char *origin;   /* the file, named in messages about its fields */
    const char *base_dir; /* its relative paths resolve here; NULL: the current directory */
    const cJSON *doc;     /* its top-level mapping */
};

/* Parses kubeconfig text into *ret_doc, or NULL when the text holds no document (an empty
 * file is an empty configuration, as for kubectl). Returns 0, -EINVAL (in e: a YAML error,
 * more than one document, or a top level that is not a mapping), -ENOMEM. */
int kube_config_parse_doc(const char *text, size_t len, const char *origin, cJSON **ret_doc,
                          struct err *e);

/*
 * Builds the configuration of `context` from n sources merged as kubectl merges the files of
 * $KUBECONFIG: the first source with a non-empty current-context sets it (when context is
 * NULL), and for contexts, clusters and users the first source that defines a name wins; later
 * definitions are ignored. Each entry's relative paths resolve against its own source's
 * base_dir, and errors about an entry name its source and field. `origin` names the whole set
 * (one file, or the files joined with ':') in messages that concern no single file, and becomes
 * the configuration's origin. Returns as kube_config_parse.
 */
int kube_config_build(const struct kube_config_source *src, size_t n, const char *origin,
                      const char *context, struct kube_config **ret_cfg, struct err *e);

#endif
