#include "api/validate.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/cidr.h"
#include "api/quantity.h"
#include "api/version.h"

#define PATH_LEN 512
#define REVISION_HASH_LEN 10

/* Runs a check and turns "did it add errors" into the return convention. */
static int verdict(const struct api_errors *errs, size_t before)
{
    if (api_errors_oom(errs))
        return -ENOMEM;
    return api_errors_count(errs) > before ? -EINVAL : 0;
}

static void sub(char *out, const char *path, const char *name)
{
    snprintf(out, PATH_LEN, "%s.%s", path, name);
}

/* ---- names ---- */

static bool label_chars(const char *s, size_t n, bool first_alpha)
{
    if (n == 0 || n > 63)
        return false;
    if (first_alpha ? !islower((unsigned char)s[0])
                    : !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return false;
    if (!(islower((unsigned char)s[n - 1]) || isdigit((unsigned char)s[n - 1])))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

bool api_is_dns1123_label(const char *s)
{
    return s && label_chars(s, strlen(s), false);
}

bool api_is_dns1035_label(const char *s)
{
    return s && label_chars(s, strlen(s), true);
}

bool api_is_dns1123_subdomain(const char *s)
{
    size_t len;

    if (!s || (len = strlen(s)) == 0 || len > 253)
        return false;
    for (const char *p = s;;) {
        size_t n = strcspn(p, ".");
        if (!label_chars(p, n, false))
            return false;
        if (p[n] == '\0')
            return true;
        p += n + 1;
    }
}

/* A DNS name for a certificate or endpoint: like a subdomain but case-insensitive, and for
 * SANs a leading "*." wildcard. */
static bool is_host_name(const char *s, bool wildcard)
{
    char lower[254];
    size_t n;

    if (!s)
        return false;
    if (wildcard && strncmp(s, "*.", 2) == 0)
        s += 2;
    n = strlen(s);
    if (n == 0 || n >= sizeof(lower))
        return false;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)s[i]);
    return api_is_dns1123_subdomain(lower);
}

int api_cluster_name_validate(const char *name, const char *path, struct api_errors *errs)
{
    size_t before = api_errors_count(errs);
    size_t len = name ? strlen(name) : 0;

    if (!name || !*name) {
        api_errors_add(errs, path, "is required");
    } else if (!label_chars(name, len, true) && len <= 63) {
        api_errors_add_str(errs, path, name,
                           "is not a valid cluster name (lower-case letters, digits and '-', "
                           "starting with a letter and ending with a letter or digit)");
    } else if (len > API_CLUSTER_NAME_MAX) {
        api_errors_add_str(errs, path, name,
                           "is too long for a cluster name: %zu characters, at most %d, so "
                           "that the derived label \"<name>-controller-manager-<%d-character "
                           "revision hash>\" fits in 63",
                           len, API_CLUSTER_NAME_MAX, REVISION_HASH_LEN);
    }
    return verdict(errs, before);
}

/* ---- versions ---- */

int api_version_validate(const char *version, const char *path, struct api_errors *errs)
{
    struct api_version v;

    if (!version)
        return 0;
    if (api_version_parse(version, &v) < 0) {
        api_errors_add_str(errs, path, version, "is not a version like 1.36.3 or v1.36.3");
        return -EINVAL;
    }
    return 0;
}

static void check_known(const char *version, const char *component, const char *what,
                        const struct api_catalog *cat, const char *path, struct api_errors *errs)
{
    char canon[API_VERSION_MAX_LEN];
    const char *lines;

    if (!version || !cat || !cat->knows_version ||
        api_version_canonical(version, canon, sizeof(canon)) < 0)
        return;
    if (cat->knows_version(cat->ctx, component, canon))
        return;
    lines = cat->supported_lines ? cat->supported_lines(cat->ctx, component) : NULL;
    if (cat->retired_version && cat->retired_version(cat->ctx, component, canon)) {
        size_t oldest = lines ? strcspn(lines, ",") : 0;

        api_errors_add_str(errs, path, version,
                           "is no longer supported (supported lines: %s); a control plane "
                           "already running it is left as it is. Move it to %.*s, the oldest "
                           "supported line, one minor version at a time, each step with a "
                           "nestcp release that still ships that line",
                           lines ? lines : "none", (int)oldest, lines ? lines : "");
        errs->reason = "VersionUnsupported";
        return;
    }
    api_errors_add_str(errs, path, version,
                       "is not %s version the installed packages know (supported lines: %s)", what,
                       lines ? lines : "none");
}

