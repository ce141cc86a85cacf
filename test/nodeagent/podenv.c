#include "test/nodeagent/podenv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"

#define PODENV_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

void podenv_done(struct podenv *env)
{
    for (size_t i = 0; i < env->n; i++)
        free(env->vars[i]);
    free(env->vars);
    env->vars = NULL;
    env->n = env->cap = 0;
}

static ssize_t podenv_find(const struct podenv *env, const char *name, size_t namelen)
{
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->vars[i], name, namelen) == 0 && env->vars[i][namelen] == '=')
            return (ssize_t)i;
    return -1;
}

int podenv_set(struct podenv *env, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    char *var = malloc(nl + vl + 2);
    ssize_t at;

    if (!var)
        return -ENOMEM;
    memcpy(var, name, nl);
    var[nl] = '=';
    memcpy(var + nl + 1, value, vl + 1);
    at = podenv_find(env, name, nl);
    if (at >= 0) {
        free(env->vars[at]);
        env->vars[at] = var;
        return 0;
    }
    if (env->n + 2 > env->cap) {
        size_t cap = env->cap ? env->cap * 2 : 16;
        char **v = realloc(env->vars, cap * sizeof(*v));

        if (!v) {
            free(var);
            return -ENOMEM;
        }
        env->vars = v;
        env->cap = cap;
    }
    env->vars[env->n++] = var;
    env->vars[env->n] = NULL;
    return 0;
}

const char *podenv_get(const struct podenv *env, const char *name)
{
    ssize_t at = podenv_find(env, name, strlen(name));

    return at >= 0 ? env->vars[at] + strlen(name) + 1 : NULL;
}

int podenv_expand(const char *in, const struct podenv *env, char **ret_out)
{
    struct buf b = BUF_INIT;
    const char *p = in;
    int r = 0;

    while (r == 0 && *p) {
        const char *dollar = strchr(p, '$');
        const char *close;

        if (!dollar) {
            r = buf_puts(&b, p);
            break;
        }
        r = buf_append(&b, p, (size_t)(dollar - p));
        if (r < 0)
            break;
        if (dollar[1] == '$') { /* "$$" is a literal "$" */
            r = buf_append(&b, "$", 1);
            p = dollar + 2;
        } else if (dollar[1] == '(' && (close = strchr(dollar + 2, ')'))) {
            size_t nl = (size_t)(close - dollar - 2);
            ssize_t at = podenv_find(env, dollar + 2, nl);

            if (at >= 0)
                r = buf_puts(&b, env->vars[at] + nl + 1);
            else
                r = buf_append(&b, dollar, nl + 3);
            p = close + 1;
        } else {
            r = buf_append(&b, dollar, dollar[1] ? 2 : 1);
            p = dollar + (dollar[1] ? 2 : 1);
        }
    }
    if (r == 0 && !b.data)
        r = buf_puts(&b, "");
    if (r < 0) {
        buf_done(&b);
        return r;
    }
    *ret_out = buf_steal(&b);
    return *ret_out ? 0 : -ENOMEM;
}

const char *podenv_fieldref(const cJSON *pod, const char *path, const struct podenv_fields *f,
                            char *tmp, size_t tmpsize)
{
    static const struct podenv_fields none;

    if (!f)
        f = &none;
    if (strcmp(path, "metadata.name") == 0)
        return podobj_str(pod, "metadata", "name", NULL);
    if (strcmp(path, "metadata.namespace") == 0)
        return podobj_str(pod, "metadata", "namespace", NULL);
    if (strcmp(path, "metadata.uid") == 0)
        return podobj_str(pod, "metadata", "uid", NULL);
    if (strcmp(path, "spec.nodeName") == 0)
        return f->node_name ? f->node_name : podobj_str(pod, "spec", "nodeName", NULL);
    if (strcmp(path, "spec.serviceAccountName") == 0)
        return podobj_str(pod, "spec", "serviceAccountName", NULL);
    if (strcmp(path, "status.podIP") == 0 || strcmp(path, "status.podIPs") == 0)
        return f->pod_ip;
    if (strcmp(path, "status.hostIP") == 0)
        return f->host_ip;
    /* metadata.labels['key'] and metadata.annotations['key'] */
    for (int i = 0; i < 2; i++) {
        const char *prefix = i == 0 ? "metadata.labels['" : "metadata.annotations['";
        size_t pl = strlen(prefix), len = strlen(path);

        if (strncmp(path, prefix, pl) != 0 || len < pl + 2 || strcmp(path + len - 2, "']") != 0)
            continue;
        if (len - pl - 2 >= tmpsize)
            return NULL;
        memcpy(tmp, path + pl, len - pl - 2);
        tmp[len - pl - 2] = '\0';
        const char *v = podobj_str(pod, "metadata", i == 0 ? "labels" : "annotations", tmp, NULL);
        return v ? v : "";
    }
    return NULL;
}

static int podenv_key_ref(const cJSON *pod, const char *kind, const cJSON *ref,
                          podobj_resolve_fn resolve, void *userdata, char **ret_value,
                          struct err *e)
{
    const char *ns = podobj_str(pod, "metadata", "namespace", NULL);
    const char *name = podobj_str(ref, "name", NULL);
    const char *key = podobj_str(ref, "key", NULL);
    bool optional = podobj_bool(ref, "optional", false);
    const cJSON *obj = NULL;
    size_t len;
    int r;

