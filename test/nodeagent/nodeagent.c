#include "test/nodeagent/nodeagent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/kube/config.h"
#include "lib/kube/informer.h"
#include "lib/kube/status.h"
#include "lib/kube/workqueue.h"
#include "lib/util/log.h"
#include "lib/util/strmap.h"
#include "lib/util/strutil.h"
#include "test/nodeagent/podobj.h"

#define NA_FIELD_MANAGER "nestcp-nodeagent"
#define NA_LEASE_NS "kube-node-lease"
#define NA_SHUTDOWN_WAIT 5.0
#define NA_CACHES 5 /* secrets, configmaps, claims, volumes, services */
#define NA_SELECTORS_MAX 4

/* Read only by the node agent, so not among lib/kube's well-known resources. */
static const struct kube_resource NA_PVCS = {"", "v1", "persistentvolumeclaims",
                                             "PersistentVolumeClaim", true};
static const struct kube_resource NA_PVS = {"", "v1", "persistentvolumes", "PersistentVolume",
                                            false};

/* What the agent remembers of a pod bound to its node. */
struct na_pod {
    char *key;      /* "ns/name"; the map's key */
    cJSON *written; /* the status last written, or NULL */
    bool deleting;  /* the final DELETE is in flight */
};

struct nodeagent {
    struct ev_loop *loop;
    struct kube_client *client;
    struct runtime *rt;
    char *node_name;
    char *selectors[NA_SELECTORS_MAX]; /* OR-ed; none: every pod */
    size_t nselectors;
    char *ns; /* the namespace whose pods it binds; NULL: any */
    double heartbeat;
    struct kube_informer *secrets, *configmaps, *claims, *volumes, *services, *pods;
    struct kube_informer *unscheduled[NA_SELECTORS_MAX]; /* one per selector (or one for all) */
    int synced;                                          /* caches of NA_CACHES synced */
    struct workqueue *syncq, *bindq;
    struct strmap state; /* key -> struct na_pod */
    struct na_token *tokens;
    char *api_host, *api_port; /* the API server's address, for KUBERNETES_SERVICE_* */
    ev_timer heartbeat_w;
    ev_timer refresh_w;
    ev_timer shutdown_w;
    bool services_dirty, volumes_dirty;
    bool node_registered;
    unsigned node_calls; /* node and lease requests in flight */
    double started;
    bool closing;       /* being freed: request callbacks only clean up */
    bool shutting_down; /* no new pods run */
    bool pods_stopped;
    bool node_down_sent;
    double shutdown_deadline;
    void (*shutdown_done)(void *userdata);
    void *shutdown_data;
};

/* A service-account token requested for a pod's projected volume, as a kubelet requests one. */
struct na_token {
    struct na_token *next;
    char *key;         /* "<ns>/<pod>/<uid>/<service account>/<expirationSeconds>/<audience>" */
    cJSON *obj;        /* {"token": "..."}, or NULL until the first answer; never logged */
    double refresh_at; /* time_mono() from which a new one is asked for: 80% of its life */
    int error;         /* the last request's failure, or 0 */
    bool requesting;
};

/* One request in flight. */
struct na_call {
    struct nodeagent *na;
    char *key;
    cJSON *status;
};

static struct na_call *call_new(struct nodeagent *na, const char *key)
{
    struct na_call *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->na = na;
    if (key && !(c->key = strdup(key))) {
        free(c);
        return NULL;
    }
    return c;
}

static void call_free(struct na_call *c)
{
    if (!c)
        return;
    free(c->key);
    cJSON_Delete(c->status);
    free(c);
}

static int split_key(const char *key, char *ns, size_t nsize, const char **ret_name)
{
    const char *slash = strchr(key, '/');

    if (!slash || (size_t)(slash - key) >= nsize)
        return -EINVAL;
    memcpy(ns, key, (size_t)(slash - key));
    ns[slash - key] = '\0';
    *ret_name = slash + 1;
    return 0;
}

static int obj_key(const cJSON *obj, char *out, size_t size)
{
    const char *ns = kube_obj_namespace(obj), *name = kube_obj_name(obj);

    if (!ns || !name || (size_t)snprintf(out, size, "%s/%s", ns, name) >= size)
        return -EINVAL;
    return 0;
}

static struct na_pod *pod_state(struct nodeagent *na, const char *key, bool create)
{
    struct na_pod *p = strmap_get(&na->state, key);

    if (p || !create)
        return p;
    p = calloc(1, sizeof(*p));
    if (!p || !(p->key = strdup(key)) || strmap_put(&na->state, p->key, p) < 0) {
        if (p)
            free(p->key);
        free(p);
        return NULL;
    }
    return p;
}

static void pod_state_free(void *value)
{
    struct na_pod *p = value;

    if (!p)
        return;
    cJSON_Delete(p->written);
    free(p->key);
    free(p);
}

static void tokens_forget(struct nodeagent *na, const char *pod_key);

static void pod_state_forget(struct nodeagent *na, const char *key)
{
    pod_state_free(strmap_remove(&na->state, key));
    tokens_forget(na, key);
}

/* ---- the runtime's view of the API ---- */

static struct kube_informer *resolve_informer(const struct nodeagent *na, const char *kind)
{
    if (strcmp(kind, "Secret") == 0)
        return na->secrets;
    if (strcmp(kind, "ConfigMap") == 0)
        return na->configmaps;
    if (strcmp(kind, "PersistentVolumeClaim") == 0)
        return na->claims;
    if (strcmp(kind, "PersistentVolume") == 0)
        return na->volumes;
    return NULL;
}