/* ---- network ---- */

static const char *family_name(int family)
{
    return family == AF_INET ? "IPv4" : "IPv6";
}

/* Parses and checks each block of one list; the parsed blocks go to out (NULL where bad). */
static size_t check_blocks(const struct api_strlist *l, const char *path, bool service,
                           struct api_cidr *out, bool *ok, struct api_errors *errs)
{
    char p[PATH_LEN], net[API_CIDR_STRLEN];
    int seen_v4 = -1, seen_v6 = -1;
    size_t n = l->n < 2 ? l->n : 2;

    if (l->n > 2)
        api_errors_add(errs, path,
                       "has %zu blocks; dual-stack allows one IPv4 and one IPv6 "
                       "block",
                       l->n);
    for (size_t i = 0; i < n; i++) {
        struct api_cidr *c = &out[i];
        ok[i] = false;
        snprintf(p, sizeof(p), "%s[%zu]", path, i);
        if (api_cidr_parse(l->items[i], c) < 0) {
            api_errors_add_str(errs, p, l->items[i], "is not a valid CIDR");
            continue;
        }
        if (!api_cidr_host_bits_zero(c)) {
            api_cidr_format_network(c, net, sizeof(net));
            api_errors_add_str(errs, p, l->items[i], "has host bits set; did you mean %s?", net);
            continue;
        }
        int *seen = c->family == AF_INET ? &seen_v4 : &seen_v6;
        if (*seen >= 0) {
            api_errors_add_str(errs, p, l->items[i],
                               "is a second %s block; dual-stack allows one IPv4 and one IPv6 "
                               "block",
                               family_name(c->family));
            continue;
        }
        *seen = (int)i;
        if (service) {
            unsigned size = api_cidr_size_log2(c), bits = api_cidr_bits(c);
            if (size < 4) {
                api_errors_add_str(errs, p, l->items[i],
                                   "is too small for a service range (%u addresses; use /%u "
                                   "or larger)",
                                   1u << size, bits - 4);
                continue;
            }
            if (size > 20) {
                api_errors_add_str(errs, p, l->items[i],
                                   "is too large for a service range (2^%u addresses; use /%u "
                                   "or smaller)",
                                   size, bits - 20);
                continue;
            }
        } else if (api_cidr_size_log2(c) < 1) {
            api_errors_add_str(errs, p, l->items[i], "is too small for a pod range");
            continue;
        }
        ok[i] = true;
    }
    return n;
}

int api_cluster_network_validate(const struct api_cluster_network *net, const char *path,
                                 struct api_errors *errs)
{
    size_t before = api_errors_count(errs);
    char sp[PATH_LEN - 64], pp[PATH_LEN - 64], dp[PATH_LEN];
    struct api_cidr svc[2], pod[2];
    bool svc_ok[2] = {false, false}, pod_ok[2] = {false, false};
    size_t ns, np;

    snprintf(sp, sizeof(sp), "%s.services.cidrBlocks", path);
    snprintf(pp, sizeof(pp), "%s.pods.cidrBlocks", path);
    sub(dp, path, "serviceDomain");
    ns = check_blocks(&net->services, sp, true, svc, svc_ok, errs);
    np = check_blocks(&net->pods, pp, false, pod, pod_ok, errs);
    for (size_t i = 0; i < np; i++) {
        for (size_t j = 0; j < ns; j++) {
            if (pod_ok[i] && svc_ok[j] && api_cidr_overlap(&pod[i], &svc[j])) {
                char p[PATH_LEN + 32];
                snprintf(p, sizeof(p), "%s[%zu]", pp, i);
                api_errors_add_str(errs, p, net->pods.items[i], "overlaps the service range \"%s\"",
                                   net->services.items[j]);
            }
        }
    }
    if (ns == 2 && svc_ok[0] && svc_ok[1] && np > 0 && np < 2)
        api_errors_add(errs, pp,
                       "has one block but services are dual-stack; give one block "
                       "per family or none");
    if (net->service_domain && !api_is_dns1123_subdomain(net->service_domain))
        api_errors_add_str(errs, dp, net->service_domain, "is not a valid DNS domain");
    return verdict(errs, before);
}

