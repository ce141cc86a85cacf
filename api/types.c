#include "api/types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *api_strmap_get(const struct api_strmap *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->items[i].key, key) == 0)
            return m->items[i].value;
    return NULL;
}

int api_strmap_set(struct api_strmap *m, const char *key, const char *value)
{
    struct api_kv *grown;
    char *k, *v;
    size_t i;

    v = strdup(value);
    if (!v)
        return -ENOMEM;
    for (i = 0; i < m->n; i++) {
        int c = strcmp(m->items[i].key, key);
        if (c == 0) {
            free(m->items[i].value);
            m->items[i].value = v;
            return 0;
        }
        if (c > 0)
            break;
    }
    k = strdup(key);
    grown = k ? realloc(m->items, (m->n + 1) * sizeof(*grown)) : NULL;
    if (!grown) {
        free(k);
        free(v);
        return -ENOMEM;
    }
    m->items = grown;
    memmove(&m->items[i + 1], &m->items[i], (m->n - i) * sizeof(*grown));
    m->items[i].key = k;
    m->items[i].value = v;
    m->n++;
    return 0;
}

void api_strmap_done(struct api_strmap *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->items[i].key);
        free(m->items[i].value);
    }
    free(m->items);
    m->items = NULL;
    m->n = 0;
}

const struct api_gate *api_gates_get(const struct api_gates *g, const char *name)
{
    for (size_t i = 0; i < g->n; i++)
        if (strcmp(g->items[i].name, name) == 0)
            return &g->items[i];
    return NULL;
}

int api_gates_set(struct api_gates *g, const char *name, bool enabled)
{
    struct api_gate *grown;
    char *n;
    size_t i;

    for (i = 0; i < g->n; i++) {
        int c = strcmp(g->items[i].name, name);
        if (c == 0) {
            g->items[i].enabled = enabled;
            return 0;
        }
        if (c > 0)
            break;
    }
    n = strdup(name);
    grown = n ? realloc(g->items, (g->n + 1) * sizeof(*grown)) : NULL;
    if (!grown) {
        free(n);
        return -ENOMEM;
    }
    g->items = grown;
    memmove(&g->items[i + 1], &g->items[i], (g->n - i) * sizeof(*grown));
    g->items[i].name = n;
    g->items[i].enabled = enabled;
    g->n++;
    return 0;
}

void api_gates_done(struct api_gates *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->items[i].name);
    free(g->items);
    g->items = NULL;
    g->n = 0;
}

int api_strlist_add(struct api_strlist *l, const char *s)
{
    char **grown;
    char *d = strdup(s);

    grown = d ? realloc(l->items, (l->n + 1) * sizeof(*grown)) : NULL;
    if (!grown) {
        free(d);
        return -ENOMEM;
    }
    l->items = grown;
    l->items[l->n++] = d;
    return 0;
}

void api_strlist_done(struct api_strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

void api_object_ref_done(struct api_object_ref *r)
{
    free(r->api_version);
    free(r->api_group);
    free(r->kind);
    free(r->name);
    free(r->namespace);
    free(r->uid);
    free(r->resource_version);
    free(r->field_path);
    memset(r, 0, sizeof(*r));
}

int api_object_ref_group(const struct api_object_ref *r, char *ret, size_t cap)
{
    const char *g = r->api_group, *slash;
    size_t n;

    if (!g) {
        slash = r->api_version ? strchr(r->api_version, '/') : NULL;
        g = slash ? r->api_version : "";
        n = slash ? (size_t)(slash - r->api_version) : 0;
    } else {
        n = strlen(g);
    }
    if (n >= cap)
        return -ENAMETOOLONG;
    memcpy(ret, g, n);
    ret[n] = '\0';
    return (int)n;
}

void api_endpoint_done(struct api_endpoint *e)
{
    free(e->host);
    e->host = NULL;
    e->port = 0;
}

void api_meta_done(struct api_meta *m)
{
    free(m->name);
    free(m->namespace);
    free(m->uid);
    free(m->resource_version);
    api_strmap_done(&m->labels);
    api_strmap_done(&m->annotations);
    for (size_t i = 0; i < m->n_owners; i++) {
        free(m->owners[i].api_version);
        free(m->owners[i].kind);
        free(m->owners[i].name);
        free(m->owners[i].uid);
    }
    free(m->owners);
    api_strlist_done(&m->finalizers);
    memset(m, 0, sizeof(*m));
}

void api_conditions_done(struct api_conditions *c)
{
    for (size_t i = 0; i < c->n; i++) {
        struct api_condition *x = &c->items[i];
        free(x->type);
        free(x->status);
        free(x->severity);
        free(x->reason);
        free(x->message);
        free(x->last_transition_time);
    }
    free(c->items);
    c->items = NULL;
    c->n = 0;
}

static void addresses_free(struct api_etcd_address *a, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(a[i].ip);
        free(a[i].hostname);
    }
    free(a);
}