static void volumes_changed(struct nodeagent *na);

static void token_free(struct na_token *t)
{
    if (!t)
        return;
    free(t->key);
    cJSON_Delete(t->obj);
    free(t);
}

/* Forgets the tokens of a pod ("ns/name") that is gone. */
static void tokens_forget(struct nodeagent *na, const char *pod_key)
{
    size_t n = strlen(pod_key);

    for (struct na_token **pp = &na->tokens; *pp;) {
        struct na_token *t = *pp;

        if (strncmp(t->key, pod_key, n) == 0 && t->key[n] == '/') {
            *pp = t->next;
            token_free(t);
        } else {
            pp = &t->next;
        }
    }
}

static void token_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;
    struct na_token *t;
    const char *token;
    long lifetime;

    if (na->closing)
        goto out;
    for (t = na->tokens; t && strcmp(t->key, c->key) != 0; t = t->next)
        ;
    if (!t)
        goto out; /* its pod went away meanwhile */
    t->requesting = false;
    token = podobj_str(res->body, "status", "token", NULL);
    if (res->code < 0 || !token) {
        t->error = res->code < 0 ? res->code : -EINVAL;
        log_warn("token request failed", "key=%s code=%s message=%s", c->key,
                 kube_code_name(t->error), res->message);
        goto out;
    }
    cJSON_Delete(t->obj);
    t->obj = cJSON_CreateObject();
    if (!t->obj || !cJSON_AddStringToObject(t->obj, "token", token)) {
        cJSON_Delete(t->obj);
        t->obj = NULL;
        t->error = -ENOMEM;
        goto out;
    }
    t->error = 0;
    /* The key's fifth field is the lifetime asked for (the server may shorten it, never
     * below 10 minutes; the kubelet also refreshes at 80%). */
    if (sscanf(c->key, "%*[^/]/%*[^/]/%*[^/]/%*[^/]/%ld", &lifetime) != 1)
        lifetime = 600;
    t->refresh_at = time_mono() + 0.8 * (double)(lifetime < 600 ? 600 : lifetime);
    log_debug("token issued", "key=%s", c->key);
    volumes_changed(na);
out:
    call_free(c);
}

/* Asks the API server for a token bound to the pod, as the kubelet does (TokenRequest). */
static int token_request(struct nodeagent *na, struct na_token *t)
{
    char ns[256], pod[256], uid[128], sa[256], audience[1024] = "";
    long lifetime = 0;
    cJSON *body = NULL, *spec, *ref;
    struct na_call *c = NULL;
    struct kube_request req = {0};
    int r = -ENOMEM;

    if (sscanf(t->key, "%255[^/]/%255[^/]/%127[^/]/%255[^/]/%ld/%1023[^\n]", ns, pod, uid, sa,
               &lifetime, audience) < 5)
        return -EINVAL;
    body = cJSON_CreateObject();
    c = call_new(na, t->key);
    if (!body || !c || !cJSON_AddStringToObject(body, "apiVersion", "authentication.k8s.io/v1") ||
        !cJSON_AddStringToObject(body, "kind", "TokenRequest") ||
        !(spec = cJSON_AddObjectToObject(body, "spec")) ||
        !cJSON_AddNumberToObject(spec, "expirationSeconds", (double)lifetime) ||
        !(ref = cJSON_AddObjectToObject(spec, "boundObjectRef")) ||
        !cJSON_AddStringToObject(ref, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(ref, "kind", "Pod") ||
        !cJSON_AddStringToObject(ref, "name", pod) || !cJSON_AddStringToObject(ref, "uid", uid))
        goto fail;
    if (audience[0]) {
        cJSON *auds = cJSON_AddArrayToObject(spec, "audiences");

        if (!auds || !cJSON_AddItemToArray(auds, cJSON_CreateString(audience)))
            goto fail;
    }
    req.verb = KUBE_CREATE;
    req.resource = &KUBE_SERVICEACCOUNTS;
    req.namespace_ = ns;
    req.name = sa;
    req.subresource = "token";
    req.body = body;
    r = kube_request_send(na->client, &req, token_done, c);
    cJSON_Delete(body);
    body = NULL;
    if (r == 0) {
        t->requesting = true;
        return 0;
    }
fail:
    cJSON_Delete(body);
    call_free(c);
    return r;
}

/* The token of a projected serviceAccountToken source (podobj.h); asks for one when there is
 * none yet or the one there is nears the end of its life. */
static int token_resolve(struct nodeagent *na, const char *ns, const char *name,
                         const cJSON **ret_obj)
{
    char key[2048];
    struct na_token *t;

    if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, name) >= sizeof(key))
        return -ENAMETOOLONG;
    for (t = na->tokens; t && strcmp(t->key, key) != 0; t = t->next)
        ;
    if (!t) {
        t = calloc(1, sizeof(*t));
        if (!t || !(t->key = strdup(key))) {
            free(t);
            return -ENOMEM;
        }
        t->next = na->tokens;
        na->tokens = t;
    }
    if (!t->requesting && (!t->obj || time_mono() >= t->refresh_at)) {
        int r = token_request(na, t);

        if (r < 0)
            t->error = r;
    }
    if (t->obj) {
        *ret_obj = t->obj;
        return 0;
    }
    return t->error && !t->requesting ? t->error : -EAGAIN;
}