/* ---- feature gates and flags ---- */

static bool gate_name_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 128 || !isupper((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]))
            return false;
    return true;
}

int api_feature_gates_validate(const struct api_gates *gates, const char *k8s_version,
                               const struct api_catalog *cat, const char *path,
                               struct api_errors *errs)
{
    size_t before = api_errors_count(errs);
    char canon[API_VERSION_MAX_LEN];
    bool check = k8s_version && cat && cat->knows_feature_gate &&
                 api_version_canonical(k8s_version, canon, sizeof(canon)) == 0;

    for (size_t i = 0; i < gates->n; i++) {
        const char *g = gates->items[i].name;
        if (!gate_name_ok(g))
            api_errors_add_str(errs, path, g,
                               "is not a valid feature gate name (letters and digits, starting "
                               "with an upper-case letter)");
        else if (check && !cat->knows_feature_gate(cat->ctx, canon, g))
            api_errors_add_str(errs, path, g, "is not a feature gate of Kubernetes %s", canon);
    }
    return verdict(errs, before);
}

static bool has_control_chars(const char *s)
{
    for (; s && *s; s++)
        if (iscntrl((unsigned char)*s))
            return true;
    return false;
}

static void check_extra_args(const struct api_strmap *args, const char *path,
                             struct api_errors *errs)
{
    for (size_t i = 0; i < args->n; i++) {
        const char *k = args->items[i].key;
        bool bad_char = false;
        for (const char *p = k; *p; p++)
            bad_char = bad_char || isspace((unsigned char)*p) || !isprint((unsigned char)*p);
        if (!*k)
            api_errors_add_str(errs, path, k, "is not a flag name");
        else if (k[0] == '-')
            api_errors_add_str(errs, path, k, "must be given without leading dashes");
        else if (strchr(k, '='))
            api_errors_add_str(errs, path, k, "must not contain '='; put the value in the map");
        else if (bad_char)
            api_errors_add_str(errs, path, k, "must not contain spaces or control characters");
        else if (strcmp(k, "feature-gates") == 0)
            api_errors_add_str(errs, path, k, "is not allowed here; use featureGates");
        else if (has_control_chars(args->items[i].value))
            api_errors_add_str(errs, path, k,
                               "has a value with a newline or another control character, which "
                               "would read as more than one flag");
    }
}

/* ---- endpoint, certificates, references ---- */

static void check_endpoint(const struct api_endpoint *ep, const char *path, struct api_errors *errs)
{
    char p[PATH_LEN];

    if (!ep->host)
        return;
    sub(p, path, "host");
    if (!*ep->host)
        api_errors_add(errs, p, "is required");
    else if (api_ip_family(ep->host) < 0 && !is_host_name(ep->host, false))
        api_errors_add_str(errs, p, ep->host, "is not a valid host name or IP address");
    sub(p, path, "port");
    if (ep->port < 1 || ep->port > 65535) {
        cJSON *v = cJSON_CreateNumber(ep->port);
        api_errors_add_value(errs, p, v, "is not a port number (1-65535)");
        cJSON_Delete(v);
    }
}

static void check_certificates(const struct api_certificates *c, const char *path,
                               struct api_errors *errs)
{
    char p[PATH_LEN];

    if (c->renew_before_days >= c->validity_days) {
        cJSON *v = cJSON_CreateNumber(c->renew_before_days);
        sub(p, path, "renewBeforeDays");
        api_errors_add_value(errs, p, v, "is not less than validityDays %d", c->validity_days);
        cJSON_Delete(v);
    }
    if (c->validity_days > c->ca_validity_days) {
        cJSON *v = cJSON_CreateNumber(c->validity_days);
        sub(p, path, "validityDays");
        api_errors_add_value(errs, p, v, "is more than caValidityDays %d", c->ca_validity_days);
        cJSON_Delete(v);
    }
    for (size_t i = 0; i < c->extra_sans.n; i++) {
        const char *s = c->extra_sans.items[i];
        snprintf(p, sizeof(p), "%s.extraSANs[%zu]", path, i);
        if (api_ip_family(s) < 0 && !is_host_name(s, true))
            api_errors_add_str(errs, p, s, "is not a DNS name or IP address");
    }
}

