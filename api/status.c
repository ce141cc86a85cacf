#include "api/status.h"

#include <string.h>

/* Builders that remember running out of memory, so each status reads as a list of fields. */
struct jb {
    bool oom;
};

static cJSON *add(struct jb *b, cJSON *parent, const char *key, cJSON *v)
{
    if (!v || !parent) {
        cJSON_Delete(v);
        b->oom = true;
        return NULL;
    }
    if (cJSON_IsArray(parent)) {
        if (!cJSON_AddItemToArray(parent, v))
            goto fail;
    } else if (!cJSON_AddItemToObject(parent, key, v)) {
        goto fail;
    }
    return v;
fail:
    cJSON_Delete(v);
    b->oom = true;
    return NULL;
}

static void add_str(struct jb *b, cJSON *o, const char *key, const char *s)
{
    if (s)
        add(b, o, key, cJSON_CreateString(s));
}

static void add_bool(struct jb *b, cJSON *o, const char *key, bool v)
{
    add(b, o, key, cJSON_CreateBool(v));
}

static void add_int(struct jb *b, cJSON *o, const char *key, double v)
{
    add(b, o, key, cJSON_CreateNumber(v));
}

static void add_conditions(struct jb *b, cJSON *o, const struct api_conditions *cs)
{
    cJSON *arr;

    if (cs->n == 0)
        return;
    arr = add(b, o, "conditions", cJSON_CreateArray());
    for (size_t i = 0; arr && i < cs->n; i++) {
        const struct api_condition *c = &cs->items[i];
        cJSON *j = add(b, arr, NULL, cJSON_CreateObject());
        add_str(b, j, "type", c->type);
        add_str(b, j, "status", c->status);
        add_str(b, j, "severity", c->severity);
        add_str(b, j, "reason", c->reason);
        add_str(b, j, "message", c->message);
        add_str(b, j, "lastTransitionTime", c->last_transition_time);
        if (c->observed_generation)
            add_int(b, j, "observedGeneration", (double)c->observed_generation);
    }
}

static void add_addresses(struct jb *b, cJSON *o, const struct api_etcd_address *a, size_t n)
{
    cJSON *arr;

    if (n == 0)
        return;
    arr = add(b, o, "addresses", cJSON_CreateArray());
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *j = add(b, arr, NULL, cJSON_CreateObject());
        add_str(b, j, "ip", a[i].ip);
        add_str(b, j, "hostname", a[i].hostname);
        if (a[i].port)
            add_int(b, j, "port", a[i].port);
    }
}

static void add_members(struct jb *b, cJSON *o, const struct api_etcd_member_status *m, size_t n)
{
    cJSON *arr;

    if (n == 0)
        return;
    arr = add(b, o, "members", cJSON_CreateArray());
    for (size_t i = 0; arr && i < n; i++) {
        cJSON *j = add(b, arr, NULL, cJSON_CreateObject());
        add_str(b, j, "name", m[i].name);
        add_str(b, j, "id", m[i].id);
        if (m[i].learner)
            add_bool(b, j, "learner", true);
        add_str(b, j, "dataUID", m[i].data_uid);
    }
}

static void add_ref(struct jb *b, cJSON *o, const char *key, const struct api_object_ref *r)
{
    cJSON *j;

    if (!r->name)
        return;
    j = add(b, o, key, cJSON_CreateObject());
    add_str(b, j, "apiVersion", r->api_version);
    add_str(b, j, "fieldPath", r->field_path);
    add_str(b, j, "kind", r->kind);
    add_str(b, j, "name", r->name);
    add_str(b, j, "namespace", r->namespace);
    add_str(b, j, "resourceVersion", r->resource_version);
    add_str(b, j, "uid", r->uid);
}

static void add_target(struct jb *b, cJSON *o, const char *key, const struct api_rollout_target *t)
{
    cJSON *j;

    if (!t->version && !t->config_hash)
        return;
    j = add(b, o, key, cJSON_CreateObject());
    add_str(b, j, "version", t->version);
    add_str(b, j, "configHash", t->config_hash);
    add_str(b, j, "rolledBack", t->rolled_back);
}

