/* Resolving one tenant control plane from its API objects (render_cluster_resolve). */

#include "lib/render/cluster.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "api/cidr.h"
#include "api/defaults.h"
#include "api/validate.h"
#include "api/version.h"
#include "lib/render/cluster_internal.h"
#include "lib/render/render.h"
#include "lib/util/strutil.h"

#define CLUSTER_NAME_LABEL "cluster.x-k8s.io/cluster-name"

/* The one table of the components' names. */
static const struct {
    const char *component, *short_name;
    enum api_kind kind;
    const char *field;    /* the NestedControlPlane's spec field, status.rollout's key */
    const char *ref_path; /* the NestedControlPlane's reference */
} parts[RENDER_PART__COUNT] = {
    {"etcd", "etcd", API_KIND_NESTED_ETCD, "etcd", "spec.etcd"},
    {"kube-apiserver", "apiserver", API_KIND_NESTED_APISERVER, "apiserver", "spec.apiserver"},
    {"kube-controller-manager", "controller-manager", API_KIND_NESTED_CONTROLLER_MANAGER,
     "controllerManager", "spec.controllerManager"},
};

const char *render_part_component(enum render_part part)
{
    return part < RENDER_PART__COUNT ? parts[part].component : NULL;
}

const char *render_part_short(enum render_part part)
{
    return part < RENDER_PART__COUNT ? parts[part].short_name : NULL;
}

enum api_kind render_part_kind(enum render_part part)
{
    return part < RENDER_PART__COUNT ? parts[part].kind : API_KIND_COUNT;
}

const char *render_part_field(enum render_part part)
{
    return part < RENDER_PART__COUNT ? parts[part].field : "";
}

const char *render_cluster_ref_path(enum render_part part)
{
    return part < RENDER_PART__COUNT ? parts[part].ref_path : "";
}

const char *render_cluster_kind_name(enum api_kind kind)
{
    return kind == API_KIND_CLUSTER ? "Cluster" : api_kind_info(kind)->name;
}

void render_cluster_what(enum api_kind kind, const char *ns, const char *name, char *out,
                         size_t size)
{
    snprintf(out, size, "%s %.253s/%.253s", render_cluster_kind_name(kind), ns ? ns : "default",
             name ? name : "");
}

const char *render_cluster_meta_str(const cJSON *obj, const char *field)
{
    const cJSON *v =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(obj, "metadata"), field);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

int render_cluster_set_owner(cJSON *obj, const char *api_version, enum api_kind kind,
                             const struct api_meta *meta)
{
    cJSON *md = cJSON_GetObjectItemCaseSensitive(obj, "metadata"), *refs, *ref;
    char av[128];

    if (!meta->uid || !*meta->uid)
        return 0;
    if (!api_version)
        snprintf(av, sizeof(av), "%s/%s", api_kind_info(kind)->group, API_VERSION_STORAGE);
    if (!md || (!(refs = cJSON_GetObjectItemCaseSensitive(md, "ownerReferences")) &&
                !(refs = cJSON_AddArrayToObject(md, "ownerReferences"))))
        return -ENOMEM;
    ref = cJSON_CreateObject();
    if (!ref || !cJSON_AddItemToArray(refs, ref)) {
        cJSON_Delete(ref);
        return -ENOMEM;
    }
    if (!cJSON_AddStringToObject(ref, "apiVersion", api_version ? api_version : av) ||
        !cJSON_AddStringToObject(ref, "kind", render_cluster_kind_name(kind)) ||
        !cJSON_AddStringToObject(ref, "name", meta->name) ||
        !cJSON_AddStringToObject(ref, "uid", meta->uid) ||
        !cJSON_AddTrueToObject(ref, "controller") ||
        !cJSON_AddTrueToObject(ref, "blockOwnerDeletion"))
        return -ENOMEM;
    return 0;
}

/* ---- the validation catalog ---- */

static bool cat_knows_version(void *ctx, const char *component, const char *version)
{
    const struct render_catalog *c = ctx;

    if (strcmp(component, API_CATALOG_ETCD) == 0)
        return render_catalog_package(c, "etcd", version) != NULL;
    return render_catalog_package(c, "kube-apiserver", version) &&
           render_catalog_package(c, "kube-controller-manager", version);
}

static const char *package_component(const char *component)
{
    return strcmp(component, API_CATALOG_ETCD) == 0 ? "etcd" : "kube-apiserver";
}