void api_etcd_members_free(struct api_etcd_member_status *m, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].id);
        free(m[i].data_uid);
    }
    free(m);
}

static void target_done(struct api_rollout_target *t)
{
    free(t->version);
    free(t->config_hash);
    free(t->rolled_back);
    t->version = t->config_hash = t->rolled_back = NULL;
}

void api_rollout_done(struct api_rollout *r)
{
    free(r->step);
    free(r->target_version);
    target_done(&r->etcd);
    target_done(&r->apiserver);
    target_done(&r->controller_manager);
    free(r->snapshot.name);
    free(r->snapshot.claim_name);
    free(r->snapshot.taken_at);
    free(r->snapshot.before);
    free(r->snapshot.message);
    memset(&r->snapshot, 0, sizeof(r->snapshot));
    r->step = r->target_version = NULL;
}

static void network_done(struct api_cluster_network *n)
{
    api_strlist_done(&n->services);
    api_strlist_done(&n->pods);
    free(n->service_domain);
    n->service_domain = NULL;
}

void api_control_plane_free(struct api_control_plane *ncp)
{
    if (!ncp)
        return;
    api_meta_done(&ncp->meta);
    api_object_ref_done(&ncp->spec.etcd);
    api_object_ref_done(&ncp->spec.apiserver);
    api_object_ref_done(&ncp->spec.controller_manager);
    free(ncp->spec.version);
    api_endpoint_done(&ncp->spec.control_plane_endpoint);
    network_done(&ncp->spec.cluster_network);
    api_gates_done(&ncp->spec.feature_gates);
    api_strlist_done(&ncp->spec.certificates.extra_sans);
    free(ncp->spec.certificates.rotate_sa_key);
    for (int i = 0; i < API_CA__COUNT; i++) {
        free(ncp->spec.certificates.rotate_ca[i]);
        free(ncp->status.ca[i].rotation);
        free(ncp->status.ca[i].phase);
    }
    api_strlist_done(&ncp->spec.network_policy.apiserver_cidrs);
    free(ncp->status.version);
    api_conditions_done(&ncp->status.conditions);
    free(ncp->status.phase);
    free(ncp->status.failure_reason);
    free(ncp->status.failure_message);
    api_rollout_done(&ncp->status.rollout);
    addresses_free(ncp->status.etcd_addresses, ncp->status.n_etcd_addresses);
    free(ncp->status.service_cidr);
    free(ncp->status.sa_key.rotation);
    free(ncp->status.sa_key.phase);
    free(ncp->status.sa_key.signing_since);
    free(ncp->status.sa_key.drop_after);
    free(ncp->status.move.request);
    free(ncp->status.move.phase);
    free(ncp->status.move.snapshot);
    free(ncp->status.move.message);
    free(ncp);
}