/* Whether a token in use should be asked for again (its pod's volume is then refreshed). */
static bool tokens_due(const struct nodeagent *na)
{
    for (const struct na_token *t = na->tokens; t; t = t->next)
        if (t->obj && !t->requesting && time_mono() >= t->refresh_at)
            return true;
    return false;
}

static int resolve(void *userdata, const char *kind, const char *ns, const char *name,
                   const cJSON **ret_obj)
{
    struct nodeagent *na = userdata;
    struct kube_informer *inf = resolve_informer(na, kind);

    if (strcmp(kind, "ServiceAccountToken") == 0)
        return name ? token_resolve(na, ns, name, ret_obj) : -ENOENT;
    const cJSON *obj = inf && name ? kube_informer_get(inf, ns, name) : NULL;

    if (!obj)
        return -ENOENT;
    *ret_obj = obj;
    return 0;
}

static void rt_pod_changed(void *userdata, const char *ns, const char *name)
{
    struct nodeagent *na = userdata;
    char key[512];

    if ((size_t)snprintf(key, sizeof(key), "%s/%s", ns, name) < sizeof(key))
        workqueue_add(na->syncq, key);
}

static void rt_event(void *userdata, const char *ns, const char *name, const char *container,
                     const char *reason, const char *message)
{
    bool warn = strcmp(reason, "Failed") == 0 || strcmp(reason, "BackOff") == 0 ||
                strcmp(reason, "Unhealthy") == 0 || strcmp(reason, "FailedMount") == 0;

    log_emit(warn ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, reason, "pod=%s/%s container=%s detail=%s", ns,
             name, container ? container : "-", message);
}

/* ---- pod status, deletion ---- */

static void status_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;
    struct na_pod *p;

    if (na->closing)
        goto out;
    log_debug("status written", "pod=%s code=%s", c->key, kube_code_name(res->code));
    if (res->code == 0 || res->code == -ENOENT) {
        p = pod_state(na, c->key, res->code == 0);
        if (p && res->code == 0) {
            cJSON_Delete(p->written);
            p->written = c->status;
            c->status = NULL;
        }
        workqueue_done(na->syncq, c->key, WORKQUEUE_RESULT_SUCCESS);
    } else {
        log_warn("status update failed", "pod=%s code=%s message=%s", c->key,
                 kube_code_name(res->code), res->message);
        workqueue_done(na->syncq, c->key, WORKQUEUE_RESULT_ERROR);
    }
out:
    call_free(c);
}

/* Writes the runtime's status of the pod when it differs from the last one written.
 * Returns true when a request went out (it reports workqueue_done itself). */
static bool status_write(struct nodeagent *na, const char *key, const char *ns, const char *name)
{
    struct na_pod *p = pod_state(na, key, false);
    cJSON *st = runtime_pod_status(na->rt, ns, name), *patch = NULL;
    struct kube_request req = {0};
    struct na_call *c = NULL;
    int r;

    if (!st)
        return false;
    if (p && p->written && cJSON_Compare(p->written, st, true)) {
        cJSON_Delete(st);
        return false;
    }
    patch = cJSON_CreateObject();
    c = call_new(na, key);
    if (!patch || !c || !cJSON_AddItemReferenceToObject(patch, "status", st))
        goto fail;
    req.verb = KUBE_PATCH;
    req.resource = &KUBE_PODS;
    req.namespace_ = ns;
    req.name = name;
    req.subresource = "status";
    req.patch_type = KUBE_PATCH_MERGE;
    req.body = patch;
    c->status = st;
    st = NULL;
    r = kube_request_send(na->client, &req, status_done, c);
    cJSON_Delete(patch);
    if (r < 0) {
        call_free(c); /* frees the status with it */
        return false;
    }
    return true;
fail:
    cJSON_Delete(patch);
    cJSON_Delete(st);
    call_free(c);
    return false;
}

static void delete_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;
    struct na_pod *p;

    if (na->closing)
        goto out;
    p = pod_state(na, c->key, false);
    if (p)
        p->deleting = false;
    if (res->code == 0 || res->code == -ENOENT || res->code == -EBUSY) {
        log_info("pod deleted", "pod=%s", c->key);
        workqueue_done(na->syncq, c->key, WORKQUEUE_RESULT_SUCCESS);
    } else {
        log_warn("pod delete failed", "pod=%s code=%s message=%s", c->key,
                 kube_code_name(res->code), res->message);
        workqueue_done(na->syncq, c->key, WORKQUEUE_RESULT_ERROR);
    }
out:
    call_free(c);
}

/* The kubelet's last word on a deleted pod: remove it now that nothing of it runs. */
static bool pod_delete(struct nodeagent *na, const char *key, const cJSON *obj)
{
    struct na_pod *p = pod_state(na, key, true);
    cJSON *opts = cJSON_CreateObject();
    struct kube_request req = {0};
    struct na_call *c = call_new(na, key);
    int r = -ENOMEM;

    if (p && p->deleting) {
        cJSON_Delete(opts);
        call_free(c);
        return false;
    }
    if (opts && c && cJSON_AddNumberToObject(opts, "gracePeriodSeconds", 0)) {
        req.verb = KUBE_DELETE;
        req.resource = &KUBE_PODS;
        req.namespace_ = kube_obj_namespace(obj);
        req.name = kube_obj_name(obj);
        req.precondition_uid = kube_obj_uid(obj);
        req.body = opts;
        r = kube_request_send(na->client, &req, delete_done, c);
    }
    cJSON_Delete(opts);
    if (r < 0) {
        call_free(c);
        return false;
    }
    if (p)
        p->deleting = true;
    return true;
}

