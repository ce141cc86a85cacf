/* cJSON -> structs for every kind (api/types.h). */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/types.h"

/* A parse in progress: running out of memory anywhere is remembered and reported once. */
struct px {
    bool oom;
};

static const cJSON *child(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNull(v) ? NULL : v;
}

static const cJSON *child_obj(const cJSON *o, const char *key)
{
    const cJSON *v = child(o, key);

    return cJSON_IsObject(v) ? v : NULL;
}

static char *dup_or_oom(struct px *x, const char *s)
{
    char *d = strdup(s);

    if (!d)
        x->oom = true;
    return d;
}

static char *get_str(struct px *x, const cJSON *o, const char *key)
{
    const cJSON *v = child(o, key);

    return cJSON_IsString(v) ? dup_or_oom(x, v->valuestring) : NULL;
}

static int64_t get_int(const cJSON *o, const char *key, int64_t dflt)
{
    const cJSON *v = child(o, key);

    /* A number outside int64_t (1e300, an infinity) has no value to convert to: converting it
     * is undefined behaviour. */
    if (!cJSON_IsNumber(v) ||
        !(v->valuedouble >= -9223372036854775808.0 && v->valuedouble < 9223372036854775808.0))
        return dflt;
    return (int64_t)v->valuedouble;
}

static bool get_bool(const cJSON *o, const char *key)
{
    return cJSON_IsTrue(child(o, key));
}

/* A scalar as text: strings as they are, numbers in their shortest decimal form. */
static char *scalar_text(struct px *x, const cJSON *v)
{
    char num[64];

    if (cJSON_IsString(v))
        return dup_or_oom(x, v->valuestring);
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 9007199254740992.0)
            snprintf(num, sizeof(num), "%lld", (long long)d);
        else
            snprintf(num, sizeof(num), "%.15g", d);
        return dup_or_oom(x, num);
    }
    if (cJSON_IsBool(v))
        return dup_or_oom(x, cJSON_IsTrue(v) ? "true" : "false");
    return NULL;
}

static void get_strmap(struct px *x, const cJSON *o, const char *key, struct api_strmap *m)
{
    const cJSON *map = child_obj(o, key), *c;

    cJSON_ArrayForEach(c, map) {
        char *v = scalar_text(x, c);
        if (v && api_strmap_set(m, c->string, v) < 0)
            x->oom = true;
        free(v);
    }
}

static void get_strlist(struct px *x, const cJSON *o, const char *key, struct api_strlist *l)
{
    const cJSON *arr = child(o, key), *c;

    if (!cJSON_IsArray(arr))
        return;
    cJSON_ArrayForEach(c, arr) {
        if (cJSON_IsString(c) && api_strlist_add(l, c->valuestring) < 0)
            x->oom = true;
    }
}

static void get_gates(struct px *x, const cJSON *o, const char *key, struct api_gates *g)
{
    const cJSON *map = child_obj(o, key), *c;

    cJSON_ArrayForEach(c, map) {
        if (cJSON_IsBool(c) && api_gates_set(g, c->string, cJSON_IsTrue(c)) < 0)
            x->oom = true;
    }
}

static void get_ref(struct px *x, const cJSON *o, const char *key, struct api_object_ref *r)
{
    const cJSON *ref = child_obj(o, key);

    if (!ref)
        return;
    r->api_version = get_str(x, ref, "apiVersion");
    r->api_group = get_str(x, ref, "apiGroup");
    r->kind = get_str(x, ref, "kind");
    r->name = get_str(x, ref, "name");
    r->namespace = get_str(x, ref, "namespace");
    r->uid = get_str(x, ref, "uid");
    r->resource_version = get_str(x, ref, "resourceVersion");
    r->field_path = get_str(x, ref, "fieldPath");
}

static void get_endpoint(struct px *x, const cJSON *o, const char *key, struct api_endpoint *e)
{
    const cJSON *ep = child_obj(o, key);

    if (!ep)
        return;
    e->host = get_str(x, ep, "host");
    e->port = (int32_t)get_int(ep, "port", 0);
}