static bool cat_retired_version(void *ctx, const char *component, const char *version)
{
    return render_catalog_line_retired(ctx, package_component(component), version);
}

static const char *cat_supported_lines(void *ctx, const char *component)
{
    static _Thread_local char lines[256];

    render_catalog_lines(ctx, package_component(component), lines, sizeof(lines));
    return lines;
}

static bool cat_knows_feature_gate(void *ctx, const char *k8s_version, const char *gate)
{
    const struct render_package *p = render_catalog_package(ctx, "kube-apiserver", k8s_version);

    /* A version without a package is reported by the version check; do not pile up a line
     * per gate on top of it. */
    return !p || render_package_knows_feature_gate(p, gate, NULL);
}

static const char *cat_etcd_version_for(void *ctx, const char *k8s_version)
{
    const struct render_package *p = render_catalog_package(ctx, "kube-apiserver", k8s_version);
    const cJSON *v =
        p ? cJSON_GetObjectItemCaseSensitive(render_package_metadata(p), "etcd") : NULL;

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *cat_default_version(void *ctx)
{
    static _Thread_local char version[RENDER_VERSION_MAX];
    const struct render_package *p;

    if (render_catalog_resolve(ctx, "kube-apiserver", NULL, "stable", &p, version, NULL) < 0)
        return NULL;
    return version;
}

struct api_catalog render_cluster_api_catalog(const struct render_catalog *cat)
{
    struct api_catalog ac = {
        .ctx = (void *)cat,
        .knows_version = cat_knows_version,
        .retired_version = cat_retired_version,
        .supported_lines = cat_supported_lines,
        .knows_feature_gate = cat_knows_feature_gate,
        .etcd_version_for = cat_etcd_version_for,
        .default_version = cat_default_version,
    };
    return ac;
}

/* ---- errors ---- */

/* Appends every line of local to errs as "<what>: <line>", skipping lines errs already has. */
void render_cluster_merge_errors(struct api_errors *errs, const struct api_errors *local,
                                 const char *what)
{
    if (!errs)
        return;
    if (api_errors_oom(local))
        errs->oom = true;
    for (size_t i = 0; i < local->n; i++) {
        char line[2048];
        snprintf(line, sizeof(line), "%s: %s", what, local->lines[i]);
        if (!api_errors_contains(errs, line))
            api_errors_add(errs, NULL, "%s", line);
    }
    if (local->dropped)
        api_errors_add(errs, NULL, "%s: ... and %zu more", what, local->dropped);
    if (local->reason && !errs->reason)
        errs->reason = local->reason;
}

static int errs_code(const struct api_errors *errs, int r)
{
    if (errs && api_errors_oom(errs))
        return -ENOMEM;
    return r;
}

/* ---- defaults ---- */

static bool overlaps_services(const struct api_cluster_network *net, const char *cidr)
{
    struct api_cidr a, b;

    if (api_cidr_parse(cidr, &a) < 0)
        return true;
    for (size_t i = 0; i < net->services.n; i++)
        if (api_cidr_parse(net->services.items[i], &b) == 0 && api_cidr_overlap(&a, &b))
            return true;
    return false;
}

/* Pods get a default when neither the control plane nor the Cluster gives one: one block per
 * service family. */
static int default_pods(struct api_cluster_network *net)
{
    bool v4 = false, v6 = false;

    if (net->pods.n > 0)
        return 0;
    for (size_t i = 0; i < net->services.n; i++) {
        int fam = api_ip_family(net->services.items[i]);
        struct api_cidr c;
        if (fam < 0 && api_cidr_parse(net->services.items[i], &c) == 0)
            fam = c.family;
        v4 |= fam == AF_INET;
        v6 |= fam == AF_INET6;
    }
    if (!v4 && !v6)
        v4 = true;
    if (v4 && api_strlist_add(&net->pods, overlaps_services(net, RENDER_CLUSTER_DEFAULT_POD_CIDR)
                                              ? RENDER_CLUSTER_FALLBACK_POD_CIDR
                                              : RENDER_CLUSTER_DEFAULT_POD_CIDR) < 0)
        return -ENOMEM;
    if (v6 && api_strlist_add(&net->pods, RENDER_CLUSTER_DEFAULT_POD_CIDR6) < 0)
        return -ENOMEM;
    return 0;
}

/* ---- versions ---- */

enum vsource { VS_NONE, VS_NCP, VS_VERSION, VS_CHANNEL, VS_DEFAULT };

struct vres {
    enum vsource source;
    const char *given; /* the version or channel as written */
};

static void part_what(const struct render_cluster *rc, int i, char *out, size_t size)
{
    render_cluster_what(parts[i].kind, rc->ns, rc->parts[i].obj->meta.name, out, size);
}

/* Resolves version (or the channel when version is NULL) of component; on success fills the
 * part. On failure the error goes to errs under path of `what` when report is set. */
static void resolve_one(struct render_cluster *rc, int i, const char *version, const char *channel,
                        bool report, const char *what, const char *path, struct api_errors *errs)
{
    struct render_cluster_part *p = &rc->parts[i];
    struct err e = {0};

    if (render_catalog_resolve(rc->cat, parts[i].component, version, channel, &p->pkg, p->version,
                               &e) < 0) {
        p->pkg = NULL;
        p->version[0] = '\0';
        if (report)
            api_errors_add(errs, NULL, "%s: %s: %s", what, path, e.msg);
    }
}

bool render_version_skew_ok(const char *apiserver, const char *controller_manager, char *msg,
                            size_t msgsz)
{
    struct api_version a, c;

    if (!apiserver || !controller_manager || api_version_parse(apiserver, &a) < 0 ||
        api_version_parse(controller_manager, &c) < 0)
        return true;
    if (api_version_cmp(&c, &a) > 0) {
        snprintf(msg, msgsz,
                 "kube-controller-manager %s would be newer than kube-apiserver %s; the version "
                 "skew policy does not allow it",
                 controller_manager, apiserver);
        return false;
    }
    if (a.major != c.major || a.minor > c.minor + 1) {
        snprintf(msg, msgsz,
                 "kube-controller-manager %s would be more than one minor version older than "
                 "kube-apiserver %s",
                 controller_manager, apiserver);
        return false;
    }
    return true;
}

/* A component's own version or channel when it has one (an override of the control plane's
 * version), else the control plane's version, else the stable channel's; a controller manager
 * without any of these follows the API server. */
static void resolve_kubernetes(struct render_cluster *rc, int i, struct vres *vr,
                               const char *ncp_what, struct api_errors *errs)
{
    const char *ncpv = rc->ncp->spec.version;
    const struct api_component *c = rc->parts[i].obj;
    const struct render_cluster_part *api = &rc->parts[RENDER_PART_APISERVER];
    char what[600];

    if (c)
        part_what(rc, i, what, sizeof(what));
    if (c && c->spec.version) {
        *vr = (struct vres){VS_VERSION, c->spec.version};
        resolve_one(rc, i, c->spec.version, NULL, false, what, "spec.version", errs);
    } else if (ncpv) {
        *vr = (struct vres){VS_NCP, ncpv};
        resolve_one(rc, i, ncpv, NULL, false, ncp_what, "spec.version", errs);
    } else if (c && c->spec.channel) {
        *vr = (struct vres){VS_CHANNEL, c->spec.channel};
        resolve_one(rc, i, NULL, c->spec.channel, true, what, "spec.channel", errs);
    } else if (i == RENDER_PART_CONTROLLER_MANAGER && api->version[0]) {
        *vr = (struct vres){VS_DEFAULT, api->version};
        resolve_one(rc, i, api->version, NULL, true, ncp_what, "spec.version", errs);
    } else {
        *vr = (struct vres){VS_DEFAULT, "stable"};
        resolve_one(rc, i, NULL, "stable", true, ncp_what, "spec.version", errs);
    }
}

/* Notes in rc->skew when the controller manager's version and the API server's break the
 * version skew policy, naming the field that chose the version off the policy: the controller
 * manager's own version or channel, else the API server's own version. */
static void note_skew(struct render_cluster *rc, const struct vres vr[RENDER_PART__COUNT],
                      const char *ncp_what)
{
    const char *api = rc->parts[RENDER_PART_APISERVER].version;
    const char *cm = rc->parts[RENDER_PART_CONTROLLER_MANAGER].version;
    const struct vres *by = &vr[RENDER_PART_CONTROLLER_MANAGER];
    int part = RENDER_PART_CONTROLLER_MANAGER;
    char why[256], what[600];

    rc->skew[0] = '\0';
    if (!api[0] || !cm[0] || render_version_skew_ok(api, cm, why, sizeof(why)))
        return;
    if (by->source != VS_VERSION && by->source != VS_CHANNEL) {
        part = RENDER_PART_APISERVER;
        by = &vr[RENDER_PART_APISERVER];
    }
    if (rc->parts[part].obj && (by->source == VS_VERSION || by->source == VS_CHANNEL))
        part_what(rc, part, what, sizeof(what));
    else
        snprintf(what, sizeof(what), "%s", ncp_what);
    snprintf(rc->skew, sizeof(rc->skew), "%s: %s: \"%s\": %s", what,
             by->source == VS_CHANNEL ? "spec.channel" : "spec.version", by->given, why);
}

static void resolve_versions(struct render_cluster *rc, struct vres vr[RENDER_PART__COUNT],
                             struct api_errors *errs)
{
    char ncp_what[600], what[600];

    render_cluster_what(API_KIND_NESTED_CONTROL_PLANE, rc->ns, rc->ncp->meta.name, ncp_what,
                        sizeof(ncp_what));
    for (int i = RENDER_PART_APISERVER; i <= RENDER_PART_CONTROLLER_MANAGER; i++)
        resolve_kubernetes(rc, i, &vr[i], ncp_what, errs);
    /* etcd: its own version or channel, else what the API server's package names. */
    {
        const struct api_component *c = rc->parts[RENDER_PART_ETCD].obj;
        const char *k8s = rc->parts[RENDER_PART_APISERVER].version;
        const struct render_package *kp = rc->parts[RENDER_PART_APISERVER].pkg;
        const cJSON *need =
            kp ? cJSON_GetObjectItemCaseSensitive(render_package_metadata(kp), "etcd") : NULL;
        if (c)
            part_what(rc, RENDER_PART_ETCD, what, sizeof(what));
        if (c && c->spec.version) {
            vr[0] = (struct vres){VS_VERSION, c->spec.version};
            resolve_one(rc, 0, c->spec.version, NULL, false, what, "spec.version", errs);
        } else if (c && c->spec.channel) {
            vr[0] = (struct vres){VS_CHANNEL, c->spec.channel};
            resolve_one(rc, 0, NULL, c->spec.channel, true, what, "spec.channel", errs);
        } else if (cJSON_IsString(need)) {
            vr[0] = (struct vres){VS_DEFAULT, need->valuestring};
            resolve_one(rc, 0, need->valuestring, NULL, true, ncp_what, "spec.version", errs);
        } else {
            vr[0] = (struct vres){VS_DEFAULT, "stable"};
            resolve_one(rc, 0, NULL, "stable", true, ncp_what, "spec.version", errs);
        }
        /* A channel's etcd must still be new enough (a version is checked by api/). */
        if (vr[0].source == VS_CHANNEL && rc->parts[0].version[0] && cJSON_IsString(need)) {
            struct api_version have, want;
            if (api_version_parse(rc->parts[0].version, &have) == 0 &&
                api_version_parse(need->valuestring, &want) == 0 &&
                api_version_cmp(&have, &want) < 0)
                api_errors_add(errs, NULL,
                               "%s: spec.channel: \"%s\" gives etcd %s, older than %s, the etcd "
                               "version Kubernetes %s needs",
                               what, c->spec.channel, rc->parts[0].version, need->valuestring, k8s);
        }
    }
    note_skew(rc, vr, ncp_what);
}

/* ---- checks against the package ---- */

static void check_against_package(struct render_cluster *rc, struct api_errors *errs)
{
    /* The version the control plane's gates were validated against (see validate()). */
    const char *gates_checked =
        rc->ncp->spec.version ? rc->ncp->spec.version : rc->parts[RENDER_PART_APISERVER].version;
    char ncp_what[600], what[600];

    render_cluster_what(API_KIND_NESTED_CONTROL_PLANE, rc->ns, rc->ncp->meta.name, ncp_what,
                        sizeof(ncp_what));
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        struct render_cluster_part *p = &rc->parts[i];
        const struct api_component *c = p->obj;
        if (!c)
            continue;
        part_what(rc, i, what, sizeof(what));
        if (i == RENDER_PART_ETCD && c->spec.feature_gates.n > 0)
            api_errors_add(errs, NULL, "%s: spec.featureGates: etcd has no feature gates", what);
        for (size_t g = 0; p->pkg && i != RENDER_PART_ETCD && g < p->gates.n; g++) {
            const struct api_gate *gate = &p->gates.items[g];
            bool own = api_gates_get(&c->spec.feature_gates, gate->name) != NULL;
            char line[1400];
            int locked;
            if (!render_package_knows_feature_gate(p->pkg, gate->name, &locked)) {
                /* A gate the control plane sets was checked against the control plane's
                 * version; a component that runs a version of its own must know it too. */
                if (!own && gates_checked[0] && !api_version_equal(gates_checked, p->version))
                    api_errors_add(errs, NULL,
                                   "%s: spec.version: \"%s\": %s %s has no feature gate \"%s\", "
                                   "which the NestedControlPlane's spec.featureGates sets",
                                   what, c->spec.version ? c->spec.version : p->version,
                                   parts[i].component, p->version, gate->name);
                continue;
            }
            if (locked < 0 || (locked == 1) == gate->enabled)
                continue;
            snprintf(line, sizeof(line), "%s: spec.featureGates: \"%s\" is locked to %s in %s %s",
                     own ? what : ncp_what, gate->name, locked ? "true" : "false",
                     parts[i].component, p->version);
            if (!api_errors_contains(errs, line))
                api_errors_add(errs, NULL, "%s", line);
        }
        for (size_t a = 0; p->pkg && a < c->spec.extra_args.n; a++) {
            const char *flag = c->spec.extra_args.items[a].key;
            if (*flag && *flag != '-' && !strchr(flag, '=') && strcmp(flag, "feature-gates") &&
                !render_package_knows_flag(p->pkg, flag))
                api_errors_add(errs, NULL, "%s: spec.extraArgs: \"%s\" is not a flag of %s %s",
                               what, flag, parts[i].component, p->version);
        }
    }
}