static cJSON *finish(struct jb *b, cJSON *o)
{
    if (b->oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

cJSON *api_control_plane_status_to_json(const struct api_control_plane_status *st)
{
    struct jb b = {false};
    cJSON *o = cJSON_CreateObject(), *j;
    const struct api_rollout *ro = &st->rollout;

    if (!o)
        return NULL;
    add_bool(&b, o, "ready", st->ready);
    add_bool(&b, o, "initialized", st->initialized);
    j = add(&b, o, "initialization", cJSON_CreateObject());
    add_bool(&b, j, "controlPlaneInitialized", st->control_plane_initialized);
    add_bool(&b, o, "externalManagedControlPlane", st->external_managed);
    add_str(&b, o, "version", st->version);
    add_int(&b, o, "replicas", st->replicas);
    add_int(&b, o, "readyReplicas", st->ready_replicas);
    add_int(&b, o, "updatedReplicas", st->updated_replicas);
    add_int(&b, o, "availableReplicas", st->available_replicas);
    add_int(&b, o, "upToDateReplicas", st->up_to_date_replicas);
    add_int(&b, o, "observedGeneration", (double)st->observed_generation);
    add_conditions(&b, o, &st->conditions);
    add_str(&b, o, "phase", st->phase);
    add_str(&b, o, "failureReason", st->failure_reason);
    add_str(&b, o, "failureMessage", st->failure_message);
    if (ro->step || ro->target_version || ro->etcd.version || ro->etcd.config_hash ||
        ro->apiserver.version || ro->apiserver.config_hash || ro->controller_manager.version ||
        ro->controller_manager.config_hash || ro->snapshot.before) {
        cJSON *r = add(&b, o, "rollout", cJSON_CreateObject());
        add_str(&b, r, "step", ro->step);
        add_str(&b, r, "targetVersion", ro->target_version);
        cJSON *c = add(&b, r, "components", cJSON_CreateObject());
        add_target(&b, c, "etcd", &ro->etcd);
        add_target(&b, c, "apiserver", &ro->apiserver);
        add_target(&b, c, "controllerManager", &ro->controller_manager);
        if (ro->snapshot.before) {
            cJSON *s = add(&b, r, "snapshot", cJSON_CreateObject());
            add_str(&b, s, "name", ro->snapshot.name);
            add_str(&b, s, "claimName", ro->snapshot.claim_name);
            add_str(&b, s, "takenAt", ro->snapshot.taken_at);
            add_str(&b, s, "before", ro->snapshot.before);
            add_str(&b, s, "message", ro->snapshot.message);
        }
    }
    if (st->n_etcd_addresses) {
        j = add(&b, o, "etcd", cJSON_CreateObject());
        add_addresses(&b, j, st->etcd_addresses, st->n_etcd_addresses);
    }
    if (st->service_cidr) {
        j = add(&b, o, "apiserver", cJSON_CreateObject());
        add_str(&b, j, "serviceCidr", st->service_cidr);
    }
    if (st->move.request || st->move.phase) {
        j = add(&b, o, "move", cJSON_CreateObject());
        add_str(&b, j, "request", st->move.request);
        add_str(&b, j, "phase", st->move.phase);
        add_str(&b, j, "snapshot", st->move.snapshot);
        add_str(&b, j, "message", st->move.message);
    }
    if (st->sa_key.rotation || st->sa_key.phase) {
        j = add(&b, add(&b, o, "certificates", cJSON_CreateObject()), "serviceAccountKey",
                cJSON_CreateObject());
        add_str(&b, j, "rotation", st->sa_key.rotation);
        add_str(&b, j, "phase", st->sa_key.phase);
        add_str(&b, j, "signingSince", st->sa_key.signing_since);
        add_str(&b, j, "dropAfter", st->sa_key.drop_after);
    }
    for (int i = 0; i < API_CA__COUNT; i++) {
        const struct api_ca_rotation_status *cs = &st->ca[i];
        cJSON *certs;
        if (!cs->rotation && !cs->phase)
            continue;
        certs = cJSON_GetObjectItemCaseSensitive(o, "certificates");
        if (!certs)
            certs = add(&b, o, "certificates", cJSON_CreateObject());
        j = add(&b, certs, api_ca_field((enum api_ca)i), cJSON_CreateObject());
        add_str(&b, j, "rotation", cs->rotation);
        add_str(&b, j, "phase", cs->phase);
    }
    return finish(&b, o);
}

cJSON *api_component_status_to_json(enum api_kind kind, const struct api_component_status *st)
{
    struct jb b = {false};
    cJSON *o = cJSON_CreateObject();

    if (!o)
        return NULL;
    add_str(&b, o, "phase", st->phase);
    add_bool(&b, o, "healthy", st->healthy);
    if (st->errors.n) {
        cJSON *arr = add(&b, o, "errors", cJSON_CreateArray());
        for (size_t i = 0; arr && i < st->errors.n; i++)
            add(&b, arr, NULL, cJSON_CreateString(st->errors.items[i]));
    }
    add_int(&b, o, "observedGeneration", (double)st->observed_generation);
    add_conditions(&b, o, &st->conditions);
    add_str(&b, o, "version", st->version);
    add_int(&b, o, "replicas", st->replicas);
    add_int(&b, o, "readyReplicas", st->ready_replicas);
    add_int(&b, o, "updatedReplicas", st->updated_replicas);
    if (kind == API_KIND_NESTED_ETCD) {
        add_addresses(&b, o, st->addresses, st->n_addresses);
        add_str(&b, o, "clusterID", st->cluster_id);
        add_str(&b, o, "adding", st->adding);
        add_members(&b, o, st->members, st->n_members);
        if (st->restore_snapshot) {
            cJSON *r = add(&b, o, "restore", cJSON_CreateObject());
            add_str(&b, r, "snapshot", st->restore_snapshot);
            add_str(&b, r, "phase", st->restore_phase);
            add_str(&b, r, "restoredAt", st->restored_at);
        }
        if (st->snapshot_request) {
            cJSON *s = add(&b, o, "snapshot", cJSON_CreateObject());
            add_str(&b, s, "request", st->snapshot_request);
            add_str(&b, s, "name", st->snapshot_name);
            add_str(&b, s, "phase", st->snapshot_phase);
            add_str(&b, s, "takenAt", st->snapshot_taken_at);
        }
    }
    if (kind == API_KIND_NESTED_APISERVER)
        add_ref(&b, o, "apiserverService", &st->apiserver_service);
    return finish(&b, o);
}

cJSON *api_nested_cluster_status_to_json(const struct api_nested_cluster_status *st)
{
    struct jb b = {false};
    cJSON *o = cJSON_CreateObject(), *j;

    if (!o)
        return NULL;
    add_bool(&b, o, "ready", st->ready);
    j = add(&b, o, "initialization", cJSON_CreateObject());
    add_bool(&b, j, "provisioned", st->provisioned);
    add_int(&b, o, "observedGeneration", (double)st->observed_generation);
    add_conditions(&b, o, &st->conditions);
    return finish(&b, o);
}

bool api_status_equal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    return cJSON_Compare(a, b, true);
}