static void get_conditions(struct px *x, const cJSON *o, struct api_conditions *cs)
{
    const cJSON *arr = child(o, "conditions"), *c;
    int n = cJSON_GetArraySize(arr);

    if (!cJSON_IsArray(arr) || n == 0)
        return;
    cs->items = calloc((size_t)n, sizeof(*cs->items));
    if (!cs->items) {
        x->oom = true;
        return;
    }
    cJSON_ArrayForEach(c, arr) {
        struct api_condition *d = &cs->items[cs->n];
        if (!cJSON_IsObject(c))
            continue;
        d->type = get_str(x, c, "type");
        d->status = get_str(x, c, "status");
        d->severity = get_str(x, c, "severity");
        d->reason = get_str(x, c, "reason");
        d->message = get_str(x, c, "message");
        d->last_transition_time = get_str(x, c, "lastTransitionTime");
        d->observed_generation = get_int(c, "observedGeneration", 0);
        cs->n++;
    }
}

static void get_members(struct px *x, const cJSON *o, struct api_etcd_member_status **ret,
                        size_t *ret_n)
{
    const cJSON *arr = child(o, "members"), *c;
    int n = cJSON_GetArraySize(arr);
    struct api_etcd_member_status *m;
    size_t i = 0;

    if (!cJSON_IsArray(arr) || n == 0)
        return;
    m = calloc((size_t)n, sizeof(*m));
    if (!m) {
        x->oom = true;
        return;
    }
    cJSON_ArrayForEach(c, arr) {
        if (!cJSON_IsObject(c))
            continue;
        m[i].name = get_str(x, c, "name");
        m[i].id = get_str(x, c, "id");
        m[i].learner = get_bool(c, "learner");
        m[i].data_uid = get_str(x, c, "dataUID");
        i++;
    }
    *ret = m;
    *ret_n = i;
}

static void get_addresses(struct px *x, const cJSON *o, struct api_etcd_address **ret,
                          size_t *ret_n)
{
    const cJSON *arr = child(o, "addresses"), *c;
    int n = cJSON_GetArraySize(arr);
    struct api_etcd_address *a;
    size_t i = 0;

    if (!cJSON_IsArray(arr) || n == 0)
        return;
    a = calloc((size_t)n, sizeof(*a));
    if (!a) {
        x->oom = true;
        return;
    }
    cJSON_ArrayForEach(c, arr) {
        if (!cJSON_IsObject(c))
            continue;
        a[i].ip = get_str(x, c, "ip");
        a[i].hostname = get_str(x, c, "hostname");
        a[i].port = (int32_t)get_int(c, "port", 0);
        i++;
    }
    *ret = a;
    *ret_n = i;
}

static void get_network(struct px *x, const cJSON *o, struct api_cluster_network *n)
{
    const cJSON *net = child_obj(o, "clusterNetwork");

    if (!net)
        return;
    get_strlist(x, child_obj(net, "services"), "cidrBlocks", &n->services);
    get_strlist(x, child_obj(net, "pods"), "cidrBlocks", &n->pods);
    n->service_domain = get_str(x, net, "serviceDomain");
    n->api_server_port = (int32_t)get_int(net, "apiServerPort", 0);
}

static void get_meta(struct px *x, const cJSON *obj, struct api_meta *m)
{
    const cJSON *md = child_obj(obj, "metadata"), *owners, *c;
    int n;

    if (!md)
        return;
    m->name = get_str(x, md, "name");
    m->namespace = get_str(x, md, "namespace");
    m->uid = get_str(x, md, "uid");
    m->resource_version = get_str(x, md, "resourceVersion");
    m->generation = get_int(md, "generation", 0);
    m->deleting = cJSON_IsString(child(md, "deletionTimestamp"));
    get_strmap(x, md, "labels", &m->labels);
    get_strmap(x, md, "annotations", &m->annotations);
    get_strlist(x, md, "finalizers", &m->finalizers);
    owners = child(md, "ownerReferences");
    n = cJSON_GetArraySize(owners);
    if (!cJSON_IsArray(owners) || n == 0)
        return;
    m->owners = calloc((size_t)n, sizeof(*m->owners));
    if (!m->owners) {
        x->oom = true;
        return;
    }
    cJSON_ArrayForEach(c, owners) {
        struct api_owner_ref *o = &m->owners[m->n_owners];
        if (!cJSON_IsObject(c))
            continue;
        o->api_version = get_str(x, c, "apiVersion");
        o->kind = get_str(x, c, "kind");
        o->name = get_str(x, c, "name");
        o->uid = get_str(x, c, "uid");
        o->controller = get_bool(c, "controller");
        m->n_owners++;
    }
}

/* Checks apiVersion, kind and metadata.name, type-checks spec and status against the kind's
 * schema and returns a copy of obj with the schema defaults applied to spec. Returns 0,
 * -EINVAL (detail in errs), -ENOMEM. */