/* ---- validation ---- */

/* Runs api validation of the control plane and each component, each against the Kubernetes
 * version it will run, and of their combination. */
static void validate(struct render_cluster *rc, const struct api_catalog *ac,
                     struct api_errors *errs)
{
    struct api_control_plane view = *rc->ncp;
    struct api_errors local = API_ERRORS_INIT;
    char what[600];

    if (!view.spec.version && rc->parts[RENDER_PART_APISERVER].version[0])
        view.spec.version = rc->parts[RENDER_PART_APISERVER].version;
    api_control_plane_validate(&view, ac, &local);
    render_cluster_what(API_KIND_NESTED_CONTROL_PLANE, rc->ns, rc->ncp->meta.name, what,
                        sizeof(what));
    render_cluster_merge_errors(errs, &local, what);
    api_errors_done(&local);
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        const struct render_cluster_part *p = &rc->parts[i];
        const char *k8s =
            i == RENDER_PART_ETCD ? rc->parts[RENDER_PART_APISERVER].version : p->version;
        if (!p->obj)
            continue;
        /* A shallow view: validation only reads it. The Kubernetes version is the one the
         * component runs (etcd: the API server's), which may be its own override. */
        view.spec.version = k8s[0] ? (char *)k8s : rc->ncp->spec.version;
        api_errors_init(&local);
        api_component_validate(p->obj, &view, ac, &local);
        part_what(rc, i, what, sizeof(what));
        render_cluster_merge_errors(errs, &local, what);
        api_errors_done(&local);
    }
}

