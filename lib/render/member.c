#include "lib/render/member.h"

#include <errno.h>
#include <string.h>

/* ---- small cJSON helpers ---- */

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool eq(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

static const char *name_of(const cJSON *obj)
{
    return str(get(obj, "metadata"), "name");
}

/* An object without metadata.namespace is in "default", as render_source_from_objects
 * files it. */
static const char *ns_of(const cJSON *obj)
{
    const char *ns = str(get(obj, "metadata"), "namespace");

    return ns && ns[0] ? ns : "default";
}

static const char *label_of(const cJSON *obj, const char *key)
{
    return str(get(get(obj, "metadata"), "labels"), key);
}

/* Whether apiVersion ("group/version") is in group. */
static bool in_group(const char *api_version, const char *group)
{
    size_t n = strlen(group);

    return api_version && strncmp(api_version, group, n) == 0 && api_version[n] == '/';
}

/* Whether ref (an ownerReference, an ObjectReference or Cluster API v1beta2's
 * {apiGroup, kind, name}) points at kind. */
static bool ref_is(const cJSON *ref, enum api_kind kind)
{
    const struct api_kind_info *ki = api_kind_info(kind);
    const char *av = str(ref, "apiVersion"), *group = str(ref, "apiGroup");

    return eq(str(ref, "kind"), ki->name) && (!av || in_group(av, ki->group)) &&
           (!group || eq(group, ki->group));
}

/* Whether ref names ns/name of kind (a reference without a namespace is in ns). */
static bool ref_names(const cJSON *ref, enum api_kind kind, const char *ns, const char *name)
{
    const char *rns = str(ref, "namespace");

    return ref_is(ref, kind) && eq(str(ref, "name"), name) && (!rns || !rns[0] || eq(rns, ns));
}

static const cJSON *controller_ref(const cJSON *obj)
{
    const cJSON *r;

    cJSON_ArrayForEach(r, get(get(obj, "metadata"), "ownerReferences")) {
        if (cJSON_IsTrue(get(r, "controller")))
            return r;
    }
    return NULL;
}

/* ---- kinds and owners ---- */

int member_kind_of(const cJSON *obj, enum api_kind *ret_kind)
{
    const char *av = str(obj, "apiVersion"), *kind = str(obj, "kind");

    if (!av || !kind)
        return -ENOENT;
    return api_kind_lookup(av, kind, ret_kind) < 0 ? -ENOENT : 0;
}

int member_part_of_kind(enum api_kind kind, enum render_part *ret_part)
{
    for (int i = 0; i < RENDER_PART__COUNT; i++) {
        if (render_part_kind((enum render_part)i) == kind) {
            *ret_part = (enum render_part)i;
            return 0;
        }
    }
    return -EINVAL;
}

bool member_controlled_by_kind(const cJSON *obj, enum api_kind kind, const char **ret_name)
{
    const cJSON *ref = controller_ref(obj);

    if (!ref || !ref_is(ref, kind) || !str(ref, "name"))
        return false;
    if (ret_name)
        *ret_name = str(ref, "name");
    return true;
}

bool member_controlled_by_uid(const cJSON *obj, const char *uid)
{
    const cJSON *ref = controller_ref(obj);

    return ref && uid && eq(str(ref, "uid"), uid);
}

const char *member_owner_cluster_name(const cJSON *obj)
{
    const cJSON *ref;

    cJSON_ArrayForEach(ref, get(get(obj, "metadata"), "ownerReferences")) {
        if (eq(str(ref, "kind"), "Cluster") && in_group(str(ref, "apiVersion"), API_GROUP_CLUSTER))
            return str(ref, "name");
    }
    return NULL;
}

/* ---- keys ---- */

static size_t add_key(struct render_key *keys, size_t n, unsigned tag, const char *value)
{
    if (!value)
        return n;
    keys[n] = (struct render_key){tag, value};
    return n + 1;
}

/* The cluster name an object without a Cluster has (member_cluster_name). */
static const char *standalone_name(const cJSON *obj)
{
    const char *label = label_of(obj, MEMBER_CLUSTER_NAME_LABEL);

    return label && label[0] ? label : name_of(obj);
}

size_t member_index_keys(enum api_kind kind, const cJSON *obj, struct render_key *keys)
{
    const char *owner = NULL;
    size_t n = 0;

    switch (kind) {
    case API_KIND_CLUSTER:
        n = add_key(keys, n, MEMBER_KEY_CONTROL_PLANE_REF,
                    str(get(get(obj, "spec"), "controlPlaneRef"), "name"));
        n = add_key(keys, n, MEMBER_KEY_INFRASTRUCTURE_REF,
                    str(get(get(obj, "spec"), "infrastructureRef"), "name"));
        break;
    case API_KIND_NESTED_ETCD:
    case API_KIND_NESTED_APISERVER:
    case API_KIND_NESTED_CONTROLLER_MANAGER:
        if (member_controlled_by_kind(obj, API_KIND_NESTED_CONTROL_PLANE, &owner))
            n = add_key(keys, n, MEMBER_KEY_CONTROLLER, owner);
        n = add_key(keys, n, MEMBER_KEY_CLUSTER_LABEL, label_of(obj, MEMBER_CLUSTER_NAME_LABEL));
        break;
    case API_KIND_NESTED_CONTROL_PLANE:
        for (int i = 0; i < RENDER_PART__COUNT; i++)
            n = add_key(keys, n, MEMBER_KEY_PART_REF + (unsigned)i,
                        str(get(get(obj, "spec"), render_part_field((enum render_part)i)), "name"));
        n = add_key(keys, n, MEMBER_KEY_OWNER_CLUSTER, member_owner_cluster_name(obj));
        n = add_key(keys, n, MEMBER_KEY_STANDALONE_NAME, standalone_name(obj));
        break;
    case API_KIND_NESTED_CLUSTER:
        n = add_key(keys, n, MEMBER_KEY_STANDALONE_NAME, standalone_name(obj));
        break;
    case API_KIND_COUNT:
        break;
    }
    return n;
}

/* The objects of kind in ns with one of keys (and maybe others: every caller checks). */
static void each_keyed(const struct render_source *src, enum api_kind kind, const char *ns,
                       const struct render_key *keys, size_t n, render_source_fn fn, void *userdata)
{
    if (src->each_keyed)
        src->each_keyed(src->ctx, kind, ns, keys, n, fn, userdata);
    else
        src->each(src->ctx, kind, ns, fn, userdata);
}

/* ---- Clusters ---- */

struct ref_search {
    const char *field; /* "controlPlaneRef" or "infrastructureRef" */
    enum api_kind kind;
    const char *ns, *name;
    const cJSON *found;
    int count;
};

static bool find_referring_cluster(void *userdata, const cJSON *cl)
{
    struct ref_search *s = userdata;

    if (ref_names(get(get(cl, "spec"), s->field), s->kind, s->ns, s->name) && s->count++ == 0)
        s->found = cl;
    return true;
}

const cJSON *member_capi_cluster(const struct render_source *src, const cJSON *obj,
                                 enum api_kind kind, bool *ret_by_owner, int *ret_count)
{
    const char *ns = ns_of(obj), *owner = member_owner_cluster_name(obj);
    struct ref_search s = {
        .field = kind == API_KIND_NESTED_CLUSTER ? "infrastructureRef" : "controlPlaneRef",
        .kind = kind,
        .ns = ns,
        .name = name_of(obj),
    };
    struct render_key key = {kind == API_KIND_NESTED_CLUSTER ? MEMBER_KEY_INFRASTRUCTURE_REF
                                                             : MEMBER_KEY_CONTROL_PLANE_REF,
                             s.name};

    if (ret_by_owner)
        *ret_by_owner = owner != NULL;
    if (ret_count)
        *ret_count = 0;
    if (owner)
        return src->get(src->ctx, API_KIND_CLUSTER, ns, owner);
    if (!s.name)
        return NULL;
    each_keyed(src, API_KIND_CLUSTER, ns, &key, 1, find_referring_cluster, &s);
    if (ret_count)
        *ret_count = s.count;
    return s.found;
}

const char *member_cluster_name(const struct render_source *src, const cJSON *obj,
                                enum api_kind kind)
{
    bool by_owner;
    const cJSON *cl = member_capi_cluster(src, obj, kind, &by_owner, NULL);
    const char *label;

    if (cl)
        return name_of(cl);
    if (by_owner)
        return member_owner_cluster_name(obj);
    label = label_of(obj, MEMBER_CLUSTER_NAME_LABEL);
    return label && label[0] ? label : name_of(obj);
}

/* The object of kind a Cluster's reference field names, or NULL. */
static const cJSON *cluster_ref_target(const struct render_source *src, const cJSON *cl,
                                       const char *field, enum api_kind kind)
{
    const cJSON *ref = get(get(cl, "spec"), field);
    const char *rns = str(ref, "namespace"), *name = str(ref, "name");

    if (!name || !ref_is(ref, kind))
        return NULL;
    return src->get(src->ctx, kind, rns && rns[0] ? rns : ns_of(cl), name);
}

/* ---- components ---- */

struct component_match {
    const char *ncp_name, *cluster_name;
    const cJSON *found;
    int count;
};

/* A component the control plane controls, or one labelled with its cluster name. */
static bool match_component(void *userdata, const cJSON *obj)
{
    struct component_match *m = userdata;
    const char *owner;

    if ((member_controlled_by_kind(obj, API_KIND_NESTED_CONTROL_PLANE, &owner) &&
         eq(owner, m->ncp_name)) ||
        eq(label_of(obj, MEMBER_CLUSTER_NAME_LABEL), m->cluster_name)) {
        m->found = obj;
        m->count++;
    }
    return true;
}

const cJSON *member_component(const struct render_source *src, const cJSON *ncp,
                              enum render_part part, int *ret_count)
{
    enum api_kind kind = render_part_kind(part);
    const cJSON *ref = get(get(ncp, "spec"), render_part_field(part));
    const char *name = str(ref, "name");
    struct component_match m = {.ncp_name = name_of(ncp)};

    if (ret_count)
        *ret_count = 0;
    if (name) {
        if (str(ref, "kind") && !ref_is(ref, kind))
            return NULL;
        return src->get(src->ctx, kind, ns_of(ncp), name);
    }
    m.cluster_name = member_cluster_name(src, ncp, API_KIND_NESTED_CONTROL_PLANE);
    if (!m.ncp_name)
        return NULL;
    {
        struct render_key keys[] = {{MEMBER_KEY_CONTROLLER, m.ncp_name},
                                    {MEMBER_KEY_CLUSTER_LABEL, m.cluster_name}};
        each_keyed(src, kind, ns_of(ncp), keys, m.cluster_name ? 2 : 1, match_component, &m);
    }
    if (ret_count)
        *ret_count = m.count;
    return m.count == 1 ? m.found : NULL;
}

struct spec_search {
    enum render_part part;
    const char *name;
    const cJSON *found;
};

static bool find_naming_control_plane(void *userdata, const cJSON *ncp)
{
    struct spec_search *s = userdata;
    const cJSON *ref = get(get(ncp, "spec"), render_part_field(s->part));

    if (!eq(str(ref, "name"), s->name) ||
        (str(ref, "kind") && !ref_is(ref, render_part_kind(s->part))))
        return true;
    s->found = ncp;
    return false;
}

const cJSON *member_control_plane_of_component(const struct render_source *src,
                                               const cJSON *component, enum render_part part)
{
    const char *ns = ns_of(component), *owner;
    struct spec_search s = {.part = part, .name = name_of(component)};
    struct render_key key = {MEMBER_KEY_PART_REF + (unsigned)part, s.name};
    const cJSON *ncp;

    if (member_controlled_by_kind(component, API_KIND_NESTED_CONTROL_PLANE, &owner)) {
        ncp = src->get(src->ctx, API_KIND_NESTED_CONTROL_PLANE, ns, owner);
        if (ncp)
            return ncp;
    }

    if (!s.name)
        return NULL;
    each_keyed(src, API_KIND_NESTED_CONTROL_PLANE, ns, &key, 1, find_naming_control_plane, &s);
    if (s.found)
        return s.found;
    /* A control plane that names no component of this kind takes the one labelled with its
     * cluster name (member_component). */
    ncp = member_control_plane_of_cluster_name(src, ns,
                                               label_of(component, MEMBER_CLUSTER_NAME_LABEL));
    if (ncp && !str(get(get(ncp, "spec"), render_part_field(part)), "name"))
        return ncp;
    return NULL;
}

/* ---- standalone clusters ---- */

struct name_search {
    const struct render_source *src;
    enum api_kind kind;
    const char *cluster_name;
    const cJSON *found;
};

/* An object of the kind without a Cluster whose cluster name is the one searched for. */
static bool find_by_cluster_name(void *userdata, const cJSON *obj)
{
    struct name_search *s = userdata;
    bool by_owner;

    if (member_capi_cluster(s->src, obj, s->kind, &by_owner, NULL) || by_owner ||
        !eq(member_cluster_name(s->src, obj, s->kind), s->cluster_name))
        return true;
    s->found = obj;
    return false;
}

/* The standalone object of kind (no Cluster) with this cluster name in ns: first the one named
 * like the cluster, then any. */
static const cJSON *standalone_by_cluster_name(const struct render_source *src, enum api_kind kind,
                                               const char *ns, const char *cluster_name)
{
    struct name_search s = {.src = src, .kind = kind, .cluster_name = cluster_name};
    const cJSON *obj;

    if (!cluster_name)
        return NULL;
    obj = src->get(src->ctx, kind, ns, cluster_name);
    if (obj) {
        find_by_cluster_name(&s, obj);
        if (s.found)
            return s.found;
    }
    each_keyed(src, kind, ns, &(struct render_key){MEMBER_KEY_STANDALONE_NAME, cluster_name}, 1,
               find_by_cluster_name, &s);
    return s.found;
}

const cJSON *member_control_plane_of_nested_cluster(const struct render_source *src,
                                                    const cJSON *nc)
{
    bool by_owner;
    const cJSON *cl = member_capi_cluster(src, nc, API_KIND_NESTED_CLUSTER, &by_owner, NULL);

    if (cl)
        return cluster_ref_target(src, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
    if (by_owner)
        return NULL;
    return standalone_by_cluster_name(src, API_KIND_NESTED_CONTROL_PLANE, ns_of(nc),
                                      member_cluster_name(src, nc, API_KIND_NESTED_CLUSTER));
}

const cJSON *member_nested_cluster_of_control_plane(const struct render_source *src,
                                                    const cJSON *ncp)
{
    bool by_owner;
    const cJSON *cl = member_capi_cluster(src, ncp, API_KIND_NESTED_CONTROL_PLANE, &by_owner, NULL);

    if (cl)
        return cluster_ref_target(src, cl, "infrastructureRef", API_KIND_NESTED_CLUSTER);
    if (by_owner)
        return NULL;
    return standalone_by_cluster_name(src, API_KIND_NESTED_CLUSTER, ns_of(ncp),
                                      member_cluster_name(src, ncp, API_KIND_NESTED_CONTROL_PLANE));
}

const cJSON *member_control_plane_of_cluster_name(const struct render_source *src, const char *ns,
                                                  const char *cluster_name)
{
    const cJSON *cl = cluster_name ? src->get(src->ctx, API_KIND_CLUSTER, ns, cluster_name) : NULL;
    const cJSON *ncp;

    if (cl) {
        ncp = cluster_ref_target(src, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
        if (ncp)
            return ncp;
    }
    return standalone_by_cluster_name(src, API_KIND_NESTED_CONTROL_PLANE, ns, cluster_name);
}

struct owner_search {
    const char *cluster;
    void (*fn)(void *userdata, const cJSON *ncp);
    void *userdata;
    const cJSON *skip;
};

static bool each_owned_by_cluster(void *userdata, const cJSON *ncp)
{
    struct owner_search *s = userdata;

    if (ncp != s->skip && eq(member_owner_cluster_name(ncp), s->cluster))
        s->fn(s->userdata, ncp);
    return true;
}

void member_control_planes_of_cluster(const struct render_source *src, const cJSON *cl,
                                      void (*fn)(void *userdata, const cJSON *ncp), void *userdata)
{
    const cJSON *ncp =
        cluster_ref_target(src, cl, "controlPlaneRef", API_KIND_NESTED_CONTROL_PLANE);
    struct owner_search s = {name_of(cl), fn, userdata, ncp};
    struct render_key key = {MEMBER_KEY_OWNER_CLUSTER, s.cluster};

    if (ncp)
        fn(userdata, ncp);
    if (s.cluster)
        each_keyed(src, API_KIND_NESTED_CONTROL_PLANE, ns_of(cl), &key, 1, each_owned_by_cluster,
                   &s);
}