void api_component_free(struct api_component *c)
{
    if (!c)
        return;
    api_meta_done(&c->meta);
    free(c->spec.version);
    free(c->spec.channel);
    cJSON_Delete(c->spec.patches);
    api_strmap_done(&c->spec.resources.limits);
    api_strmap_done(&c->spec.resources.requests);
    api_strmap_done(&c->spec.extra_args);
    api_gates_done(&c->spec.feature_gates);
    free(c->spec.image);
    free(c->spec.storage.size_limit);
    free(c->spec.storage.size);
    free(c->spec.storage.storage_class_name);
    free(c->spec.snapshot_claim);
    free(c->status.phase);
    api_strlist_done(&c->status.errors);
    api_conditions_done(&c->status.conditions);
    free(c->status.version);
    addresses_free(c->status.addresses, c->status.n_addresses);
    free(c->status.cluster_id);
    free(c->status.adding);
    api_etcd_members_free(c->status.members, c->status.n_members);
    free(c->status.restore_snapshot);
    free(c->status.restore_phase);
    free(c->status.restored_at);
    free(c->status.snapshot_request);
    free(c->status.snapshot_name);
    free(c->status.snapshot_phase);
    free(c->status.snapshot_taken_at);
    api_object_ref_done(&c->status.apiserver_service);
    free(c);
}

void api_nested_cluster_free(struct api_nested_cluster *nc)
{
    if (!nc)
        return;
    api_meta_done(&nc->meta);
    api_endpoint_done(&nc->control_plane_endpoint);
    api_conditions_done(&nc->status.conditions);
    free(nc);
}

void api_capi_cluster_free(struct api_capi_cluster *cl)
{
    if (!cl)
        return;
    api_meta_done(&cl->meta);
    network_done(&cl->cluster_network);
    api_endpoint_done(&cl->control_plane_endpoint);
    api_object_ref_done(&cl->control_plane_ref);
    api_object_ref_done(&cl->infrastructure_ref);
    free(cl);
}

const char *api_meta_cluster_name(const struct api_meta *m)
{
    const char *label;

    for (size_t i = 0; i < m->n_owners; i++) {
        const struct api_owner_ref *o = &m->owners[i];
        if (o->kind && o->api_version && o->name && strcmp(o->kind, "Cluster") == 0 &&
            strncmp(o->api_version, API_GROUP_CLUSTER "/", strlen(API_GROUP_CLUSTER "/")) == 0)
            return o->name;
    }
    label = api_strmap_get(&m->labels, "cluster.x-k8s.io/cluster-name");
    if (label && *label)
        return label;
    return m->name;
}

bool api_meta_paused(const struct api_meta *m)
{
    return api_strmap_get(&m->annotations, "cluster.x-k8s.io/paused") != NULL;
}

static const char *const key_algorithms[] = {
    [API_KEY_ECDSA_P256] = "ECDSA-P256", [API_KEY_ECDSA_P384] = "ECDSA-P384",
    [API_KEY_RSA_2048] = "RSA-2048",     [API_KEY_RSA_3072] = "RSA-3072",
    [API_KEY_RSA_4096] = "RSA-4096",
};

const char *api_key_algorithm_name(enum api_key_algorithm a)
{
    if ((unsigned)a >= sizeof(key_algorithms) / sizeof(key_algorithms[0]))
        return "ECDSA-P256";
    return key_algorithms[a];
}

int api_key_algorithm_parse(const char *s, enum api_key_algorithm *ret)
{
    for (size_t i = 0; s && i < sizeof(key_algorithms) / sizeof(key_algorithms[0]); i++) {
        if (strcmp(s, key_algorithms[i]) == 0) {
            *ret = (enum api_key_algorithm)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *api_ca_field(enum api_ca ca)
{
    static const char *const fields[API_CA__COUNT] = {"clusterCA", "etcdCA", "frontProxyCA"};

    return (unsigned)ca < API_CA__COUNT ? fields[ca] : NULL;
}

const char *api_component_suffix(enum api_kind kind)
{
    switch (kind) {
    case API_KIND_NESTED_ETCD:
        return "etcd";
    case API_KIND_NESTED_APISERVER:
        return "apiserver";
    case API_KIND_NESTED_CONTROLLER_MANAGER:
        return "controller-manager";
    default:
        return NULL;
    }
}