/* The Cluster gave the network and it was reported there already: drop the same line about
 * the control plane, which only inherited it. */
static void drop_inherited_network_lines(struct api_errors *errs, size_t from, const char *cwhat,
                                         const char *nwhat)
{
    size_t clen = strlen(cwhat), nlen = strlen(nwhat), out = from;

    for (size_t i = from; i < errs->n; i++) {
        char *l = errs->lines[i];
        bool dup = false;
        if (strncmp(l, nwhat, nlen) == 0 && strncmp(l + nlen, ": spec.clusterNetwork", 21) == 0) {
            for (size_t j = 0; j < errs->n && !dup; j++)
                dup = strncmp(errs->lines[j], cwhat, clen) == 0 &&
                      strcmp(errs->lines[j] + clen, l + nlen) == 0;
        }
        if (dup)
            free(l);
        else
            errs->lines[out++] = l;
    }
    errs->n = out;
}

/* ---- resolve ---- */

void render_cluster_free(struct render_cluster *rc)
{
    if (!rc)
        return;
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        api_component_free(rc->parts[i].obj);
        free(rc->parts[i].api_version);
        free(rc->parts[i].missing);
        api_gates_done(&rc->parts[i].gates);
    }
    api_control_plane_free(rc->ncp);
    api_capi_cluster_free(rc->capi);
    api_nested_cluster_free(rc->nc);
    free(rc->ncp_api_version);
    free(rc->name);
    free(rc->ns);
    free(rc);
}