/* Stops the runtime's pod of that name (another incarnation, or one gone from the API) and
 * forgets it once stopped. Returns true when it is gone from the runtime. */
static bool runtime_retire(struct nodeagent *na, const char *key, const char *ns, const char *name,
                           double grace)
{
    if (!runtime_pod_uid(na->rt, ns, name))
        return true;
    if (!runtime_pod_stopped(na->rt, ns, name)) {
        runtime_pod_stop(na->rt, ns, name, grace);
        return false; /* pod_stopped brings the key back */
    }
    runtime_pod_remove(na->rt, ns, name);
    pod_state_forget(na, key);
    return true;
}

static void sync_pod(void *userdata, const char *key)
{
    struct nodeagent *na = userdata;
    const cJSON *obj = NULL;
    const char *name, *uid, *rt_uid;
    char ns[256];
    struct err e = {0};
    int r;

    if (split_key(key, ns, sizeof(ns), &name) < 0)
        goto done;
    obj = na->pods ? kube_informer_get(na->pods, ns, name) : NULL;
    rt_uid = runtime_pod_uid(na->rt, ns, name);
    uid = obj ? kube_obj_uid(obj) : NULL;
    log_debug("sync pod", "pod=%s uid=%s running_uid=%s deleting=%s", key, uid ? uid : "-",
              rt_uid ? rt_uid : "-",
              podobj_get(obj, "metadata", "deletionTimestamp", NULL) ? "yes" : "no");
    if (!obj || (rt_uid && uid && strcmp(rt_uid, uid) != 0)) {
        /* Gone from the API (or replaced): nothing of the old pod may keep running. */
        if (!runtime_retire(na, key, ns, name, -1))
            goto done;
        pod_state_forget(na, key);
        if (!obj)
            goto done;
        rt_uid = NULL;
    }
    if (podobj_get(obj, "metadata", "deletionTimestamp", NULL)) {
        const cJSON *g = podobj_get(obj, "metadata", "deletionGracePeriodSeconds", NULL);
        double grace = cJSON_IsNumber(g) ? g->valuedouble : -1;

        if (rt_uid && !runtime_pod_stopped(na->rt, ns, name)) {
            runtime_pod_stop(na->rt, ns, name, grace);
            if (status_write(na, key, ns, name))
                return;
            goto done;
        }
        if (pod_delete(na, key, obj))
            return;
        goto done;
    }
    if (na->shutting_down) {
        if (rt_uid && status_write(na, key, ns, name))
            return;
        goto done;
    }
    r = runtime_pod_apply(na->rt, obj, &e);
    if (r < 0) {
        log_warn("cannot run pod", "pod=%s code=%s message=%s", key, err_code_name(r), e.msg);
        workqueue_done(na->syncq, key, WORKQUEUE_RESULT_ERROR);
        return;
    }
    if (!rt_uid)
        log_info("running pod", "pod=%s uid=%s", key, uid ? uid : "");
    if (status_write(na, key, ns, name))
        return;
done:
    workqueue_done(na->syncq, key, WORKQUEUE_RESULT_SUCCESS);
}

/* ---- binding ---- */

static void bind_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;

    if (na->closing)
        goto out;
    if (res->code == 0) {
        log_info("pod bound", "pod=%s node=%s", c->key, na->node_name);
        workqueue_done(na->bindq, c->key, WORKQUEUE_RESULT_SUCCESS);
    } else if (res->code == -ENOENT || res->code == -EEXIST || res->code == -EBUSY) {
        workqueue_done(na->bindq, c->key, WORKQUEUE_RESULT_SUCCESS); /* gone or bound */
    } else {
        log_warn("binding failed", "pod=%s code=%s message=%s", c->key, err_code_name(res->code),
                 res->message);
        workqueue_done(na->bindq, c->key, WORKQUEUE_RESULT_ERROR);
    }
out:
    call_free(c);
}

/* Scheduling readiness: a pod with a non-empty spec.schedulingGates is not scheduled (the
 * scheduler leaves it Pending until every gate is removed). */
static bool pod_gated(const cJSON *obj)
{
    return cJSON_GetArraySize(podobj_get(obj, "spec", "schedulingGates", NULL)) > 0;
}

