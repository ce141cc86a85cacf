#ifndef NESTCP_NODEAGENT_PODENV_H
#define NESTCP_NODEAGENT_PODENV_H

/*
 * A container's environment and command line, as the kubelet builds them: `env` (values,
 * downward-API fieldRef, secretKeyRef, configMapKeyRef) and `envFrom`, then Kubernetes `$(VAR)`
 * expansion of env values, command and args (`$$` stands for a literal `$`; a reference to an
 * undefined variable is kept as written).
 */

#include <stddef.h>

#include <cjson/cJSON.h>

#include "lib/util/err.h"
#include "test/nodeagent/podobj.h"

/* An environment: "NAME=value" strings plus a NULL terminator, ready for execve. */
struct podenv {
    char **vars;
    size_t n;
    size_t cap;
};

#define PODENV_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* What the downward API knows besides the pod object. */
struct podenv_fields {
    const char *pod_ip;
    const char *host_ip;
    const char *node_name;
    const char *path; /* PATH for the container; NULL: the usual system directories */
    /* The super cluster's API server, as the kubelet gives every container
     * KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT (here its loopback address, since
     * the `kubernetes` Service's ClusterIP does not route); NULL: not set. */
    const char *api_host;
    const char *api_port;
};

void podenv_done(struct podenv *env);

/* Sets name to value, replacing an earlier definition. Returns 0 or -ENOMEM. */
int podenv_set(struct podenv *env, const char *name, const char *value);

/* The value of name, or NULL. Borrowed. */
const char *podenv_get(const struct podenv *env, const char *name);

/* The value of a downward-API fieldPath (metadata.name, metadata.namespace, metadata.uid,
 * metadata.labels['k'], metadata.annotations['k'], spec.nodeName, spec.serviceAccountName,
 * status.podIP, status.hostIP) for pod, or NULL when the path is not supported. Borrowed from
 * pod, fields or tmp (which holds a label or annotation key). fields may be NULL: only the
 * pod's own fields are known then. */
const char *podenv_fieldref(const cJSON *pod, const char *path, const struct podenv_fields *fields,
                            char *tmp, size_t tmpsize);

/* Builds the environment of container (an element of pod.spec.containers) into env (which
 * must be empty): PATH, HOSTNAME and HOME, KUBERNETES_SERVICE_HOST and _PORT (when fields
 * names the API server), then envFrom, then env in order.
 * Returns 0, -ENOENT (a referenced Secret, ConfigMap or key is missing and not optional),
 * -EINVAL (an unsupported fieldRef or a malformed entry), -ENOMEM; e names the variable. */
int podenv_build(const cJSON *pod, const cJSON *container, const struct podenv_fields *fields,
                 podobj_resolve_fn resolve, void *userdata, struct podenv *env, struct err *e);

/* Expands $(VAR) references in in against env into a new string (caller frees).
 * Returns 0 or -ENOMEM. */
int podenv_expand(const char *in, const struct podenv *env, char **ret_out);

#endif