/*
 * spec.storage says nothing: a PersistentVolumeClaim of 1Gi in the default StorageClass. An
 * etcd StatefulSet made before that default (no volumeClaimTemplates) keeps its emptyDir, as a
 * StatefulSet's claims cannot change in place; the etcd controller says so (DataNotPersistent).
 */
static int resolve_etcd_storage(struct render_cluster *rc, const struct render_source *src)
{
    struct api_component *etcd = rc->parts[RENDER_PART_ETCD].obj;
    char name[RENDER_CLUSTER_NAME_MAX];
    const cJSON *sts = NULL;

    if (!etcd || etcd->spec.storage.kind != API_STORAGE_UNSET)
        return 0;
    snprintf(name, sizeof(name), "%s-etcd", rc->name);
    if (src->get_statefulset)
        sts = src->get_statefulset(src->ctx, rc->ns, name);
    if (sts && !cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
                   cJSON_GetObjectItemCaseSensitive(sts, "spec"), "volumeClaimTemplates"))) {
        etcd->spec.storage.kind = API_STORAGE_EMPTYDIR;
        rc->etcd_storage_kept = true;
        return 0;
    }
    etcd->spec.storage.kind = API_STORAGE_PVC;
    if (!etcd->spec.storage.size && !(etcd->spec.storage.size = strdup("1Gi")))
        return -ENOMEM;
    return 0;
}