static void bind_pod(void *userdata, const char *key)
{
    struct nodeagent *na = userdata;
    const cJSON *obj;
    const char *name;
    char ns[256];
    cJSON *binding = NULL;
    struct na_call *c = NULL;
    struct kube_request req = {0};
    int r = -ENOMEM;

    if (na->shutting_down || !na->unscheduled[0] || split_key(key, ns, sizeof(ns), &name) < 0)
        goto skip;
    obj = NULL;
    for (size_t i = 0; !obj && i < NA_SELECTORS_MAX && na->unscheduled[i]; i++)
        obj = kube_informer_get(na->unscheduled[i], ns, name);
    if (!obj || podobj_str(obj, "spec", "nodeName", NULL) ||
        podobj_get(obj, "metadata", "deletionTimestamp", NULL))
        goto skip;
    if (pod_gated(obj)) {
        /* Its update that removes the last gate queues it again (unscheduled_update). */
        log_debug("pod scheduling gated", "pod=%s gates=%d", key,
                  cJSON_GetArraySize(podobj_get(obj, "spec", "schedulingGates", NULL)));
        goto skip;
    }
    binding = cJSON_Parse("{\"apiVersion\":\"v1\",\"kind\":\"Binding\",\"metadata\":{},"
                          "\"target\":{\"apiVersion\":\"v1\",\"kind\":\"Node\"}}");
    c = call_new(na, key);
    if (!binding || !c ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(binding, "metadata"), "name", name) ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(binding, "metadata"), "namespace", ns) ||
        !cJSON_AddStringToObject(cJSON_GetObjectItem(binding, "target"), "name", na->node_name))
        goto fail;
    req.verb = KUBE_CREATE;
    req.resource = &KUBE_PODS;
    req.namespace_ = ns;
    req.name = name;
    req.subresource = "binding";
    req.body = binding;
    r = kube_request_send(na->client, &req, bind_done, c);
    cJSON_Delete(binding);
    if (r == 0)
        return;
    binding = NULL;
fail:
    cJSON_Delete(binding);
    call_free(c);
    workqueue_done(na->bindq, key, WORKQUEUE_RESULT_ERROR);
    return;
skip:
    workqueue_done(na->bindq, key, WORKQUEUE_RESULT_SUCCESS);
}

/* ---- informer handlers ---- */

static void queue_obj(struct workqueue *q, const cJSON *obj)
{
    char key[512];

    if (q && obj_key(obj, key, sizeof(key)) == 0)
        workqueue_add(q, key);
}

static void pods_add(void *userdata, const cJSON *obj)
{
    queue_obj(((struct nodeagent *)userdata)->syncq, obj);
}

static void pods_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    queue_obj(((struct nodeagent *)userdata)->syncq, new_obj);
}

static void pods_delete(void *userdata, const cJSON *obj, bool unknown)
{
    queue_obj(((struct nodeagent *)userdata)->syncq, obj);
}

static void unscheduled_add(void *userdata, const cJSON *obj)
{
    queue_obj(((struct nodeagent *)userdata)->bindq, obj);
}

/* Every update of an unscheduled pod queues it: the one that removes its scheduling gates
 * binds it at once, as does one after a failed or skipped attempt. */
static void unscheduled_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    queue_obj(((struct nodeagent *)userdata)->bindq, new_obj);
}

static void refresh_schedule(struct nodeagent *na)
{
    if (!ev_is_active(&na->refresh_w))
        ev_timer_start(na->loop, &na->refresh_w);
}

static void volumes_changed(struct nodeagent *na)
{
    na->volumes_dirty = true;
    refresh_schedule(na);
}

static void data_add(void *userdata, const cJSON *obj)
{
    volumes_changed(userdata);
}

static void data_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    volumes_changed(userdata);
}

static void data_delete(void *userdata, const cJSON *obj, bool unknown)
{
    volumes_changed(userdata);
}

static void services_changed(struct nodeagent *na)
{
    na->services_dirty = true;
    refresh_schedule(na);
}

static void svc_add(void *userdata, const cJSON *obj)
{
    services_changed(userdata);
}

static void svc_update(void *userdata, const cJSON *old_obj, const cJSON *new_obj)
{
    services_changed(userdata);
}

static void svc_delete(void *userdata, const cJSON *obj, bool unknown)
{
    services_changed(userdata);
}

static bool collect(void *userdata, const cJSON *obj)
{
    cJSON *dup = cJSON_Duplicate(obj, true);

    return dup && cJSON_AddItemToArray(userdata, dup);
}

static void refresh_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct nodeagent *na = (struct nodeagent *)((char *)w - offsetof(struct nodeagent, refresh_w));

    if (na->services_dirty) {
        cJSON *all = cJSON_CreateArray();

        if (all) {
            kube_informer_foreach(na->services, collect, all);
            runtime_set_services(na->rt, all);
            cJSON_Delete(all);
            na->services_dirty = false;
        }
    }
    if (na->volumes_dirty) {
        na->volumes_dirty = false;
        runtime_refresh_volumes(na->rt);
    }
}

/* ---- the Node ---- */