static int check(const cJSON *obj, const enum api_kind *wanted, size_t n_wanted,
                 enum api_kind *ret_kind, cJSON **ret_copy, struct api_errors *errs)
{
    const cJSON *av = child(obj, "apiVersion"), *kv = child(obj, "kind"), *md, *name;
    const struct api_kind_info *ki;
    size_t before = api_errors_count(errs);
    enum api_kind kind;
    cJSON *copy, *spec;
    int r;

    if (!cJSON_IsObject(obj)) {
        api_errors_add_value(errs, "", obj, "is not an object");
        return -EINVAL;
    }
    if (!cJSON_IsString(av) || !cJSON_IsString(kv)) {
        api_errors_add(errs, cJSON_IsString(av) ? "kind" : "apiVersion", "is required");
        return -EINVAL;
    }
    r = api_kind_lookup(av->valuestring, kv->valuestring, &kind);
    if (r == -EPROTONOSUPPORT) {
        int glen = (int)strcspn(av->valuestring, "/");
        api_errors_add_value(errs, "apiVersion", av, "is not served; use %.*s/%s or %.*s/%s", glen,
                             av->valuestring, API_VERSION_CAPN, glen, av->valuestring,
                             API_VERSION_STORAGE);
        return -EINVAL;
    }
    for (size_t i = 0; r == 0 && i < n_wanted; i++)
        if (kind == wanted[i])
            goto found;
    {
        const struct api_kind_info *w = api_kind_info(wanted[0]);
        char what[256];
        snprintf(what, sizeof(what), "%s/%s", av->valuestring, kv->valuestring);
        api_errors_add_str(errs, "kind", what, "is not a %s%s", w->name,
                           n_wanted > 1 ? ", NestedAPIServer or NestedControllerManager" : "");
        return -EINVAL;
    }
found:
    ki = api_kind_info(kind);
    md = child(obj, "metadata");
    name = cJSON_IsObject(md) ? child(md, "name") : NULL;
    if (!cJSON_IsString(name) || !*name->valuestring)
        api_errors_add(errs, "metadata.name", "is required");
    api_schema_check(ki->spec, child(obj, "spec"), "spec", errs);
    api_schema_check(ki->status, child(obj, "status"), "status", errs);
    if (api_errors_oom(errs))
        return -ENOMEM;
    if (api_errors_count(errs) > before)
        return -EINVAL;
    copy = cJSON_Duplicate(obj, true);
    if (!copy)
        return -ENOMEM;
    spec = cJSON_GetObjectItemCaseSensitive(copy, "spec");
    if (!cJSON_IsObject(spec)) {
        cJSON_DeleteItemFromObjectCaseSensitive(copy, "spec");
        spec = cJSON_AddObjectToObject(copy, "spec");
    }
    if (!spec || api_schema_default(ki->spec, spec) < 0) {
        cJSON_Delete(copy);
        return -ENOMEM;
    }
    *ret_kind = kind;
    *ret_copy = copy;
    return 0;
}

/* check(), then a zeroed struct of size bytes for the caller to fill from *ret_copy; NULL with
 * *ret_r -EINVAL (detail in errs) or -ENOMEM. */
static void *prepare(const cJSON *obj, const enum api_kind *wanted, size_t n_wanted, size_t size,
                     enum api_kind *ret_kind, cJSON **ret_copy, int *ret_r, struct api_errors *errs)
{
    int r = check(obj, wanted, n_wanted, ret_kind, ret_copy, errs);
    void *parsed;

    *ret_r = r;
    if (r < 0)
        return NULL;
    if (!(parsed = calloc(1, size))) {
        cJSON_Delete(*ret_copy);
        *ret_r = -ENOMEM;
    }
    return parsed;
}