static void check_network_policy(const struct api_network_policy *np, const char *path,
                                 struct api_errors *errs)
{
    char p[PATH_LEN];

    for (size_t i = 0; i < np->apiserver_cidrs.n; i++) {
        struct api_cidr c;
        const char *s = np->apiserver_cidrs.items[i];
        snprintf(p, sizeof(p), "%s.apiServerAllowedCIDRs[%zu]", path, i);
        if (api_cidr_parse(s, &c) < 0)
            api_errors_add_str(errs, p, s, "is not a valid CIDR (e.g. 203.0.113.0/24)");
        else if (!api_cidr_host_bits_zero(&c))
            api_errors_add_str(errs, p, s, "has host bits set");
    }
}

/* A component reference: same-namespace, as Cluster API's references are. A namespace in it
 * that is not the control plane's own is refused rather than ignored, so a reference to another
 * namespace fails naming the field instead of waiting for an object that is never looked for. */
static void check_ref(const struct api_object_ref *r, const char *kind, const char *path,
                      const char *ns, struct api_errors *errs)
{
    char p[PATH_LEN];
    size_t glen = strlen(API_GROUP_CONTROLPLANE);

    sub(p, path, "namespace");
    if (r->namespace && *r->namespace && ns && strcmp(r->namespace, ns) != 0)
        api_errors_add_str(errs, p, r->namespace,
                           "is not the control plane's namespace \"%s\": a component must be in "
                           "the namespace of its control plane",
                           ns);
    if (!r->name && !r->kind && !r->api_version)
        return;
    sub(p, path, "name");
    if (!r->name || !*r->name)
        api_errors_add(errs, p, "is required");
    else if (!api_is_dns1123_subdomain(r->name))
        api_errors_add_str(errs, p, r->name, "is not a valid object name");
    sub(p, path, "kind");
    if (r->kind && strcmp(r->kind, kind) != 0)
        api_errors_add_str(errs, p, r->kind, "is not %s", kind);
    sub(p, path, "apiVersion");
    if (r->api_version &&
        (strncmp(r->api_version, API_GROUP_CONTROLPLANE, glen) != 0 || r->api_version[glen] != '/'))
        api_errors_add_str(errs, p, r->api_version, "is not in group %s", API_GROUP_CONTROLPLANE);
}

/* Whether ep is the default api_control_plane_default() derives from the cluster name:
 * <cluster>-apiserver.<namespace>.svc. */
static bool is_derived_endpoint(const struct api_endpoint *ep, const char *cluster, const char *ns)
{
    char host[600];
    int n = snprintf(host, sizeof(host), "%s-apiserver.%s.svc", cluster ? cluster : "",
                     ns ? ns : "default");

    return ep->host && n > 0 && (size_t)n < sizeof(host) && strcmp(ep->host, host) == 0;
}

/* Where the cluster name came from, for error paths. */
static const char *cluster_name_path(const struct api_meta *m, const char *name)
{
    if (name && m->name && name == m->name)
        return "metadata.name";
    if (name && name == api_strmap_get(&m->labels, "cluster.x-k8s.io/cluster-name"))
        return "metadata.labels[cluster.x-k8s.io/cluster-name]";
    return "metadata.ownerReferences[Cluster].name";
}

int api_control_plane_validate(const struct api_control_plane *ncp, const struct api_catalog *cat,
                               struct api_errors *errs)
{
    const struct api_control_plane_spec *s = &ncp->spec;
    size_t before = api_errors_count(errs);
    const char *cluster = api_meta_cluster_name(&ncp->meta);

    bool name_ok =
        api_cluster_name_validate(cluster, cluster_name_path(&ncp->meta, cluster), errs) == 0;