static cJSON *node_status(struct nodeagent *na, bool ready)
{
    char now[32], since[32];
    cJSON *st =
        cJSON_Parse("{\"capacity\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"1000\","
                    "\"ephemeral-storage\":\"1Ti\"},"
                    "\"allocatable\":{\"cpu\":\"64\",\"memory\":\"256Gi\",\"pods\":\"1000\","
                    "\"ephemeral-storage\":\"1Ti\"},"
                    "\"daemonEndpoints\":{\"kubeletEndpoint\":{\"Port\":10250}},"
                    "\"nodeInfo\":{\"machineID\":\"\",\"systemUUID\":\"\",\"bootID\":\"\","
                    "\"kernelVersion\":\"\",\"osImage\":\"nestcp-nodeagent\","
                    "\"containerRuntimeVersion\":\"nestcp://0.1\",\"kubeletVersion\":\"v1.37.2\","
                    "\"kubeProxyVersion\":\"v1.37.2\",\"operatingSystem\":\"linux\","
                    "\"architecture\":\"amd64\"}}");
    cJSON *conds, *addrs, *c;
    static const char *const pressures[] = {"MemoryPressure", "DiskPressure", "PIDPressure"};

    if (!st)
        return NULL;
    time_format_rfc3339(time_wall(), now);
    time_format_rfc3339(na->started, since);
    conds = cJSON_AddArrayToObject(st, "conditions");
    addrs = cJSON_AddArrayToObject(st, "addresses");
    if (!conds || !addrs)
        goto fail;
    for (size_t i = 0; i < 4; i++) {
        bool is_ready = i == 3;

        c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(conds, c) ||
            !cJSON_AddStringToObject(c, "type", is_ready ? "Ready" : pressures[i]) ||
            !cJSON_AddStringToObject(c, "status", is_ready && ready ? "True" : "False") ||
            !cJSON_AddStringToObject(c, "reason",
                                     is_ready ? (ready ? "KubeletReady" : "KubeletNotReady")
                                              : "KubeletHasSufficientResources") ||
            !cJSON_AddStringToObject(c, "message",
                                     is_ready && !ready ? "nestcp-nodeagent stopped"
                                                        : "nestcp-nodeagent is running") ||
            !cJSON_AddStringToObject(c, "lastHeartbeatTime", now) ||
            !cJSON_AddStringToObject(c, "lastTransitionTime", is_ready && !ready ? now : since))
            goto fail;
    }
    for (int i = 0; i < 2; i++) {
        c = cJSON_CreateObject();
        if (!c || !cJSON_AddItemToArray(addrs, c) ||
            !cJSON_AddStringToObject(c, "type", i == 0 ? "InternalIP" : "Hostname") ||
            !cJSON_AddStringToObject(c, "address", i == 0 ? "127.0.0.1" : na->node_name))
            goto fail;
    }
    return st;
fail:
    cJSON_Delete(st);
    return NULL;
}

static void node_call_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;

    if (!na->closing) {
        na->node_calls--;
        if (res->code < 0)
            log_warn("node heartbeat failed", "node=%s what=%s code=%s message=%s", na->node_name,
                     c->key, err_code_name(res->code), res->message);
    }
    call_free(c);
}

static void node_send(struct nodeagent *na, const char *what, const struct kube_request *req,
                      kube_done_fn done)
{
    struct na_call *c = call_new(na, what);

    if (c && kube_request_send(na->client, req, done, c) == 0) {
        na->node_calls++;
        return;
    }
    call_free(c);
}

/* Node status and Lease renewal. */
static void node_heartbeat(struct nodeagent *na, bool ready)
{
    struct kube_request req = {0};
    cJSON *patch = cJSON_CreateObject(), *st = node_status(na, ready), *lease = NULL;
    char renew[64], now[32];
    double t = time_wall();

    if (patch && st && cJSON_AddItemToObject(patch, "status", st)) {
        st = NULL;
        req.verb = KUBE_PATCH;
        req.resource = &KUBE_NODES;
        req.name = na->node_name;
        req.subresource = "status";
        req.patch_type = KUBE_PATCH_MERGE;
        req.body = patch;
        node_send(na, "status", &req, node_call_done);
    }
    cJSON_Delete(st);
    cJSON_Delete(patch);
    if (!ready)
        return;
    time_format_rfc3339(t, now);
    /* MicroTime: "2006-01-02T15:04:05.000000Z". */
    snprintf(renew, sizeof(renew), "%.19s.%06ldZ", now, (long)((t - (double)(long)t) * 1e6));
    lease = cJSON_CreateObject();
    if (lease && cJSON_AddStringToObject(lease, "apiVersion", "coordination.k8s.io/v1") &&
        cJSON_AddStringToObject(lease, "kind", "Lease")) {
        cJSON *meta = cJSON_AddObjectToObject(lease, "metadata");
        cJSON *spec = cJSON_AddObjectToObject(lease, "spec");

        if (meta && spec && cJSON_AddStringToObject(meta, "name", na->node_name) &&
            cJSON_AddStringToObject(meta, "namespace", NA_LEASE_NS) &&
            cJSON_AddStringToObject(spec, "holderIdentity", na->node_name) &&
            cJSON_AddNumberToObject(spec, "leaseDurationSeconds", 40) &&
            cJSON_AddStringToObject(spec, "renewTime", renew)) {
            memset(&req, 0, sizeof(req));
            req.verb = KUBE_PATCH;
            req.resource = &KUBE_LEASES;
            req.namespace_ = NA_LEASE_NS;
            req.name = na->node_name;
            req.patch_type = KUBE_PATCH_APPLY;
            req.field_manager = NA_FIELD_MANAGER;
            req.force = true;
            req.body = lease;
            node_send(na, "lease", &req, node_call_done);
        }
    }
    cJSON_Delete(lease);
}

static void start_binding(struct nodeagent *na);

static void node_register_done(void *userdata, const struct kube_result *res)
{
    struct na_call *c = userdata;
    struct nodeagent *na = c->na;

    if (na->closing)
        goto out;
    na->node_calls--;
    if (res->code < 0) {
        log_warn("node registration failed", "node=%s code=%s message=%s", na->node_name,
                 err_code_name(res->code), res->message);
        goto out; /* the heartbeat timer tries again */
    }
    log_info("node registered", "node=%s", na->node_name);
    na->node_registered = true;
    node_heartbeat(na, true);
    start_binding(na);
out:
    call_free(c);
}