static void get_certificates(struct px *x, const cJSON *spec, struct api_certificates *c)
{
    const cJSON *cert = child_obj(spec, "certificates");
    const cJSON *alg = child(cert, "keyAlgorithm"), *sa;

    if (cJSON_IsString(alg))
        api_key_algorithm_parse(alg->valuestring, &c->key_algorithm);
    c->validity_days = (int32_t)get_int(cert, "validityDays", 365);
    c->ca_validity_days = (int32_t)get_int(cert, "caValidityDays", 3650);
    c->renew_before_days = (int32_t)get_int(cert, "renewBeforeDays", 30);
    get_strlist(x, cert, "extraSANs", &c->extra_sans);
    sa = child_obj(cert, "serviceAccountKey");
    c->sa_max_token_expiration =
        (int32_t)get_int(sa, "maxTokenExpirationSeconds", API_SA_MAX_TOKEN_EXPIRATION_DEFAULT);
    c->sa_rotation_overlap =
        (int32_t)get_int(sa, "rotationOverlapSeconds", c->sa_max_token_expiration);
    c->rotate_sa_key = get_str(x, child_obj(cert, "rotate"), "serviceAccountKey");
    for (int i = 0; i < API_CA__COUNT; i++)
        c->rotate_ca[i] = get_str(x, child_obj(cert, "rotate"), api_ca_field((enum api_ca)i));
}

static void get_network_policy(struct px *x, const cJSON *spec, struct api_network_policy *np)
{
    const cJSON *o = child_obj(spec, "networkPolicy");

    np->enabled = !cJSON_IsFalse(child(o, "enabled"));
    get_strlist(x, o, "apiServerAllowedCIDRs", &np->apiserver_cidrs);
}

static void get_target(struct px *x, const cJSON *o, const char *key, struct api_rollout_target *t)
{
    const cJSON *tv = child_obj(o, key);

    t->version = get_str(x, tv, "version");
    t->config_hash = get_str(x, tv, "configHash");
    t->rolled_back = get_str(x, tv, "rolledBack");
}

int api_control_plane_from_json(const cJSON *obj, struct api_control_plane **ret,
                                struct api_errors *errs)
{
    static const enum api_kind wanted[] = {API_KIND_NESTED_CONTROL_PLANE};
    struct api_control_plane *ncp;
    const cJSON *spec, *st, *ro;
    struct px x = {false};
    enum api_kind kind;
    cJSON *copy;
    int r;

    if (!(ncp = prepare(obj, wanted, 1, sizeof(*ncp), &kind, &copy, &r, errs)))
        return r;
    get_meta(&x, copy, &ncp->meta);
    spec = child_obj(copy, "spec");
    get_ref(&x, spec, "etcd", &ncp->spec.etcd);
    get_ref(&x, spec, "apiserver", &ncp->spec.apiserver);
    get_ref(&x, spec, "controllerManager", &ncp->spec.controller_manager);
    ncp->spec.version = get_str(&x, spec, "version");
    get_endpoint(&x, spec, "controlPlaneEndpoint", &ncp->spec.control_plane_endpoint);
    get_network(&x, spec, &ncp->spec.cluster_network);
    get_gates(&x, spec, "featureGates", &ncp->spec.feature_gates);
    get_certificates(&x, spec, &ncp->spec.certificates);
    get_network_policy(&x, spec, &ncp->spec.network_policy);

