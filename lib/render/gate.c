/* The security gate over a component's final objects (lib/render/gate.h). */

#include "lib/render/gate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/render/patch.h"
#include "lib/util/strutil.h"

/* What an object is called in messages: "StatefulSet ns/name". */
struct what {
    char s[320];
};

struct gate {
    const cJSON *base, *obj; /* the baseline object and the final one */
    const struct render_gate_opts *opts;
    const char *component;
    struct what w;
    struct err *e;
};

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Both absent (or JSON null), or equal. */
static bool same_json(const cJSON *a, const cJSON *b)
{
    bool na = !a || cJSON_IsNull(a), nb = !b || cJSON_IsNull(b);

    if (na || nb)
        return na && nb;
    return cJSON_Compare(a, b, true);
}

static int refuse(struct gate *g, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(struct gate *g, const char *path, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return err_set(g->e, -EINVAL, "%s: %s: %s", g->w.s, path, why);
}

/* A field path for messages; a path too long for the buffer is cut. */
static void what_of(const cJSON *obj, struct what *w)
{
    const cJSON *m = get(obj, "metadata");

    snprintf(w->s, sizeof(w->s), "%s %s/%s", str(obj, "kind") ? str(obj, "kind") : "object",
             str(m, "namespace") ? str(m, "namespace") : "", str(m, "name") ? str(m, "name") : "");
}

/* ---- what the baseline refers to ---- */

/* Names of Secrets, ConfigMaps and claims the baseline's pods use. */
struct refs {
    const char *names[3][32];
    int n[3];
};

enum ref_kind { REF_SECRET, REF_CONFIGMAP, REF_CLAIM };
static const char *const ref_kind_names[] = {"Secret", "ConfigMap", "PersistentVolumeClaim"};

static void ref_add(struct refs *r, enum ref_kind k, const char *name)
{
    if (name && r->n[k] < 32)
        r->names[k][r->n[k]++] = name;
}

static bool ref_has(const struct refs *r, enum ref_kind k, const char *name)
{
    for (int i = 0; i < r->n[k]; i++)
        if (strcmp(r->names[k][i], name) == 0)
            return true;
    return false;
}

/* Calls fn for each Secret/ConfigMap/claim reference of a pod spec, with its field path. */
typedef int (*ref_fn)(void *ud, enum ref_kind k, const char *name, const char *path);

static int each_container_ref(const cJSON *c, const char *cpath, ref_fn fn, void *ud)
{
    const cJSON *env, *from;
    char path[256];
    int i = 0, r;

    cJSON_ArrayForEach(env, get(c, "env")) {
        const cJSON *vf = get(env, "valueFrom");
        str_printf(path, sizeof(path), "%s.env[%d].valueFrom", cpath, i++);
        if (get(vf, "secretKeyRef") &&
            (r = fn(ud, REF_SECRET, str(get(vf, "secretKeyRef"), "name"), path)) < 0)
            return r;
        if (get(vf, "configMapKeyRef") &&
            (r = fn(ud, REF_CONFIGMAP, str(get(vf, "configMapKeyRef"), "name"), path)) < 0)
            return r;
    }
    i = 0;
    cJSON_ArrayForEach(from, get(c, "envFrom")) {
        str_printf(path, sizeof(path), "%s.envFrom[%d]", cpath, i++);
        if (get(from, "secretRef") &&
            (r = fn(ud, REF_SECRET, str(get(from, "secretRef"), "name"), path)) < 0)
            return r;
        if (get(from, "configMapRef") &&
            (r = fn(ud, REF_CONFIGMAP, str(get(from, "configMapRef"), "name"), path)) < 0)
            return r;
    }
    return 0;
}

static const char *const container_lists[] = {"initContainers", "containers",
                                              "ephemeralContainers"};

static const cJSON *container_named(const cJSON *pod, const char *list, const char *name);

static int each_ref(const cJSON *pod, const char *ppath, ref_fn fn, void *ud)
{
    const cJSON *v, *c, *src;
    char path[256];
    int i = 0, r;

    cJSON_ArrayForEach(v, get(pod, "volumes")) {
        str_printf(path, sizeof(path), "%s.volumes[%d]", ppath, i++);
        if (get(v, "secret") &&
            (r = fn(ud, REF_SECRET, str(get(v, "secret"), "secretName"), path)) < 0)
            return r;
        if (get(v, "configMap") &&
            (r = fn(ud, REF_CONFIGMAP, str(get(v, "configMap"), "name"), path)) < 0)
            return r;
        if (get(v, "persistentVolumeClaim") &&
            (r = fn(ud, REF_CLAIM, str(get(v, "persistentVolumeClaim"), "claimName"), path)) < 0)
            return r;
        cJSON_ArrayForEach(src, get(get(v, "projected"), "sources")) {
            if (get(src, "secret") &&
                (r = fn(ud, REF_SECRET, str(get(src, "secret"), "name"), path)) < 0)
                return r;
            if (get(src, "configMap") &&
                (r = fn(ud, REF_CONFIGMAP, str(get(src, "configMap"), "name"), path)) < 0)
                return r;
        }
    }
    for (size_t l = 0; l < sizeof(container_lists) / sizeof(*container_lists); l++) {
        i = 0;
        cJSON_ArrayForEach(c, get(pod, container_lists[l])) {
            str_printf(path, sizeof(path), "%s.%s[%d]", ppath, container_lists[l], i++);
            if ((r = each_container_ref(c, path, fn, ud)) < 0)
                return r;
        }
    }
    return 0;
}

static int collect_ref(void *ud, enum ref_kind k, const char *name, const char *path)
{
    (void)path;
    ref_add(ud, k, name);
    return 0;
}

struct check_refs {
    struct gate *g;
    const struct refs *allowed;
};

static int check_ref(void *ud, enum ref_kind k, const char *name, const char *path)
{
    struct check_refs *c = ud;

    if (name && ref_has(c->allowed, k, name))
        return 0;
    return refuse(c->g, path,
                  "%s \"%s\" is not one this component uses; a component may mount "
                  "only its own cluster's objects",
                  ref_kind_names[k], name ? name : "");
}

/* ---- privilege ---- */

static const char *const restricted_volume_types[] = {
    "name",
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
};

static bool volume_type_allowed(const char *field)
{
    for (size_t i = 0; i < sizeof(restricted_volume_types) / sizeof(*restricted_volume_types); i++)
        if (strcmp(field, restricted_volume_types[i]) == 0)
            return true;
    return false;
}

static int check_security_context(struct gate *g, const cJSON *sc, const char *path)
{
    char p[320];
    const cJSON *caps = get(get(sc, "capabilities"), "add");

    if (cJSON_IsTrue(get(sc, "privileged"))) {
        str_printf(p, sizeof(p), "%s.privileged", path);
        return refuse(g, p, "true is not allowed (privileged containers)");
    }
    if (cJSON_IsTrue(get(sc, "allowPrivilegeEscalation"))) {
        str_printf(p, sizeof(p), "%s.allowPrivilegeEscalation", path);
        return refuse(g, p, "true is not allowed");
    }
    if (cJSON_GetArraySize(caps) > 0) {
        str_printf(p, sizeof(p), "%s.capabilities.add", path);
        return refuse(g, p, "adding capabilities is not allowed");
    }
    if (same_str(str(get(sc, "seccompProfile"), "type"), "Unconfined")) {
        str_printf(p, sizeof(p), "%s.seccompProfile.type", path);
        return refuse(g, p, "Unconfined is not allowed");
    }
    if (same_str(str(get(sc, "appArmorProfile"), "type"), "Unconfined")) {
        str_printf(p, sizeof(p), "%s.appArmorProfile.type", path);
        return refuse(g, p, "Unconfined is not allowed");
    }
    if (get(sc, "seLinuxOptions")) {
        str_printf(p, sizeof(p), "%s.seLinuxOptions", path);
        return refuse(g, p, "SELinux options are not allowed");
    }
    if (get(sc, "procMount") && !same_str(str(sc, "procMount"), "Default")) {
        str_printf(p, sizeof(p), "%s.procMount", path);
        return refuse(g, p, "only Default is allowed");
    }
    if (get(sc, "sysctls")) {
        str_printf(p, sizeof(p), "%s.sysctls", path);
        return refuse(g, p, "sysctls are not allowed");
    }
    return 0;
}

static int check_privilege(struct gate *g, const cJSON *pod, const char *ppath)
{
    static const char *const host_ns[] = {"hostNetwork", "hostPID", "hostIPC"};
    const cJSON *v, *c, *port;
    char path[320];
    int i = 0, r;

    for (size_t k = 0; k < 3; k++)
        if (cJSON_IsTrue(get(pod, host_ns[k]))) {
            str_printf(path, sizeof(path), "%s.%s", ppath, host_ns[k]);
            return refuse(g, path, "true is not allowed (host namespaces)");
        }
    str_printf(path, sizeof(path), "%s.securityContext", ppath);
    if ((r = check_security_context(g, get(pod, "securityContext"), path)) < 0)
        return r;
    cJSON_ArrayForEach(v, get(pod, "volumes")) {
        const cJSON *f;
        cJSON_ArrayForEach(f, v) {
            if (volume_type_allowed(f->string))
                continue;
            str_printf(path, sizeof(path), "%s.volumes[%d].%s", ppath, i, f->string);
            return refuse(g, path, "%s volumes are not allowed",
                          strcmp(f->string, "hostPath") == 0 ? "hostPath" : "these");
        }
        i++;
    }
    for (size_t l = 0; l < sizeof(container_lists) / sizeof(*container_lists); l++) {
        i = 0;
        cJSON_ArrayForEach(c, get(pod, container_lists[l])) {
            int j = 0;
            str_printf(path, sizeof(path), "%s.%s[%d].securityContext", ppath, container_lists[l],
                       i);
            if ((r = check_security_context(g, get(c, "securityContext"), path)) < 0)
                return r;
            cJSON_ArrayForEach(port, get(c, "ports")) {
                const cJSON *hp = get(port, "hostPort");
                if (cJSON_IsNumber(hp) && hp->valueint != 0) {
                    str_printf(path, sizeof(path), "%s.%s[%d].ports[%d].hostPort", ppath,
                               container_lists[l], i, j);
                    return refuse(g, path, "host ports are not allowed");
                }
                j++;
            }
            i++;
        }
    }
    return 0;
}

/* ---- the restricted profile the package sets ---- */

/* A securityContext field of a container, else of its pod (runAsNonRoot, runAsUser,
 * seccompProfile: the container's value wins). */
static const cJSON *effective(const cJSON *pod, const cJSON *c, const char *field)
{
    const cJSON *v = get(get(c, "securityContext"), field);

    return v ? v : get(get(pod, "securityContext"), field);
}

static bool drops_all(const cJSON *c)
{
    const cJSON *d;

    cJSON_ArrayForEach(d, get(get(get(c, "securityContext"), "capabilities"), "drop"))
        if (cJSON_IsString(d) && strcmp(d->valuestring, "ALL") == 0)
            return true;
    return false;
}

static bool seccomp_confined(const cJSON *profile)
{
    const char *t = str(profile, "type");

    return same_str(t, "RuntimeDefault") || same_str(t, "Localhost");
}

/* What the Pod Security Standards' restricted profile asks, and the package sets, a patch may
 * not take away: a non-root user (never uid 0), no privilege escalation, every capability
 * dropped, a confined seccomp profile, and a read-only root filesystem. A package that does
 * not set one of them is not held to it here (the API server's Pod Security admission is). */
static int check_restricted(struct gate *g, const cJSON *bpod, const cJSON *pod, const char *ppath)
{
    const cJSON *c;
    char path[320];
    int i = 0;

    for (size_t l = 0; l < sizeof(container_lists) / sizeof(*container_lists); l++) {
        i = 0;
        cJSON_ArrayForEach(c, get(pod, container_lists[l])) {
            const cJSON *bc = container_named(bpod, container_lists[l], str(c, "name"));
            const cJSON *uid = effective(pod, c, "runAsUser");
            const cJSON *sc = get(c, "securityContext");

            str_printf(path, sizeof(path), "%s.%s[%d].securityContext", ppath, container_lists[l],
                       i++);
            if (cJSON_IsNumber(uid) && uid->valuedouble == 0)
                return refuse(g, path, "runAsUser 0 is not allowed (the pod runs as non-root)");
            if (!bc)
                bc = cJSON_GetArrayItem(get(bpod, container_lists[l]), 0);
            if (!bc)
                continue;
            if (cJSON_IsTrue(effective(bpod, bc, "runAsNonRoot")) &&
                !cJSON_IsTrue(effective(pod, c, "runAsNonRoot")))
                return refuse(g, path, "runAsNonRoot must stay true, as the package sets it");
            if (cJSON_IsFalse(get(get(bc, "securityContext"), "allowPrivilegeEscalation")) &&
                !cJSON_IsFalse(get(sc, "allowPrivilegeEscalation")))
                return refuse(g, path,
                              "allowPrivilegeEscalation must stay false, as the package sets it");
            if (drops_all(bc) && !drops_all(c))
                return refuse(g, path,
                              "capabilities.drop must keep ALL, as the package drops them");
            if (seccomp_confined(effective(bpod, bc, "seccompProfile")) &&
                !seccomp_confined(effective(pod, c, "seccompProfile")))
                return refuse(g, path,
                              "seccompProfile must stay RuntimeDefault (or Localhost), as the "
                              "package sets it");
            if (cJSON_IsTrue(get(get(bc, "securityContext"), "readOnlyRootFilesystem")) &&
                !cJSON_IsTrue(get(sc, "readOnlyRootFilesystem")))
                return refuse(g, path,
                              "readOnlyRootFilesystem must stay true, as the package sets it");
        }
    }
    return 0;
}

/* ---- placement ---- */

static int check_placement(struct gate *g, const cJSON *base, const cJSON *pod, const char *ppath)
{
    static const char *const fields[] = {
        "serviceAccountName", "serviceAccount",    "automountServiceAccountToken",
        "nodeName",           "nodeSelector",      "affinity",
        "tolerations",        "priorityClassName", "hostAliases",
        "runtimeClassName",
    };
    char path[320];

    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        if (!same_json(get(base, fields[i]), get(pod, fields[i]))) {
            str_printf(path, sizeof(path), "%s.%s", ppath, fields[i]);
            return refuse(g, path, "may not be changed from what the package renders");
        }
    return 0;
}

/* ---- flags ---- */

/* Flags whose value (or absence) must stay as the package renders it. */
static const char *const apiserver_flags[] = {"authorization-mode",
                                              "authorization-config",
                                              "authorization-webhook-config-file",
                                              "authentication-config",
                                              "authentication-token-webhook-config-file",
                                              "anonymous-auth",
                                              "token-auth-file",
                                              "client-ca-file",
                                              "disable-admission-plugins",
                                              "etcd-servers",
                                              "etcd-servers-overrides",
                                              "etcd-cafile",
                                              "etcd-certfile",
                                              "etcd-keyfile",
                                              "etcd-prefix",
                                              "service-account-issuer",
                                              "service-account-key-file",
                                              "service-account-signing-key-file",
                                              "service-account-jwks-uri",
                                              "service-account-max-token-expiration",
                                              "service-account-extend-token-expiration",
                                              "tls-cert-file",
                                              "tls-private-key-file",
                                              "requestheader-client-ca-file",
                                              "requestheader-allowed-names",
                                              "requestheader-username-headers",
                                              "requestheader-group-headers",
                                              "requestheader-extra-headers-prefix",
                                              "requestheader-uid-headers",
                                              "proxy-client-cert-file",
                                              "proxy-client-key-file",
                                              "kubelet-client-certificate",
                                              "kubelet-client-key",
                                              NULL};
static const char *const etcd_flags[] = {"client-cert-auth",
                                         "peer-client-cert-auth",
                                         "trusted-ca-file",
                                         "peer-trusted-ca-file",
                                         "cert-file",
                                         "key-file",
                                         "peer-cert-file",
                                         "peer-key-file",
                                         "auto-tls",
                                         "peer-auto-tls",
                                         "listen-metrics-urls",
                                         "client-crl-file",
                                         "peer-crl-file",
                                         NULL};
static const char *const controller_manager_flags[] = {"use-service-account-credentials",
                                                       "service-account-private-key-file",
                                                       "root-ca-file",
                                                       "cluster-signing-cert-file",
                                                       "cluster-signing-key-file",
                                                       "kubeconfig",
                                                       "authentication-kubeconfig",
                                                       "authorization-kubeconfig",
                                                       "client-ca-file",
                                                       "requestheader-client-ca-file",
                                                       NULL};

static const char *const *protected_flags(const char *component)
{
    if (same_str(component, "kube-apiserver"))
        return apiserver_flags;
    if (same_str(component, "etcd"))
        return etcd_flags;
    if (same_str(component, "kube-controller-manager"))
        return controller_manager_flags;
    return NULL;
}

/* The value of --name in a container's command and args: "--name=v" gives v, a bare "--name"
 * gives "" ; NULL when absent. The last occurrence wins, as in the binaries' flag parsers. */
static const char *flag_value(const cJSON *c, const char *name)
{
    static const char *const lists[] = {"command", "args"};
    size_t n = strlen(name);
    const char *found = NULL;
    const cJSON *a;

    for (size_t l = 0; l < 2; l++)
        cJSON_ArrayForEach(a, get(c, lists[l])) {
            const char *s = cJSON_IsString(a) ? a->valuestring : "";
            if (strncmp(s, "--", 2) || strncmp(s + 2, name, n))
                continue;
            if (s[2 + n] == '=')
                found = s + 3 + n;
            else if (!s[2 + n])
                found = "";
        }
    return found;
}

/* Whether every comma-separated item of want is in have. */
static bool has_all(const char *have, const char *want)
{
    while (want && *want) {
        size_t n = strcspn(want, ",");
        const char *h = have;
        bool found = false;
        while (h && *h && !found) {
            size_t m = strcspn(h, ",");
            found = m == n && strncmp(h, want, n) == 0;
            h += m + (h[m] == ',');
        }
        if (n && !found)
            return false;
        want += n + (want[n] == ',');
    }
    return true;
}

/* A change that only takes a right away: turning anonymous requests off where the package
 * leaves the binary's default. Where the package renders an authentication configuration,
 * that governs anonymous requests and the binary refuses --anonymous-auth beside it. */
static bool tightens(const cJSON *base, const char *flag, const char *was, const char *is)
{
    return !was && is && strcmp(flag, "anonymous-auth") == 0 && strcmp(is, "false") == 0 &&
           !flag_value(base, "authentication-config");
}

static const cJSON *container_named(const cJSON *pod, const char *list, const char *name)
{
    const cJSON *c;

    cJSON_ArrayForEach(c, get(pod, list))
        if (same_str(str(c, "name"), name))
            return c;
    return NULL;
}

static int check_flags(struct gate *g, const cJSON *base, const cJSON *pod, const char *ppath)
{
    const char *const *flags = protected_flags(g->component);
    const cJSON *c;
    char path[320];
    int i = 0;

    cJSON_ArrayForEach(c, get(pod, "containers")) {
        const cJSON *bc = container_named(base, "containers", str(c, "name"));
        const char *was, *is;
        str_printf(path, sizeof(path), "%s.containers[%d]", ppath, i++);
        if (!bc)
            continue; /* a container the package does not have runs none of its binaries */
        was = flag_value(bc, "enable-admission-plugins");
        is = flag_value(c, "enable-admission-plugins");
        if (was && !has_all(is, was))
            return refuse(g, path,
                          "--enable-admission-plugins=%s drops a plugin the package "
                          "enables (%s)",
                          is ? is : "", was);
        for (size_t f = 0; flags && flags[f]; f++) {
            was = flag_value(bc, flags[f]);
            is = flag_value(c, flags[f]);
            if (same_str(was, is) || tightens(bc, flags[f], was, is))
                continue;
            if (was)
                return refuse(g, path,
                              "--%s=%s is not allowed: security depends on it, and the package "
                              "renders --%s=%s",
                              flags[f], is ? is : "(removed)", flags[f], was);
            return refuse(g, path,
                          "--%s=%s is not allowed: security depends on it, and the package does "
                          "not set it",
                          flags[f], is);
        }
    }
    return 0;
}

/* ---- objects ---- */

static const char *const nestcp_label_keys[] = {
    "app.kubernetes.io/managed-by", "app.kubernetes.io/component", "app.kubernetes.io/name",
    "cluster.x-k8s.io/cluster-name", NULL};

static int check_labels(struct gate *g, const cJSON *base, const cJSON *labels, const char *path)
{
    char p[320];

    for (int i = 0; nestcp_label_keys[i]; i++)
        if (!same_str(str(base, nestcp_label_keys[i]), str(labels, nestcp_label_keys[i]))) {
            str_printf(p, sizeof(p), "%s[%s]", path, nestcp_label_keys[i]);
            return refuse(g, p, "nestcp's label may not be changed");
        }
    return 0;
}

static int check_service(struct gate *g)
{
    const cJSON *bs = get(g->base, "spec"), *s = get(g->obj, "spec");

    if (!same_json(get(bs, "selector"), get(s, "selector")))
        return refuse(g, "spec.selector",
                      "may not be changed: it could select another "
                      "cluster's pods");
    if (cJSON_GetArraySize(get(s, "externalIPs")) > 0)
        return refuse(g, "spec.externalIPs", "external IPs are not allowed");
    if (get(s, "externalName"))
        return refuse(g, "spec.externalName", "is not allowed");
    if (!g->opts->allow_privileged && !same_json(get(bs, "type"), get(s, "type")))
        return refuse(g, "spec.type", "may not be changed from \"%s\"",
                      str(bs, "type") ? str(bs, "type") : "ClusterIP");
    return 0;
}

/* A package's ConfigMaps configure its binaries (kube-apiserver's authentication
 * configuration): what they say stays as rendered. */
static int check_configmap(struct gate *g)
{
    static const char *const fields[] = {"data", "binaryData", "immutable"};

    if (g->opts->allow_privileged)
        return 0;
    for (size_t i = 0; i < sizeof(fields) / sizeof(*fields); i++)
        if (!same_json(get(g->base, fields[i]), get(g->obj, fields[i])))
            return refuse(g, fields[i],
                          "may not be changed: the package's configuration of its binaries "
                          "stays as rendered");
    return 0;
}

/* A NetworkPolicy that selected other pods would isolate them (another cluster's, in a shared
 * namespace): its pods stay the package's. */
static int check_networkpolicy(struct gate *g)
{
    if (!same_json(get(get(g->base, "spec"), "podSelector"),
                   get(get(g->obj, "spec"), "podSelector")))
        return refuse(g, "spec.podSelector",
                      "may not be changed: it could select another cluster's pods");
    return 0;
}

static int check_workload(struct gate *g)
{
    const cJSON *bpod = render_pod_spec(g->base), *pod = render_pod_spec(g->obj);
    const char *ppath = "spec.template.spec";
    struct refs allowed;
    struct check_refs cr = {g, &allowed};
    int r;

    memset(&allowed, 0, sizeof(allowed));
    if (!pod)
        return 0;
    if (!same_json(get(get(g->base, "spec"), "selector"), get(get(g->obj, "spec"), "selector")))
        return refuse(g, "spec.selector", "may not be changed");
    if ((r = check_labels(g, get(get(get(get(g->base, "spec"), "template"), "metadata"), "labels"),
                          get(get(get(get(g->obj, "spec"), "template"), "metadata"), "labels"),
                          "spec.template.metadata.labels")) < 0)
        return r;
    each_ref(bpod, ppath, collect_ref, &allowed);
    {
        const cJSON *t;
        cJSON_ArrayForEach(t, get(get(g->base, "spec"), "volumeClaimTemplates"))
            ref_add(&allowed, REF_CLAIM, str(get(t, "metadata"), "name"));
    }
    if ((r = each_ref(pod, ppath, check_ref, &cr)) < 0)
        return r;
    if (g->opts->allow_privileged)
        return 0;
    if ((r = check_privilege(g, pod, ppath)) < 0 ||
        (r = check_restricted(g, bpod, pod, ppath)) < 0 ||
        (r = check_placement(g, bpod, pod, ppath)) < 0)
        return r;
    return check_flags(g, bpod, pod, ppath);
}

static int check_object(struct gate *g)
{
    const cJSON *bm = get(g->base, "metadata"), *m = get(g->obj, "metadata");
    const char *kind = str(g->obj, "kind");
    int r;

    if (!same_str(str(g->base, "apiVersion"), str(g->obj, "apiVersion")) ||
        !same_str(str(g->base, "kind"), kind))
        return refuse(g, "kind", "may not be changed from %s %s", str(g->base, "apiVersion"),
                      str(g->base, "kind"));
    if (!same_str(str(bm, "name"), str(m, "name")))
        return refuse(g, "metadata.name", "may not be changed from \"%s\"", str(bm, "name"));
    if (!same_str(str(bm, "namespace"), str(m, "namespace")))
        return refuse(g, "metadata.namespace",
                      "may not be changed from \"%s\": a component's objects live in its "
                      "cluster's namespace",
                      str(bm, "namespace"));
    if (get(m, "ownerReferences"))
        return refuse(g, "metadata.ownerReferences", "may not be set; nestcp sets the owner");
    if ((r = check_labels(g, get(bm, "labels"), get(m, "labels"), "metadata.labels")) < 0)
        return r;
    if (same_str(kind, "Service"))
        return check_service(g);
    if (same_str(kind, "ConfigMap"))
        return check_configmap(g);
    if (same_str(kind, "NetworkPolicy"))
        return check_networkpolicy(g);
    return check_workload(g);
}

int render_gate_check(const cJSON *baseline, const cJSON *objects, const char *component,
                      const struct render_gate_opts *opts, struct err *e)
{
    static const struct render_gate_opts none = {0};
    struct gate g = {.opts = opts ? opts : &none, .component = component, .e = e};
    const cJSON *b = baseline ? baseline->child : NULL, *o = objects ? objects->child : NULL;
    int r;

    for (; b && o; b = b->next, o = o->next) {
        g.base = b;
        g.obj = o;
        what_of(b, &g.w);
        if ((r = check_object(&g)) < 0)
            return r;
    }
    if (b || o)
        return err_set(e, -EINVAL,
                       "patches may not add or remove objects (%d rendered, %d after "
                       "patches)",
                       cJSON_GetArraySize(baseline), cJSON_GetArraySize(objects));
    return 0;
}