static void node_register(struct nodeagent *na)
{
    struct kube_request req = {0};
    char body[1024];
    cJSON *node;

    snprintf(body, sizeof(body),
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"kubernetes.io/hostname\":\"%s\",\"kubernetes.io/os\":\"linux\","
             "\"kubernetes.io/arch\":\"amd64\",\"nestcp.dev/nodeagent\":\"true\"}}}",
             na->node_name, na->node_name);
    node = cJSON_Parse(body);
    if (!node)
        return;
    req.verb = KUBE_PATCH;
    req.resource = &KUBE_NODES;
    req.name = na->node_name;
    req.patch_type = KUBE_PATCH_APPLY;
    req.field_manager = NA_FIELD_MANAGER;
    req.force = true;
    req.body = node;
    node_send(na, "register", &req, node_register_done);
    cJSON_Delete(node);
}

static void heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct nodeagent *na =
        (struct nodeagent *)((char *)w - offsetof(struct nodeagent, heartbeat_w));

    if (na->shutting_down)
        return;
    if (!na->node_registered)
        node_register(na);
    else
        node_heartbeat(na, true);
    if (tokens_due(na))
        volumes_changed(na);
}

/* ---- start-up ---- */

static void start_binding(struct nodeagent *na)
{
    static const struct kube_informer_handlers h = {.on_add = unscheduled_add,
                                                    .on_update = unscheduled_update};
    struct kube_informer_opts o = {
        .resource = &KUBE_PODS,
        .namespace_ = na->ns,
        .field_selector = "spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed",
    };
    size_t n = na->nselectors ? na->nselectors : 1;

    if (na->unscheduled[0] || na->shutting_down)
        return;
    for (size_t i = 0; i < n; i++) {
        o.label_selector = na->nselectors ? na->selectors[i] : NULL;
        if (kube_informer_new(na->client, &o, &h, na, &na->unscheduled[i]) < 0 ||
            kube_informer_start(na->unscheduled[i]) < 0)
            log_error("cannot watch unscheduled pods", "node=%s selector=%s", na->node_name,
                      o.label_selector ? o.label_selector : "");
    }
}

static void unscheduled_free(struct nodeagent *na)
{
    for (size_t i = 0; i < NA_SELECTORS_MAX; i++) {
        kube_informer_free(na->unscheduled[i]);
        na->unscheduled[i] = NULL;
    }
}

static void start_pods(struct nodeagent *na)
{
    static const struct kube_informer_handlers h = {
        .on_add = pods_add, .on_update = pods_update, .on_delete = pods_delete};
    char selector[300];
    struct kube_informer_opts o = {.resource = &KUBE_PODS, .field_selector = selector};

    snprintf(selector, sizeof(selector), "spec.nodeName=%s", na->node_name);
    if (kube_informer_new(na->client, &o, &h, na, &na->pods) < 0 ||
        kube_informer_start(na->pods) < 0) {
        log_error("cannot watch pods", "node=%s", na->node_name);
        return;
    }
    node_register(na);
    ev_timer_start(na->loop, &na->heartbeat_w);
}

static void cache_synced(void *userdata)
{
    struct nodeagent *na = userdata;

    if (++na->synced == NA_CACHES) {
        refresh_cb(na->loop, &na->refresh_w, 0);
        start_pods(na);
    }
}

int nodeagent_start(struct nodeagent *na)
{
    static const struct kube_informer_handlers data_h = {.on_add = data_add,
                                                         .on_update = data_update,
                                                         .on_delete = data_delete,
                                                         .on_synced = cache_synced};
    static const struct kube_informer_handlers svc_h = {.on_add = svc_add,
                                                        .on_update = svc_update,
                                                        .on_delete = svc_delete,
                                                        .on_synced = cache_synced};
    struct kube_informer_opts o = {0};
    int r;

    o.resource = &KUBE_SECRETS;
    r = kube_informer_new(na->client, &o, &data_h, na, &na->secrets);
    if (r == 0) {
        o.resource = &KUBE_CONFIGMAPS;
        r = kube_informer_new(na->client, &o, &data_h, na, &na->configmaps);
    }
    if (r == 0) {
        o.resource = &NA_PVCS;
        r = kube_informer_new(na->client, &o, &data_h, na, &na->claims);
    }
    if (r == 0) {
        o.resource = &NA_PVS;
        r = kube_informer_new(na->client, &o, &data_h, na, &na->volumes);
    }
    if (r == 0) {
        o.resource = &KUBE_SERVICES;
        r = kube_informer_new(na->client, &o, &svc_h, na, &na->services);
    }
    if (r == 0)
        r = kube_informer_start(na->secrets);
    if (r == 0)
        r = kube_informer_start(na->configmaps);
    if (r == 0)
        r = kube_informer_start(na->claims);
    if (r == 0)
        r = kube_informer_start(na->volumes);
    if (r == 0)
        r = kube_informer_start(na->services);
    return r;
}

/* ---- shutdown ---- */

static bool queue_idle(const struct workqueue *q)
{
    const struct workqueue_metrics *m = workqueue_metrics(q);

    return m->depth == 0 && m->in_flight == 0 && m->waiting == 0;
}

static bool enqueue_running(void *userdata, const cJSON *obj)
{
    queue_obj(((struct nodeagent *)userdata)->syncq, obj);
    return true;
}