    st = child_obj(copy, "status");
    ncp->status.ready = get_bool(st, "ready");
    ncp->status.initialized = get_bool(st, "initialized");
    ncp->status.control_plane_initialized =
        get_bool(child_obj(st, "initialization"), "controlPlaneInitialized");
    ncp->status.external_managed = get_bool(st, "externalManagedControlPlane");
    ncp->status.version = get_str(&x, st, "version");
    ncp->status.replicas = (int32_t)get_int(st, "replicas", 0);
    ncp->status.ready_replicas = (int32_t)get_int(st, "readyReplicas", 0);
    ncp->status.updated_replicas = (int32_t)get_int(st, "updatedReplicas", 0);
    ncp->status.available_replicas = (int32_t)get_int(st, "availableReplicas", 0);
    ncp->status.up_to_date_replicas = (int32_t)get_int(st, "upToDateReplicas", 0);
    ncp->status.observed_generation = get_int(st, "observedGeneration", 0);
    get_conditions(&x, st, &ncp->status.conditions);
    ncp->status.phase = get_str(&x, st, "phase");
    ncp->status.failure_reason = get_str(&x, st, "failureReason");
    ncp->status.failure_message = get_str(&x, st, "failureMessage");
    ro = child_obj(st, "rollout");
    ncp->status.rollout.step = get_str(&x, ro, "step");
    ncp->status.rollout.target_version = get_str(&x, ro, "targetVersion");
    get_target(&x, child_obj(ro, "components"), "etcd", &ncp->status.rollout.etcd);
    get_target(&x, child_obj(ro, "components"), "apiserver", &ncp->status.rollout.apiserver);
    get_target(&x, child_obj(ro, "components"), "controllerManager",
               &ncp->status.rollout.controller_manager);
    {
        const cJSON *sn = child_obj(ro, "snapshot");
        struct api_rollout_snapshot *s = &ncp->status.rollout.snapshot;
        s->name = get_str(&x, sn, "name");
        s->claim_name = get_str(&x, sn, "claimName");
        s->taken_at = get_str(&x, sn, "takenAt");
        s->before = get_str(&x, sn, "before");
        s->message = get_str(&x, sn, "message");
    }
    get_addresses(&x, child_obj(st, "etcd"), &ncp->status.etcd_addresses,
                  &ncp->status.n_etcd_addresses);
    ncp->status.service_cidr = get_str(&x, child_obj(st, "apiserver"), "serviceCidr");
    {
        const cJSON *mv = child_obj(st, "move");
        ncp->status.move.request = get_str(&x, mv, "request");
        ncp->status.move.phase = get_str(&x, mv, "phase");
        ncp->status.move.snapshot = get_str(&x, mv, "snapshot");
        ncp->status.move.message = get_str(&x, mv, "message");
    }
    {
        const cJSON *sk = child_obj(child_obj(st, "certificates"), "serviceAccountKey");
        ncp->status.sa_key.rotation = get_str(&x, sk, "rotation");
        ncp->status.sa_key.phase = get_str(&x, sk, "phase");
        ncp->status.sa_key.signing_since = get_str(&x, sk, "signingSince");
        ncp->status.sa_key.drop_after = get_str(&x, sk, "dropAfter");
        for (int i = 0; i < API_CA__COUNT; i++) {
            const cJSON *cs =
                child_obj(child_obj(st, "certificates"), api_ca_field((enum api_ca)i));
            ncp->status.ca[i].rotation = get_str(&x, cs, "rotation");
            ncp->status.ca[i].phase = get_str(&x, cs, "phase");
        }
    }

    cJSON_Delete(copy);
    if (x.oom) {
        api_control_plane_free(ncp);
        return -ENOMEM;
    }
    *ret = ncp;
    return 0;
}

int api_component_from_json(const cJSON *obj, struct api_component **ret, struct api_errors *errs)
{
    static const enum api_kind wanted[] = {API_KIND_NESTED_ETCD, API_KIND_NESTED_APISERVER,
                                           API_KIND_NESTED_CONTROLLER_MANAGER};
    struct api_component *c;
    const cJSON *spec, *st, *storage, *p;
    struct px x = {false};
    enum api_kind kind;
    cJSON *copy;
    int r;

    if (!(c = prepare(obj, wanted, 3, sizeof(*c), &kind, &copy, &r, errs)))
        return r;
    c->kind = kind;
    get_meta(&x, copy, &c->meta);
    spec = child_obj(copy, "spec");
    c->spec.version = get_str(&x, spec, "version");
    c->spec.channel = get_str(&x, spec, "channel");
    p = child(spec, "patches");
    if (cJSON_IsArray(p)) {
        c->spec.patches = cJSON_Duplicate(p, true);
        if (!c->spec.patches)
            x.oom = true;
    }
    get_strmap(&x, child_obj(spec, "resources"), "limits", &c->spec.resources.limits);
    get_strmap(&x, child_obj(spec, "resources"), "requests", &c->spec.resources.requests);
    c->spec.replicas = (int32_t)get_int(spec, "replicas", 1);
    get_strmap(&x, spec, "extraArgs", &c->spec.extra_args);
    get_gates(&x, spec, "featureGates", &c->spec.feature_gates);
    c->spec.image = get_str(&x, spec, "image");
    storage = child_obj(spec, "storage");
    if (kind == API_KIND_NESTED_ETCD && storage) {
        const cJSON *ed = child_obj(storage, "emptyDir");
        const cJSON *pvc = child_obj(storage, "persistentVolumeClaim");
        c->spec.storage.both_set = ed && pvc;
        if (pvc) {
            c->spec.storage.kind = API_STORAGE_PVC;
            c->spec.storage.size = scalar_text(&x, child(pvc, "size"));
            c->spec.storage.storage_class_name = get_str(&x, pvc, "storageClassName");
        }
        if (ed && !pvc)
            c->spec.storage.kind = API_STORAGE_EMPTYDIR;
        if (ed)
            c->spec.storage.size_limit = scalar_text(&x, child(ed, "sizeLimit"));
    }
    if (kind == API_KIND_NESTED_ETCD)
        c->spec.snapshot_claim = get_str(
            &x, child_obj(child_obj(spec, "snapshots"), "persistentVolumeClaim"), "claimName");

    st = child_obj(copy, "status");
    c->status.phase = get_str(&x, st, "phase");
    c->status.healthy = get_bool(st, "healthy");
    get_strlist(&x, st, "errors", &c->status.errors);
    c->status.observed_generation = get_int(st, "observedGeneration", 0);
    get_conditions(&x, st, &c->status.conditions);
    c->status.version = get_str(&x, st, "version");
    c->status.replicas = (int32_t)get_int(st, "replicas", 0);
    c->status.ready_replicas = (int32_t)get_int(st, "readyReplicas", 0);
    c->status.updated_replicas = (int32_t)get_int(st, "updatedReplicas", 0);
    if (kind == API_KIND_NESTED_ETCD) {
        get_addresses(&x, st, &c->status.addresses, &c->status.n_addresses);
        c->status.cluster_id = get_str(&x, st, "clusterID");
        c->status.adding = get_str(&x, st, "adding");
        get_members(&x, st, &c->status.members, &c->status.n_members);
        c->status.restore_snapshot = get_str(&x, child_obj(st, "restore"), "snapshot");
        c->status.restore_phase = get_str(&x, child_obj(st, "restore"), "phase");
        c->status.restored_at = get_str(&x, child_obj(st, "restore"), "restoredAt");
        c->status.snapshot_request = get_str(&x, child_obj(st, "snapshot"), "request");
        c->status.snapshot_name = get_str(&x, child_obj(st, "snapshot"), "name");
        c->status.snapshot_phase = get_str(&x, child_obj(st, "snapshot"), "phase");
        c->status.snapshot_taken_at = get_str(&x, child_obj(st, "snapshot"), "takenAt");
    }
    if (kind == API_KIND_NESTED_APISERVER)
        get_ref(&x, st, "apiserverService", &c->status.apiserver_service);

    cJSON_Delete(copy);
    if (x.oom) {
        api_component_free(c);
        return -ENOMEM;
    }
    *ret = c;
    return 0;
}