bool render_cluster_etcd_storage_kept(const struct render_cluster *rc)
{
    return rc->etcd_storage_kept;
}

void render_cluster_set_allow_privileged(struct render_cluster *rc, bool allow)
{
    rc->allow_privileged = allow;
}

void render_cluster_set_manager_namespace(struct render_cluster *rc, const char *ns)
{
    snprintf(rc->manager_namespace, sizeof(rc->manager_namespace), "%s",
             ns && *ns ? ns : RENDER_CLUSTER_MANAGER_NAMESPACE);
}

int render_cluster_resolve(const struct render_catalog *cat, const struct render_source *src,
                           const char *ns, const char *name, struct render_cluster **ret_rc,
                           struct api_errors *errs)
{
    struct api_errors own = API_ERRORS_INIT, local = API_ERRORS_INIT;
    struct api_catalog ac = render_cluster_api_catalog(cat), ac_nodefault = ac;
    struct render_cluster *rc = calloc(1, sizeof(*rc));
    struct vres vr[RENDER_PART__COUNT] = {{0}};
    const cJSON *ncp_json;
    char what[600];
    const char *label;
    size_t before;
    int r = -ENOMEM;

    if (!errs)
        errs = &own;
    before = api_errors_count(errs);
    if (!rc || !(rc->ns = strdup(ns && *ns ? ns : "default")))
        goto out;
    rc->cat = cat;
    render_cluster_what(API_KIND_NESTED_CONTROL_PLANE, rc->ns, name, what, sizeof(what));
    ncp_json = src->get(src->ctx, API_KIND_NESTED_CONTROL_PLANE, rc->ns, name);
    if (!ncp_json) {
        api_errors_add(errs, NULL, "%s: does not exist", what);
        r = -ENOENT;
        goto out;
    }
    r = api_control_plane_from_json(ncp_json, &rc->ncp, &local);
    render_cluster_merge_errors(errs, &local, what);
    api_errors_done(&local);
    if (r < 0)
        goto out;
    if (!(rc->ncp_api_version = render_cluster_dup_api_version(ncp_json))) {
        r = -ENOMEM;
        goto out;
    }
    if ((r = render_cluster_find_capi_cluster(rc, src, ncp_json, what, errs)) < 0 && r != -EINVAL)
        goto out;
    /* The cluster name: the Cluster's, as CAPN names every child after it. */
    label = api_strmap_get(&rc->ncp->meta.labels, CLUSTER_NAME_LABEL);
    if (rc->capi) {
        if (label && strcmp(label, rc->capi->meta.name) != 0)
            api_errors_add(errs, NULL,
                           "%s: metadata.labels[%s]: \"%s\" is not the name of its Cluster "
                           "\"%s\"",
                           what, CLUSTER_NAME_LABEL, label, rc->capi->meta.name);
        /* What Cluster API would set on the control plane; api_meta_cluster_name() then
         * agrees with the Cluster everywhere. */
        else if (!label &&
                 api_strmap_set(&rc->ncp->meta.labels, CLUSTER_NAME_LABEL, rc->capi->meta.name) < 0)
            goto oom;
        rc->name = strdup(rc->capi->meta.name);
    } else {
        rc->name = strdup(api_meta_cluster_name(&rc->ncp->meta));
    }
    if (!rc->name)
        goto oom;
    if ((r = render_cluster_find_nested_cluster(rc, src, errs)) < 0 ||
        ((r = render_cluster_find_components(rc, src, ncp_json, errs)) < 0 && r != -EINVAL))
        goto out;
    /* Defaults. The control plane's version is not defaulted here: components may pick
     * theirs (resolve_versions). */
    ac_nodefault.default_version = NULL;
    if (api_control_plane_default(rc->ncp, rc->capi, &ac_nodefault) < 0 ||
        default_pods(&rc->ncp->spec.cluster_network) < 0)
        goto oom;
    {
        struct api_control_plane view = *rc->ncp;
        view.spec.version = NULL; /* replicas only; versions are resolved below */
        for (int i = 0; i < RENDER_PART__COUNT; i++)
            if (rc->parts[i].obj && api_component_default(rc->parts[i].obj, &view, &ac) < 0)
                goto oom;
    }
    if (resolve_etcd_storage(rc, src) < 0)
        goto oom;
    resolve_versions(rc, vr, errs);
    for (int i = RENDER_PART_APISERVER; i < RENDER_PART__COUNT; i++)
        if (rc->parts[i].obj &&
            api_component_effective_gates(rc->parts[i].obj, rc->ncp, &rc->parts[i].gates) < 0)
            goto oom;
    {
        size_t mark = errs->n;
        validate(rc, &ac, errs);
        if (rc->capi) {
            char cwhat[600];
            render_cluster_what(API_KIND_CLUSTER, rc->ns, rc->capi->meta.name, cwhat,
                                sizeof(cwhat));
            drop_inherited_network_lines(errs, mark, cwhat, what);
        }
    }
    check_against_package(rc, errs);
    r = api_errors_count(errs) > before ? -EINVAL : 0;
    goto out;
oom:
    r = -ENOMEM;
out:
    r = errs_code(errs, r);
    api_errors_done(&own);
    if (r == 0 && api_errors_count(errs) > before)
        r = -EINVAL;
    if (r < 0) {
        render_cluster_free(rc);
        return r;
    }
    *ret_rc = rc;
    return 0;
}