static void pods_all_stopped(void *userdata)
{
    struct nodeagent *na = userdata;

    na->pods_stopped = true;
    log_info("every pod stopped", "node=%s", na->node_name);
    if (na->pods)
        kube_informer_foreach(na->pods, enqueue_running, na);
    if (na->node_registered) {
        node_heartbeat(na, false);
        na->node_down_sent = true;
    }
    na->shutdown_deadline = time_mono() + NA_SHUTDOWN_WAIT;
}

static void shutdown_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
    struct nodeagent *na = (struct nodeagent *)((char *)w - offsetof(struct nodeagent, shutdown_w));

    if (!na->pods_stopped)
        return;
    if (time_mono() < na->shutdown_deadline && (!queue_idle(na->syncq) || na->node_calls > 0))
        return;
    ev_timer_stop(loop, w);
    if (na->shutdown_done)
        na->shutdown_done(na->shutdown_data);
}

void nodeagent_shutdown(struct nodeagent *na, double max_grace, void (*done)(void *userdata),
                        void *userdata)
{
    if (na->shutting_down)
        return;
    na->shutting_down = true;
    na->shutdown_done = done;
    na->shutdown_data = userdata;
    ev_timer_stop(na->loop, &na->heartbeat_w);
    unscheduled_free(na);
    runtime_stop_all(na->rt, max_grace, pods_all_stopped, na);
    ev_timer_start(na->loop, &na->shutdown_w);
}

/* ---- lifecycle ---- */

int nodeagent_new(struct ev_loop *loop, const struct kube_config *cfg,
                  const struct nodeagent_opts *opts, struct nodeagent **ret_agent, struct err *e)
{
    struct nodeagent *na = calloc(1, sizeof(*na));
    struct runtime_opts ro = opts->runtime;
    struct workqueue_opts qo = {.concurrency = 4, .base_delay = 0.2, .max_delay = 30};
    int r = -ENOMEM;

    if (!na)
        return -ENOMEM;
    na->loop = loop;
    na->started = time_wall();
    na->heartbeat = opts->heartbeat > 0 ? opts->heartbeat : 10;
    ev_timer_init(&na->heartbeat_w, heartbeat_cb, na->heartbeat, na->heartbeat);
    ev_timer_init(&na->refresh_w, refresh_cb, 0.2, 0);
    ev_timer_init(&na->shutdown_w, shutdown_cb, 0.1, 0.1);
    na->node_name = strdup(opts->node_name ? opts->node_name : "nestcp-node");
    na->ns = str_dup(opts->namespace_);
    if (!na->node_name || (opts->namespace_ && !na->ns))
        goto fail;
    for (size_t i = 0; opts->selectors && opts->selectors[i]; i++) {
        if (i == NA_SELECTORS_MAX) {
            r = err_set(e, -EINVAL, "at most %d selectors", NA_SELECTORS_MAX);
            goto fail;
        }
        if (!(na->selectors[i] = strdup(opts->selectors[i])))
            goto fail;
        na->nselectors = i + 1;
    }
    r = kube_client_new(loop, cfg, &na->client, e);
    if (r < 0)
        goto fail;
    r = workqueue_new(loop, &qo, sync_pod, na, &na->syncq);
    if (r == 0)
        r = workqueue_new(loop, &qo, bind_pod, na, &na->bindq);
    if (r < 0)
        goto fail;
    ro.node_name = na->node_name;
    ro.resolve = resolve;
    /* In-cluster clients in pods (KUBERNETES_SERVICE_HOST/PORT) reach the API server this
     * agent talks to: "https://HOST:PORT" of its kubeconfig. */
    if (cfg->server && strncmp(cfg->server, "https://", 8) == 0) {
        const char *host = cfg->server + 8, *colon = strrchr(host, ':');

        if (colon && colon > host) {
            na->api_host = strndup(host, (size_t)(colon - host));
            na->api_port = strdup(colon + 1);
            r = -ENOMEM;
            if (!na->api_host || !na->api_port)
                goto fail;
            ro.api_host = na->api_host;
            ro.api_port = na->api_port;
        }
    }
    ro.cb.pod_changed = rt_pod_changed;
    ro.cb.pod_stopped = rt_pod_changed;
    ro.cb.event = rt_event;
    ro.userdata = na;
    r = runtime_new(loop, &ro, &na->rt, e);
    if (r < 0)
        goto fail;
    *ret_agent = na;
    return 0;
fail:
    nodeagent_free(na);
    return r;
}

void nodeagent_free(struct nodeagent *na)
{
    if (!na)
        return;
    ev_timer_stop(na->loop, &na->heartbeat_w);
    ev_timer_stop(na->loop, &na->refresh_w);
    ev_timer_stop(na->loop, &na->shutdown_w);
    unscheduled_free(na);
    kube_informer_free(na->pods);
    kube_informer_free(na->secrets);
    kube_informer_free(na->configmaps);
    kube_informer_free(na->claims);
    kube_informer_free(na->volumes);
    kube_informer_free(na->services);
    na->closing = true;
    kube_client_free(na->client); /* request callbacks see closing and only clean up */
    workqueue_free(na->syncq);
    workqueue_free(na->bindq);
    runtime_free(na->rt);
    strmap_done(&na->state, pod_state_free);
    while (na->tokens) {
        struct na_token *t = na->tokens;

        na->tokens = t->next;
        token_free(t);
    }
    free(na->api_host);
    free(na->api_port);
    free(na->node_name);
    for (size_t i = 0; i < na->nselectors; i++)
        free(na->selectors[i]);
    free(na->ns);
    free(na);
}
