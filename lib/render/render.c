#include "lib/render/render.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/gate.h"
#include "lib/render/patch.h"
#include "lib/render/tmpl.h"
#include "lib/render/transform.h"
#include "lib/util/yamlconv.h"

#define NAME_MAX_LEN                                                                               \
    52 /* a StatefulSet name leaves room for the controller-revision-hash label                    \
        */

static const struct {
    const char *component, *short_name;
} components[] = {
    {"etcd", "etcd"},
    {"kube-apiserver", "apiserver"},
    {"kube-controller-manager", "controller-manager"},
};

const char *render_component_short_name(const char *component)
{
    for (size_t i = 0; component && i < sizeof(components) / sizeof(components[0]); i++)
        if (strcmp(components[i].component, component) == 0)
            return components[i].short_name;
    return NULL;
}

static int oom(struct err *e)
{
    return err_set(e, -ENOMEM, "out of memory");
}

static const cJSON *get(const cJSON *obj, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* A string field: absent or null gives def; anything but a string is an error. */
static int get_string(const cJSON *obj, const char *key, const char *path, const char *def,
                      const char **ret, struct err *e)
{
    const cJSON *v = get(obj, key);

    *ret = def; /* also on error, so that no caller reads an unset value */
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsString(v))
        return err_set(e, -EINVAL, "%s: must be a string", path);
    *ret = v->valuestring;
    return 0;
}

static int get_int(const cJSON *obj, const char *key, const char *path, int def, int min, int max,
                   int *ret, struct err *e)
{
    const cJSON *v = get(obj, key);

    *ret = def; /* also on error */
    if (!v || cJSON_IsNull(v))
        return 0;
    if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble ||
        v->valuedouble < min || v->valuedouble > max)
        return err_set(e, -EINVAL, "%s: must be an integer from %d to %d", path, min, max);
    *ret = (int)v->valuedouble;
    return 0;
}