int api_nested_cluster_from_json(const cJSON *obj, struct api_nested_cluster **ret,
                                 struct api_errors *errs)
{
    static const enum api_kind wanted[] = {API_KIND_NESTED_CLUSTER};
    struct api_nested_cluster *nc;
    struct px x = {false};
    enum api_kind kind;
    const cJSON *st;
    cJSON *copy;
    int r;

    if (!(nc = prepare(obj, wanted, 1, sizeof(*nc), &kind, &copy, &r, errs)))
        return r;
    get_meta(&x, copy, &nc->meta);
    get_endpoint(&x, child_obj(copy, "spec"), "controlPlaneEndpoint", &nc->control_plane_endpoint);
    st = child_obj(copy, "status");
    nc->status.ready = get_bool(st, "ready");
    nc->status.provisioned = get_bool(child_obj(st, "initialization"), "provisioned");
    nc->status.observed_generation = get_int(st, "observedGeneration", 0);
    get_conditions(&x, st, &nc->status.conditions);
    cJSON_Delete(copy);
    if (x.oom) {
        api_nested_cluster_free(nc);
        return -ENOMEM;
    }
    *ret = nc;
    return 0;
}

int api_capi_cluster_from_json(const cJSON *obj, struct api_capi_cluster **ret,
                               struct api_errors *errs)
{
    static const enum api_kind wanted[] = {API_KIND_CLUSTER};
    struct api_capi_cluster *cl;
    struct px x = {false};
    enum api_kind kind;
    const cJSON *spec;
    cJSON *copy;
    int r;

    if (!(cl = prepare(obj, wanted, 1, sizeof(*cl), &kind, &copy, &r, errs)))
        return r;
    get_meta(&x, copy, &cl->meta);
    spec = child_obj(copy, "spec");
    cl->paused = get_bool(spec, "paused");
    get_network(&x, spec, &cl->cluster_network);
    get_endpoint(&x, spec, "controlPlaneEndpoint", &cl->control_plane_endpoint);
    get_ref(&x, spec, "controlPlaneRef", &cl->control_plane_ref);
    get_ref(&x, spec, "infrastructureRef", &cl->infrastructure_ref);
    cJSON_Delete(copy);
    if (x.oom) {
        api_capi_cluster_free(cl);
        return -ENOMEM;
    }
    *ret = cl;
    return 0;
}