    if (api_version_validate(s->version, "spec.version", errs) == 0)
        check_known(s->version, API_CATALOG_KUBERNETES, "a Kubernetes", cat, "spec.version", errs);
    /* The endpoint defaulted from a bad cluster name is bad for the same reason: only the name
     * is reported, not a field the user never set. */
    if (name_ok || !is_derived_endpoint(&s->control_plane_endpoint, cluster, ncp->meta.namespace))
        check_endpoint(&s->control_plane_endpoint, "spec.controlPlaneEndpoint", errs);
    api_cluster_network_validate(&s->cluster_network, "spec.clusterNetwork", errs);
    api_feature_gates_validate(&s->feature_gates, s->version, cat, "spec.featureGates", errs);
    check_certificates(&s->certificates, "spec.certificates", errs);
    check_network_policy(&s->network_policy, "spec.networkPolicy", errs);
    check_ref(&s->etcd, "NestedEtcd", "spec.etcd", ncp->meta.namespace, errs);
    check_ref(&s->apiserver, "NestedAPIServer", "spec.apiserver", ncp->meta.namespace, errs);
    check_ref(&s->controller_manager, "NestedControllerManager", "spec.controllerManager",
              ncp->meta.namespace, errs);
    return verdict(errs, before);
}

/* ---- components ---- */

static void check_resources(const struct api_resources *r, struct api_errors *errs)
{
    const struct api_strmap *maps[2] = {&r->limits, &r->requests};
    const char *names[2] = {"spec.resources.limits", "spec.resources.requests"};
    char p[PATH_LEN];
    double q, lim;

    for (int m = 0; m < 2; m++) {
        for (size_t i = 0; i < maps[m]->n; i++) {
            const struct api_kv *kv = &maps[m]->items[i];
            snprintf(p, sizeof(p), "%s[%s]", names[m], kv->key);
            if (api_quantity_parse(kv->value, &q) < 0) {
                api_errors_add_str(errs, p, kv->value, "is not a valid quantity");
                continue;
            }
            if (q < 0) {
                api_errors_add_str(errs, p, kv->value, "is negative");
                continue;
            }
            if (m == 1) {
                const char *l = api_strmap_get(&r->limits, kv->key);
                if (l && api_quantity_parse(l, &lim) == 0 && lim >= 0 && q > lim)
                    api_errors_add_str(errs, p, kv->value, "is more than the limit \"%s\"", l);
            }
        }
    }
}

static void check_positive_quantity(const char *s, const char *path, struct api_errors *errs)
{
    double q;

    if (!s)
        return;
    if (api_quantity_parse(s, &q) < 0)
        api_errors_add_str(errs, path, s, "is not a valid quantity");
    else if (q <= 0)
        api_errors_add_str(errs, path, s, "is not a positive size");
}

static void check_storage(const struct api_etcd_storage *st, struct api_errors *errs)
{
    if (st->both_set)
        api_errors_add(errs, "spec.storage",
                       "emptyDir and persistentVolumeClaim are mutually exclusive");
    check_positive_quantity(st->size_limit, "spec.storage.emptyDir.sizeLimit", errs);
    if (st->kind != API_STORAGE_PVC)
        return;
    if (!st->size)
        api_errors_add(errs, "spec.storage.persistentVolumeClaim.size", "is required");
    check_positive_quantity(st->size, "spec.storage.persistentVolumeClaim.size", errs);
    if (st->storage_class_name && *st->storage_class_name &&
        !api_is_dns1123_subdomain(st->storage_class_name))
        api_errors_add_str(errs, "spec.storage.persistentVolumeClaim.storageClassName",
                           st->storage_class_name, "is not a valid StorageClass name");
}

/* What etcd's membership and data depend on: nestcp sets these per member and changes them
 * only through the membership API, so a replaced value could start a second cluster on an
 * empty data directory, or run a member without its data. */
static const char *const etcd_membership_flags[] = {
    "name",
    "data-dir",
    "wal-dir",
    "initial-cluster",
    "initial-cluster-state",
    "initial-cluster-token",
    "initial-advertise-peer-urls",
    "advertise-client-urls",
    "listen-client-urls",
    "listen-client-http-urls",
    "listen-peer-urls",
    "force-new-cluster",
    "unsafe-no-fsync",
    "discovery",
    "discovery-srv",
    "discovery-srv-name",
};

static void check_etcd_extra_args(const struct api_strmap *args, struct api_errors *errs)
{
    for (size_t i = 0; i < args->n; i++)
        for (size_t j = 0; j < sizeof(etcd_membership_flags) / sizeof(*etcd_membership_flags); j++)
            if (strcmp(args->items[i].key, etcd_membership_flags[j]) == 0)
                api_errors_add_str(errs, "spec.extraArgs", args->items[i].key,
                                   "may not be set: etcd's membership and data depend on it, "
                                   "and nestcp manages it per member");
}