static bool dns_label(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

/* Sets ctx[key] = v (takes v; NULL means out of memory). */
static int put(cJSON *ctx, const char *key, cJSON *v)
{
    if (!v)
        return -ENOMEM;
    cJSON_DeleteItemFromObjectCaseSensitive(ctx, key);
    if (!cJSON_AddItemToObject(ctx, key, v)) {
        cJSON_Delete(v);
        return -ENOMEM;
    }
    return 0;
}

static int put_str(cJSON *obj, const char *key, const char *s)
{
    return put(obj, key, cJSON_CreateString(s));
}

static int put_fmt(cJSON *obj, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int put_fmt(cJSON *obj, const char *key, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(buf))
        return -ENOBUFS;
    return put_str(obj, key, buf);
}

/* A list of non-empty strings (or the default list when absent). */
static int string_list(const cJSON *v, const char *path, const char *def, cJSON **ret,
                       struct err *e)
{
    const cJSON *it;

    if (!v || cJSON_IsNull(v)) {
        *ret = cJSON_CreateArray();
        if (!*ret || !cJSON_AddItemToArray(*ret, cJSON_CreateString(def)))
            return oom(e);
        return 0;
    }
    if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
        return err_set(e, -EINVAL, "%s: must be a non-empty list of strings", path);
    cJSON_ArrayForEach(it, v)
        if (!cJSON_IsString(it) || !it->valuestring[0])
            return err_set(e, -EINVAL, "%s: must be a non-empty list of strings", path);
    if (!(*ret = cJSON_Duplicate(v, true)))
        return oom(e);
    return 0;
}

static int build_network(const cJSON *values, cJSON *ctx, struct err *e)
{
    const cJSON *net = get(values, "network");
    const char *domain;
    cJSON *out = cJSON_CreateObject(), *l = NULL;
    int r;

    if (!out)
        return oom(e);
    if (net && !cJSON_IsNull(net) && !cJSON_IsObject(net))
        r = err_set(e, -EINVAL, "network: must be an object");
    else if ((r = string_list(get(net, "serviceCIDRs"), "network.serviceCIDRs", "10.96.0.0/12", &l,
                              e)) == 0 &&
             (r = put(out, "serviceCIDRs", l)) == 0 &&
             (r = string_list(get(net, "podCIDRs"), "network.podCIDRs", "10.244.0.0/16", &l, e)) ==
                 0 &&
             (r = put(out, "podCIDRs", l)) == 0 &&
             (r = get_string(net, "serviceDomain", "network.serviceDomain", "cluster.local",
                             &domain, e)) == 0)
        r = put_str(out, "serviceDomain", domain);
    if (r == 0 && cJSON_GetArraySize(get(out, "serviceCIDRs")) > 2)
        r = err_set(e, -EINVAL, "network.serviceCIDRs: at most one IPv4 and one IPv6 range");
    if (r < 0) {
        cJSON_Delete(out);
        return r == -ENOMEM ? oom(e) : r;
    }
    return put(ctx, "network", out) < 0 ? oom(e) : 0;
}

/* etcd members and URLs, derived from the cluster name, namespace and the etcd size. */
static int build_etcd(const cJSON *values, const char *cluster, const char *ns,
                      const char *component, int replicas, cJSON *ctx, struct err *e)
{
    const cJSON *ev = get(values, "etcd"), *eps = get(ev, "endpoints"),
                *ll = get(ev, "listenLoopback");
    const char *sdomain;
    char suffix[300], init[8192], host[400];
    size_t used = 0;
    int size, r;
    cJSON *out = cJSON_CreateObject(), *members = cJSON_CreateArray(), *urls = cJSON_CreateArray();

    if (!out || !members || !urls) {
        r = oom(e);
        goto fail;
    }
    if (ev && !cJSON_IsNull(ev) && !cJSON_IsObject(ev)) {
        r = err_set(e, -EINVAL, "etcd: must be an object");
        goto fail;
    }
    if ((r = get_string(values, "superClusterDomain", "superClusterDomain", "", &sdomain, e)) < 0)
        goto fail;
    snprintf(suffix, sizeof(suffix), "%s-etcd.%s.svc%s%s", cluster, ns, *sdomain ? "." : "",
             sdomain);
    if (strcmp(component, "etcd") == 0) {
        size = replicas;
    } else if ((r = get_int(ev, "replicas", "etcd.replicas", 1, 1, 9, &size, e)) < 0) {
        goto fail;
    }
    init[0] = '\0';
    for (int i = 0; i < size; i++) {
        cJSON *m = cJSON_CreateObject();
        if (!m || !cJSON_AddItemToArray(members, m)) {
            cJSON_Delete(m);
            r = oom(e);
            goto fail;
        }
        snprintf(host, sizeof(host), "%s-etcd-%d.%s", cluster, i, suffix);
        if (put_fmt(m, "name", "%s-etcd-%d", cluster, i) < 0 || put_str(m, "host", host) < 0 ||
            put_fmt(m, "peerURL", "https://%s:2380", host) < 0 ||
            put_fmt(m, "clientURL", "https://%s:2379", host) < 0) {
            r = oom(e);
            goto fail;
        }
        used += (size_t)snprintf(init + used, sizeof(init) - used, "%s%s-etcd-%d=https://%s:2380",
                                 i ? "," : "", cluster, i, host);
        if (used >= sizeof(init)) {
            r = err_set(e, -EINVAL, "etcd: initial cluster too long");
            goto fail;
        }
    }
    if (eps && !cJSON_IsNull(eps) && strcmp(component, "etcd") != 0) {
        cJSON_Delete(urls);
        urls = NULL;
        if ((r = string_list(eps, "etcd.endpoints", "", &urls, e)) < 0)
            goto fail;
    } else {
        const cJSON *m;
        cJSON_ArrayForEach(m, members)
            if (!cJSON_AddItemToArray(urls, cJSON_CreateString(get(m, "clientURL")->valuestring))) {
                r = oom(e);
                goto fail;
            }
    }
    if (ll && !cJSON_IsNull(ll) && !cJSON_IsBool(ll)) {
        r = err_set(e, -EINVAL, "etcd.listenLoopback: must be a bool");
        goto fail;
    }
    /* put() takes ownership of members and urls whether or not it succeeds. */
    r = put(out, "members", members);
    members = NULL;
    if (r == 0)
        r = put(out, "clientURLs", urls);
    urls = NULL;
    if (r < 0 || put(out, "replicas", cJSON_CreateNumber(size)) < 0 ||
        put_str(out, "initialCluster", init) < 0 ||
        put_fmt(out, "initialClusterToken", "%s-%s-etcd", ns, cluster) < 0 ||
        put_str(out, "domain", suffix) < 0 ||
        put(out, "listenLoopback", cJSON_CreateBool(cJSON_IsTrue(ll))) < 0) {
        r = oom(e);
        goto fail;
    }
    return put(ctx, "etcd", out) < 0 ? oom(e) : 0;
fail:
    cJSON_Delete(members);
    cJSON_Delete(urls);
    cJSON_Delete(out);
    return r;
}

/* The one Secret a component mounts: its certificates, keys and kubeconfig
 * (lib/render/cluster.h builds it). */
static int build_secrets(const cJSON *values, const char *cluster, const char *short_name,
                         cJSON *ctx, struct err *e)
{
    const cJSON *sv = get(values, "secrets"), *it;
    const char *v;
    cJSON *out;
    int r;

    if (sv && !cJSON_IsNull(sv) && !cJSON_IsObject(sv))
        return err_set(e, -EINVAL, "secrets: must be an object");
    cJSON_ArrayForEach(it, sv) {
        if (strcmp(it->string, "certs") != 0)
            return err_set(e, -EINVAL, "secrets.%s: unknown Secret role", it->string);
    }
    if ((r = get_string(sv, "certs", "secrets.certs", NULL, &v, e)) < 0)
        return r;
    if (v && !dns_label(v, 253))
        return err_set(e, -EINVAL, "secrets.certs: \"%s\" is not a valid Secret name", v);
    if (!(out = cJSON_CreateObject()))
        return oom(e);
    r = v ? put_str(out, "certs", v) : put_fmt(out, "certs", "%s-%s-certs", cluster, short_name);
    if (r < 0) {
        cJSON_Delete(out);
        return oom(e);
    }
    return put(ctx, "secrets", out) < 0 ? oom(e) : 0;
}

static int check_feature_gates(const struct render_package *pkg, const char *version,
                               const cJSON *gates, cJSON *ctx, struct err *e)
{
    const cJSON *it;
    cJSON *copy;

    if (gates && !cJSON_IsNull(gates) && !cJSON_IsObject(gates))
        return err_set(e, -EINVAL, "featureGates: must be an object of booleans");
    cJSON_ArrayForEach(it, gates) {
        int locked;
        if (!cJSON_IsBool(it))
            return err_set(e, -EINVAL, "featureGates.%s: must be true or false", it->string);
        if (!render_package_knows_feature_gate(pkg, it->string, &locked))
            return err_set(e, -EINVAL, "featureGates.%s: not a feature gate of %s %s", it->string,
                           render_package_component(pkg), version);
        if (locked >= 0 && cJSON_IsTrue(it) != (locked == 1))
            return err_set(e, -EINVAL, "featureGates.%s: locked to %s in %s %s", it->string,
                           locked ? "true" : "false", render_package_component(pkg), version);
    }
    copy = gates && cJSON_IsObject(gates) ? cJSON_Duplicate(gates, true) : cJSON_CreateObject();
    return put(ctx, "featureGates", copy) < 0 ? oom(e) : 0;
}

static int check_extra_args(const struct render_package *pkg, const char *version,
                            const cJSON *args, struct err *e)
{
    const cJSON *it;

    if (args && !cJSON_IsNull(args) && !cJSON_IsObject(args))
        return err_set(e, -EINVAL, "extraArgs: must be an object");
    cJSON_ArrayForEach(it, args) {
        if (!render_package_knows_flag(pkg, it->string))
            return err_set(e, -EINVAL, "extraArgs.%s: %s %s has no flag --%s", it->string,
                           render_package_component(pkg), version, it->string);
        if (strcmp(it->string, "feature-gates") == 0)
            return err_set(e, -EINVAL, "extraArgs.feature-gates: use featureGates instead");
    }
    return 0;
}

static int build_labels(cJSON *ctx, const char *cluster, const char *component,
                        const char *short_name, struct err *e)
{
    cJSON *sel = cJSON_CreateObject(), *all = NULL;

    if (!sel || put_str(sel, "cluster.x-k8s.io/cluster-name", cluster) < 0 ||
        put_str(sel, "app.kubernetes.io/component", short_name) < 0 ||
        !(all = cJSON_Duplicate(sel, true)) ||
        put_str(all, "app.kubernetes.io/name", component) < 0 ||
        put_str(all, "app.kubernetes.io/managed-by", "nestcp") < 0) {
        cJSON_Delete(sel);
        cJSON_Delete(all);
        return oom(e);
    }
    if (put(ctx, "selectorLabels", sel) < 0) {
        cJSON_Delete(all);
        return oom(e);
    }
    return put(ctx, "labels", all) < 0 ? oom(e) : 0;
}

static int build_storage(const cJSON *values, cJSON *ctx, struct err *e)
{
    const cJSON *sv = get(values, "storage");
    const char *type, *size, *cls, *limit;
    cJSON *out;
    int r;

    if (sv && !cJSON_IsNull(sv) && !cJSON_IsObject(sv))
        return err_set(e, -EINVAL, "storage: must be an object");
    if ((r = get_string(sv, "type", "storage.type", "persistentVolumeClaim", &type, e)) < 0 ||
        (r = get_string(sv, "size", "storage.size", "1Gi", &size, e)) < 0 ||
        (r = get_string(sv, "sizeLimit", "storage.sizeLimit", "", &limit, e)) < 0 ||
        (r = get_string(sv, "storageClassName", "storage.storageClassName", "", &cls, e)) < 0)
        return r;
    if (strcmp(type, "emptyDir") && strcmp(type, "persistentVolumeClaim"))
        return err_set(e, -EINVAL, "storage.type: \"%s\" is not emptyDir or persistentVolumeClaim",
                       type);
    if (!(out = cJSON_CreateObject()) || put_str(out, "type", type) < 0 ||
        put_str(out, "size", size) < 0 || put_str(out, "storageClassName", cls) < 0 ||
        put_str(out, "sizeLimit", limit) < 0) {
        cJSON_Delete(out);
        return oom(e);
    }
    return put(ctx, "storage", out) < 0 ? oom(e) : 0;
}

/* The manager's Pods, which reach etcd (membership and snapshots): the label of
 * config/manager's Deployment, in managerNamespace. */
#define MANAGER_POD_LABEL_KEY "control-plane"
#define MANAGER_POD_LABEL_VALUE "controller-manager"

static int build_network_policy(const cJSON *values, cJSON *ctx, struct err *e)
{
    const cJSON *np = get(values, "networkPolicy"), *en = get(np, "enabled"), *cidrs, *c;
    const char *mns;
    cJSON *out, *list, *labels;
    int r;

    if (np && !cJSON_IsNull(np) && !cJSON_IsObject(np))
        return err_set(e, -EINVAL, "networkPolicy: must be an object");
    if (en && !cJSON_IsNull(en) && !cJSON_IsBool(en))
        return err_set(e, -EINVAL, "networkPolicy.enabled: must be true or false");
    if ((r = get_string(np, "managerNamespace", "networkPolicy.managerNamespace", "nestcp-system",
                        &mns, e)) < 0)
        return r;
    if (!dns_label(mns, 63))
        return err_set(e, -EINVAL, "networkPolicy.managerNamespace: \"%s\" is not a namespace",
                       mns);
    cidrs = get(np, "apiServerAllowedCIDRs");
    if (cidrs && !cJSON_IsNull(cidrs) && (!cJSON_IsArray(cidrs) || cJSON_GetArraySize(cidrs) > 64))
        return err_set(e, -EINVAL,
                       "networkPolicy.apiServerAllowedCIDRs: must be a list of at "
                       "most 64 CIDRs");
    if (!(out = cJSON_CreateObject()) || put(ctx, "networkPolicy", out) < 0 ||
        !cJSON_AddBoolToObject(out, "enabled", !cJSON_IsFalse(en)) ||
        put_str(out, "managerNamespace", mns) < 0 ||
        !(labels = cJSON_AddObjectToObject(out, "managerLabels")) ||
        put_str(labels, MANAGER_POD_LABEL_KEY, MANAGER_POD_LABEL_VALUE) < 0 ||
        !(list = cJSON_AddArrayToObject(out, "apiServerAllowedCIDRs")))
        return oom(e);
    cJSON_ArrayForEach(c, cidrs) {
        if (!cJSON_IsString(c) || !*c->valuestring || strlen(c->valuestring) > 64 ||
            strspn(c->valuestring, "0123456789abcdefABCDEF.:/") != strlen(c->valuestring))
            return err_set(e, -EINVAL, "networkPolicy.apiServerAllowedCIDRs: \"%s\" is not a CIDR",
                           cJSON_IsString(c) ? c->valuestring : "(not a string)");
        if (!cJSON_AddItemToArray(list, cJSON_CreateString(c->valuestring)))
            return oom(e);
    }
    return 0;
}

int render_context(const struct render_catalog *c, const cJSON *values,
                   const struct render_package **ret_pkg, cJSON **ret_ctx, struct err *e)
{
    const struct render_package *pkg = NULL;
    const cJSON *cl = get(values, "cluster"), *v;
    const char *cluster, *ns, *component, *short_name, *version, *channel, *image, *reg, *issuer,
        *stype, *ihash;
    char resolved[RENDER_VERSION_MAX], img[512], objname[128];
    cJSON *ctx = NULL, *o;
    int replicas, sa_max, r;

    if (!cJSON_IsObject(values))
        return err_set(e, -EINVAL, "values: must be an object");
    if ((r = get_string(cl, "name", "cluster.name", NULL, &cluster, e)) < 0 ||
        (r = get_string(cl, "namespace", "cluster.namespace", NULL, &ns, e)) < 0 ||
        (r = get_string(values, "component", "component", NULL, &component, e)) < 0)
        return r;
    if (!cluster || !dns_label(cluster, 63))
        return err_set(e, -EINVAL, "cluster.name: required, a DNS label");
    if (!ns || !dns_label(ns, 63))
        return err_set(e, -EINVAL, "cluster.namespace: required, a DNS label");
    if (!(short_name = render_component_short_name(component)))
        return err_set(e, -EINVAL,
                       "component: \"%s\" is not etcd, kube-apiserver or kube-controller-manager",
                       component ? component : "");
    if (snprintf(objname, sizeof(objname), "%s-%s", cluster, short_name) > NAME_MAX_LEN ||
        strlen(cluster) + strlen("-controller-manager") > NAME_MAX_LEN)
        return err_set(e, -EINVAL,
                       "cluster.name: \"%s\" is too long for object names of at most "
                       "%d characters",
                       cluster, NAME_MAX_LEN);
    if ((r = get_string(values, "version", "version", "", &version, e)) < 0 ||
        (r = get_string(values, "channel", "channel", "", &channel, e)) < 0)
        return r;
    if ((r = render_catalog_resolve(c, component, version, channel, &pkg, resolved, e)) < 0)
        return err_prefix(e, "%s: ", *version ? "version" : "channel");
    if ((r = get_int(values, "replicas", "replicas", 1, 1, 9, &replicas, e)) < 0)
        return r;
    if (strcmp(component, "etcd") == 0 && replicas % 2 == 0)
        return err_set(e, -EINVAL, "replicas: an etcd cluster needs an odd number of members");
    if ((r = get_string(values, "image", "image", "", &image, e)) < 0 ||
        (r = get_string(values, "imageRegistry", "imageRegistry", "", &reg, e)) < 0 ||
        (r = get_string(values, "inputsHash", "inputsHash", "", &ihash, e)) < 0)
        return r;
    if (!*image) {
        if (render_package_image(pkg, resolved, img, sizeof(img)) < 0)
            return err_set(e, -EINVAL, "image: too long");
        image = img;
    }
    if (!(ctx = cJSON_CreateObject()))
        return oom(e);
    o = cJSON_CreateObject();
    if (put(ctx, "cluster", o) < 0 || put_str(o, "name", cluster) < 0 ||
        put_str(o, "namespace", ns) < 0 || put_str(ctx, "component", component) < 0 ||
        put_str(ctx, "componentShort", short_name) < 0 || put_str(ctx, "version", resolved) < 0 ||
        put_str(ctx, "packageLine", render_package_line(pkg)) < 0 ||
        put(ctx, "replicas", cJSON_CreateNumber(replicas)) < 0 ||
        put_str(ctx, "image", image) < 0 || put_str(ctx, "imageRegistry", reg) < 0 ||
        put_str(ctx, "inputsHash", ihash) < 0 || put_str(ctx, "name", objname) < 0 ||
        !(o = cJSON_CreateObject()) || put(ctx, "names", o) < 0 ||
        put_fmt(o, "etcd", "%s-etcd", cluster) < 0 ||
        put_fmt(o, "apiserver", "%s-apiserver", cluster) < 0 ||
        put_fmt(o, "controllerManager", "%s-controller-manager", cluster) < 0) {
        r = oom(e);
        goto fail;
    }
    if ((r = build_network(values, ctx, e)) < 0 ||
        (r = build_labels(ctx, cluster, component, short_name, e)) < 0 ||
        (r = build_etcd(values, cluster, ns, component, replicas, ctx, e)) < 0 ||
        (r = build_secrets(values, cluster, short_name, ctx, e)) < 0 ||
        (r = build_storage(values, ctx, e)) < 0 || (r = build_network_policy(values, ctx, e)) < 0 ||
        (r = check_feature_gates(pkg, resolved, get(values, "featureGates"), ctx, e)) < 0 ||
        (r = check_extra_args(pkg, resolved, get(values, "extraArgs"), e)) < 0)
        goto fail;
    if (strcmp(component, "etcd") == 0 && cJSON_GetArraySize(get(ctx, "featureGates")) > 0) {
        r = err_set(e, -EINVAL, "featureGates: etcd has no feature gates");
        goto fail;
    }
    v = get(values, "resources");
    if (v && !cJSON_IsNull(v) && !cJSON_IsObject(v)) {
        r = err_set(e, -EINVAL, "resources: must be an object");
        goto fail;
    }
    if ((r = get_string(values, "serviceAccountIssuer", "serviceAccountIssuer", NULL, &issuer, e)) <
        0)
        goto fail;
    if ((r = get_int(get(values, "serviceAccount"), "maxTokenExpirationSeconds",
                     "serviceAccount.maxTokenExpirationSeconds", RENDER_SA_MAX_TOKEN_EXPIRATION,
                     3600, 31536000, &sa_max, e)) < 0)
        goto fail;
    if ((r = get_string(get(values, "apiserver"), "serviceType", "apiserver.serviceType",
                        "ClusterIP", &stype, e)) < 0)
        goto fail;
    if (strcmp(stype, "ClusterIP") && strcmp(stype, "NodePort") && strcmp(stype, "LoadBalancer")) {
        r = err_set(e, -EINVAL,
                    "apiserver.serviceType: \"%s\" is not ClusterIP, NodePort or "
                    "LoadBalancer",
                    stype);
        goto fail;
    }
    if (put(ctx, "resources",
            v && cJSON_IsObject(v) ? cJSON_Duplicate(v, true) : cJSON_CreateObject()) < 0 ||
        (issuer ? put_str(ctx, "serviceAccountIssuer", issuer)
                : put_fmt(ctx, "serviceAccountIssuer", "https://kubernetes.default.svc.%s",
                          get(get(ctx, "network"), "serviceDomain")->valuestring)) < 0 ||
        !(o = cJSON_CreateObject()) || put(ctx, "apiserver", o) < 0 ||
        put_str(o, "serviceType", stype) < 0 || !(o = cJSON_CreateObject()) ||
        put(ctx, "serviceAccount", o) < 0 ||
        put(o, "maxTokenExpirationSeconds", cJSON_CreateNumber(sa_max)) < 0) {
        r = oom(e);
        goto fail;
    }
    if (ret_pkg)
        *ret_pkg = pkg;
    *ret_ctx = ctx;
    return 0;
fail:
    cJSON_Delete(ctx);
    return r;
}

/* Every object needs apiVersion, kind and metadata.name; namespaced ones get the cluster's
 * namespace. */
static int check_objects(const cJSON *objects, const char *ns, struct err *e)
{
    cJSON *obj;

    cJSON_ArrayForEach(obj, objects) {
        cJSON *meta = (cJSON *)get(obj, "metadata");
        if (!cJSON_IsObject(obj) || !cJSON_IsString(get(obj, "apiVersion")) ||
            !cJSON_IsString(get(obj, "kind")) || !cJSON_IsObject(meta) ||
            !cJSON_IsString(get(meta, "name")))
            return err_set(e, -EINVAL,
                           "template output: every object needs apiVersion, kind and "
                           "metadata.name");
        if (!get(meta, "namespace") && put_str(meta, "namespace", ns) < 0)
            return oom(e);
    }
    return 0;
}

int render_component(const struct render_catalog *c, const cJSON *values, cJSON **ret_objects,
                     struct err *e)
{
    const struct render_package *pkg;
    cJSON *ctx = NULL, *objects = NULL, *docs = NULL, *baseline = NULL;
    struct render_gate_opts gate = {0};
    const char *ns, *reg, *ihash, *component;
    int r;

    if ((r = render_context(c, values, &pkg, &ctx, e)) < 0)
        return r;
    component = get(ctx, "component")->valuestring;
    if (!(objects = cJSON_CreateArray())) {
        r = oom(e);
        goto out;
    }
    for (int i = 0; i < render_package_template_count(pkg); i++) {
        if ((r = tmpl_execute(render_package_template(pkg, i), ctx, &docs, e)) < 0)
            goto out;
        while (docs->child)
            cJSON_AddItemToArray(objects, cJSON_DetachItemViaPointer(docs, docs->child));
        cJSON_Delete(docs);
        docs = NULL;
        if (cJSON_GetArraySize(objects) > RENDER_MAX_OBJECTS) {
            r = err_set(e, -ENOBUFS, "templates render more than %d objects", RENDER_MAX_OBJECTS);
            goto out;
        }
    }
    ns = get(get(ctx, "cluster"), "namespace")->valuestring;
    reg = get(ctx, "imageRegistry")->valuestring;
    ihash = get(ctx, "inputsHash")->valuestring;
    if ((r = check_objects(objects, ns, e)) < 0 ||
        (r = render_transform_registry(objects, reg, e)) < 0)
        goto out;
    /* What the package renders, for the security gate to compare the user's changes with. */
    if (!(baseline = cJSON_Duplicate(objects, true))) {
        r = oom(e);
        goto out;
    }
    gate.allow_privileged = cJSON_IsTrue(get(get(values, "security"), "allowPrivileged"));
    if ((r = render_patch_extra_args(objects, component, get(values, "extraArgs"), e)) < 0 ||
        (r = render_patch_apply_all(objects, get(values, "patches"), e)) < 0 ||
        (r = check_objects(objects, ns, e)) < 0 ||
        (r = render_gate_check(baseline, objects, component, &gate, e)) < 0 ||
        (r = render_transform_labels(objects, get(ctx, "labels"), e)) < 0 ||
        (r = render_transform_owner(objects, get(values, "owner"), e)) < 0 ||
        (r = render_transform_config_hash(objects, ihash, e)) < 0)
        goto out;
    *ret_objects = objects;
    objects = NULL;
out:
    cJSON_Delete(baseline);
    cJSON_Delete(docs);
    cJSON_Delete(objects);
    cJSON_Delete(ctx);
    return r;
}

int render_emit_yaml(const cJSON *objects, struct buf *out)
{
    return yamlconv_emit_all(objects, out);
}