    if (!name || !key)
        return err_set(e, -EINVAL, "%s reference without name or key", kind);
    r = resolve ? resolve(userdata, kind, ns ? ns : "default", name, &obj) : -ENOENT;
    if (r == 0)
        r = podobj_data_value(obj, kind, key, ret_value, &len);
    if (r == -ENOENT && optional) {
        *ret_value = NULL;
        return 0;
    }
    if (r == -ENOENT)
        return err_set(e, r, "%s %s has no key %s (or does not exist)", kind, name, key);
    if (r < 0)
        return err_set(e, r, "%s %s key %s: cannot decode", kind, name, key);
    return 0;
}

static int podenv_from(const cJSON *pod, const cJSON *src, podobj_resolve_fn resolve,
                       void *userdata, struct podenv *env, struct err *e)
{
    const char *ns = podobj_str(pod, "metadata", "namespace", NULL);
    const char *prefix = podobj_str(src, "prefix", NULL);
    const char *kind = "ConfigMap";
    const cJSON *ref = podobj_get(src, "configMapRef", NULL), *obj = NULL, *item;
    char name[512];
    int r;

    if (!ref) {
        ref = podobj_get(src, "secretRef", NULL);
        kind = "Secret";
    }
    if (!podobj_str(ref, "name", NULL))
        return err_set(e, -EINVAL, "envFrom entry without configMapRef or secretRef name");
    r = resolve ? resolve(userdata, kind, ns ? ns : "default", podobj_str(ref, "name", NULL), &obj)
                : -ENOENT;
    if (r == -ENOENT && podobj_bool(ref, "optional", false))
        return 0;
    if (r < 0)
        return err_set(e, r, "envFrom: %s %s not found", kind, podobj_str(ref, "name", NULL));
    for (int pass = 0; pass < 2; pass++) {
        const char *member = pass == 0 ? "data" : "binaryData";

        if (strcmp(kind, "Secret") == 0 && pass == 1)
            break;
        cJSON_ArrayForEach(item, podobj_get(obj, member, NULL)) {
            char *value = NULL;
            size_t len;

            if ((size_t)snprintf(name, sizeof(name), "%s%s", prefix ? prefix : "", item->string) >=
                sizeof(name))
                continue;
            r = podobj_data_value(obj, kind, item->string, &value, &len);
            if (r == 0)
                r = podenv_set(env, name, value);
            free(value);
            if (r == -ENOMEM)
                return r;
        }
    }
    return 0;
}

int podenv_build(const cJSON *pod, const cJSON *container, const struct podenv_fields *f,
                 podobj_resolve_fn resolve, void *userdata, struct podenv *env, struct err *e)
{
    const char *hostname = podobj_str(pod, "spec", "hostname", NULL);
    const cJSON *item;
    int r;

    if (!hostname)
        hostname = podobj_str(pod, "metadata", "name", NULL);
    r = podenv_set(env, "PATH", f->path ? f->path : PODENV_DEFAULT_PATH);
    if (r == 0)
        r = podenv_set(env, "HOSTNAME", hostname ? hostname : "");
    if (r == 0)
        r = podenv_set(env, "HOME", "/root");
    if (r == 0 && f->api_host && f->api_port) {
        r = podenv_set(env, "KUBERNETES_SERVICE_HOST", f->api_host);
        if (r == 0)
            r = podenv_set(env, "KUBERNETES_SERVICE_PORT", f->api_port);
        if (r == 0)
            r = podenv_set(env, "KUBERNETES_SERVICE_PORT_HTTPS", f->api_port);
    }
    if (r < 0)
        return r;
    cJSON_ArrayForEach(item, podobj_get(container, "envFrom", NULL)) {
        r = podenv_from(pod, item, resolve, userdata, env, e);
        if (r < 0)
            return r;
    }
    cJSON_ArrayForEach(item, podobj_get(container, "env", NULL)) {
        const char *name = podobj_str(item, "name", NULL);
        const char *value = podobj_str(item, "value", NULL);
        const cJSON *from = podobj_get(item, "valueFrom", NULL);
        char *owned = NULL, tmp[320]; /* a label or annotation key: 253 + 1 + 63 */

        if (!name || !*name || strchr(name, '='))
            return err_set(e, -EINVAL, "env entry without a valid name");
        if (from) {
            const char *path = podobj_str(from, "fieldRef", "fieldPath", NULL);
            const cJSON *ref;

            if (path) {
                value = podenv_fieldref(pod, path, f, tmp, sizeof(tmp));
                if (!value)
                    return err_set(e, -EINVAL, "env %s: unsupported fieldRef %s", name, path);
            } else if ((ref = podobj_get(from, "secretKeyRef", NULL)) ||
                       (ref = podobj_get(from, "configMapKeyRef", NULL))) {
                const char *kind = podobj_get(from, "secretKeyRef", NULL) ? "Secret" : "ConfigMap";

                r = podenv_key_ref(pod, kind, ref, resolve, userdata, &owned, e);
                if (r < 0) {
                    err_prefix(e, "env %s: ", name);
                    return r;
                }
                if (!owned)
                    continue; /* optional and absent: the variable is not set */
                value = owned;
            } else {
                return err_set(e, -EINVAL, "env %s: unsupported valueFrom", name);
            }
        } else if (value) {
            r = podenv_expand(value, env, &owned);
            if (r < 0)
                return r;
            value = owned;
        } else {
            value = "";
        }
        r = podenv_set(env, name, value);
        free(owned);
        if (r < 0)
            return r;
    }
    return 0;
}