/* An API server or controller manager may run a version of its own (an override of the control
 * plane's): it only has to be a Kubernetes version the packages know. Whether the change is
 * allowed against what runs (no downgrade, one minor at a time, the version skew policy) is the
 * rollout's decision (controllers/rollout.c), not a property of the object. etcd must be at
 * least the version the Kubernetes version of ncp (the API servers') needs. */
static void check_component_version(const struct api_component *c,
                                    const struct api_control_plane *ncp,
                                    const struct api_catalog *cat, struct api_errors *errs)
{
    const char *k8s = ncp ? ncp->spec.version : NULL;
    struct api_version v, need;
    char canon[API_VERSION_MAX_LEN];

    if (!c->spec.version || api_version_validate(c->spec.version, "spec.version", errs) < 0)
        return;
    if (c->kind != API_KIND_NESTED_ETCD) {
        check_known(c->spec.version, API_CATALOG_KUBERNETES, "a Kubernetes", cat, "spec.version",
                    errs);
        return;
    }
    api_version_parse(c->spec.version, &v);
    check_known(c->spec.version, API_CATALOG_ETCD, "an etcd", cat, "spec.version", errs);
    if (k8s && cat && cat->etcd_version_for &&
        api_version_canonical(k8s, canon, sizeof(canon)) == 0) {
        const char *needed = cat->etcd_version_for(cat->ctx, canon);
        if (needed && api_version_parse(needed, &need) == 0 && api_version_cmp(&v, &need) < 0)
            api_errors_add_str(errs, "spec.version", c->spec.version,
                               "is older than %s, the etcd version Kubernetes %s needs", needed,
                               canon);
    }
}

/* The Kubernetes version a component's feature gates are checked against: an API server's or
 * controller manager's own version, else the control plane's. */
static const char *gates_version(const struct api_component *c, const struct api_control_plane *ncp)
{
    struct api_version v;

    if (c->kind != API_KIND_NESTED_ETCD && c->spec.version &&
        api_version_parse(c->spec.version, &v) == 0)
        return c->spec.version;
    return ncp ? ncp->spec.version : NULL;
}

int api_component_validate(const struct api_component *c, const struct api_control_plane *ncp,
                           const struct api_catalog *cat, struct api_errors *errs)
{
    size_t before = api_errors_count(errs);
    const struct api_component_spec *s = &c->spec;
    cJSON *v;

    v = cJSON_CreateNumber(s->replicas);
    if (c->kind == API_KIND_NESTED_ETCD) {
        if (s->replicas < 1 || s->replicas > API_ETCD_MAX_MEMBERS)
            api_errors_add_value(errs, "spec.replicas", v, "is not between 1 and 7");
        else if (s->replicas % 2 == 0)
            api_errors_add_value(errs, "spec.replicas", v,
                                 "is even; etcd needs an odd number of members (1, 3, 5 or 7)");
        check_storage(&s->storage, errs);
        if (s->snapshot_claim && !api_is_dns1123_subdomain(s->snapshot_claim))
            api_errors_add_str(errs, "spec.snapshots.persistentVolumeClaim.claimName",
                               s->snapshot_claim, "is not a valid PersistentVolumeClaim name");
        check_etcd_extra_args(&s->extra_args, errs);
    } else if (s->replicas < 1) {
        api_errors_add_value(errs, "spec.replicas", v, "is less than 1");
    }
    cJSON_Delete(v);
    check_component_version(c, ncp, cat, errs);
    if (s->image && (!*s->image || strpbrk(s->image, " \t\r\n")))
        api_errors_add_str(errs, "spec.image", s->image, "is not a valid image reference");
    check_extra_args(&s->extra_args, "spec.extraArgs", errs);
    api_feature_gates_validate(&s->feature_gates, gates_version(c, ncp), cat, "spec.featureGates",
                               errs);
    check_resources(&s->resources, errs);
    return verdict(errs, before);
}

int api_nested_cluster_validate(const struct api_nested_cluster *nc, struct api_errors *errs)
{
    size_t before = api_errors_count(errs);

    check_endpoint(&nc->control_plane_endpoint, "spec.controlPlaneEndpoint", errs);
    return verdict(errs, before);
}