/* ---- accessors ---- */

const char *render_cluster_name(const struct render_cluster *rc)
{
    return rc->name;
}

const char *render_cluster_namespace(const struct render_cluster *rc)
{
    return rc->ns;
}

const struct api_control_plane *render_cluster_control_plane(const struct render_cluster *rc)
{
    return rc->ncp;
}

const struct api_capi_cluster *render_cluster_capi_cluster(const struct render_cluster *rc)
{
    return rc->capi;
}

const struct api_nested_cluster *render_cluster_nested_cluster(const struct render_cluster *rc)
{
    return rc->nc;
}

const struct api_component *render_cluster_component_object(const struct render_cluster *rc,
                                                            enum render_part part)
{
    return part < RENDER_PART__COUNT ? rc->parts[part].obj : NULL;
}

const char *render_cluster_missing(const struct render_cluster *rc, enum render_part part)
{
    return part < RENDER_PART__COUNT && !rc->parts[part].obj ? rc->parts[part].missing : NULL;
}

const char *render_cluster_version(const struct render_cluster *rc, enum render_part part)
{
    return part < RENDER_PART__COUNT ? rc->parts[part].version : NULL;
}

const char *render_cluster_version_skew(const struct render_cluster *rc)
{
    return rc->skew[0] ? rc->skew : NULL;
}

const struct api_gates *render_cluster_gates(const struct render_cluster *rc, enum render_part part)
{
    return part < RENDER_PART__COUNT ? &rc->parts[part].gates : NULL;
}
