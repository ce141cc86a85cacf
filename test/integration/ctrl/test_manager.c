#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/ctrl/httpserver.h"
#include "lib/ctrl/manager.h"
#include "lib/util/buf.h"
#include "lib/util/strutil.h"
#include "test/support/kube_testenv.h"

/*
 * The manager in this process against the real super cluster, with a cache table of its own and
 * a tiny controller. Its primary is a custom resource with a status subresource, which the
 * manager knows only by the table: NestedControlPlane, as test/support/crds.sh installs it.
 * For each one the controller applies a headless Service it controls (so the shared Services
 * cache maps changes back to it) and a ConfigMap naming the manager that wrote it, then sets
 * status.phase with an update at the cached resourceVersion, recording an Event. An optional
 * cache of a resource no CRD defines stays empty and counts as synced.
 */

#define NCP_API_VERSION "controlplane.cluster.x-k8s.io/v1beta1"
#define OWNED_LABEL "app.kubernetes.io/managed-by"
#define OWNED_SELECTOR OWNED_LABEL "=ctrl-test"

static const struct kube_resource PRIMARY = {"controlplane.cluster.x-k8s.io", "v1beta1",
                                             "nestedcontrolplanes", "NestedControlPlane", true};
/* An optional resource no test defines: Cluster API's Cluster, which other tests on the same
 * super cluster install, would be present or absent depending on what runs beside this test (and
 * unreadable at v1beta1 while a Cluster exists, its conversion webhook not running). */
static const struct kube_resource ABSENT = {"absent.nestcp.test", "v1", "nothings", "Nothing",
                                            true};
/* A custom resource the test defines, read at v2 when served, else v1. */
#define GIZMO_GROUP "ctrl-versions.nestcp.test"
static const struct kube_resource GIZMOS = {GIZMO_GROUP, "v1", "gizmos", "Gizmo", true};
static const char *const gizmo_versions[] = {"v2", "v1", NULL};
static const struct ctrl_cache_spec caches[] = {
    {&PRIMARY, NULL, false, NULL, NULL, NULL},
    {&ABSENT, NULL, true, NULL, NULL, NULL},
    {&KUBE_SERVICES, OWNED_SELECTOR, false, NULL, NULL, NULL},
    {&KUBE_CONFIGMAPS, OWNED_SELECTOR, false, NULL, NULL, NULL},
    {&GIZMOS, NULL, true, NULL, gizmo_versions, NULL},
};

struct tiny {
    struct manager *m;
    struct kube_client *client;
    struct httpserver *http;
    const char *identity;
    int reconciles;
    bool conflict_once; /* the next status update uses a stale resourceVersion */
    /* Instead: ConfigMaps <name>-new and <name>-theirs, applied claimed for the primary. */
    bool claim;
    /* Instead of the tiny controller: this one, of the first cache's resource (with a table of
     * caches of the test's own, in the options). */
    int (*reconcile)(void *ctx, const struct ctrl_view *view, const char *ns, const char *name,
                     struct plan *plan, struct err *e);
};

static struct kt t;
/* Managers still running, freed by the test teardown when an assertion ended a test early. */
static struct tiny *live[4];

static cJSON *owned(const char *kind, const char *ns, const char *name, const cJSON *owner)
{
    cJSON *o = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON *refs = cJSON_AddArrayToObject(meta, "ownerReferences"), *ref = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(meta, "labels");

    cJSON_AddStringToObject(o, "apiVersion", "v1");
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", ns);
    cJSON_AddStringToObject(labels, OWNED_LABEL, "ctrl-test");
    cJSON_AddStringToObject(ref, "apiVersion", NCP_API_VERSION);
    cJSON_AddStringToObject(ref, "kind", "NestedControlPlane");
    cJSON_AddStringToObject(ref, "name", kube_obj_name(owner));
    cJSON_AddStringToObject(ref, "uid", kube_obj_uid(owner));
    cJSON_AddBoolToObject(ref, "controller", true);
    cJSON_AddItemToArray(refs, ref);
    return o;
}

static int tiny_reconcile(void *ctx, const struct ctrl_view *view, const char *ns, const char *name,
                          struct plan *plan, struct err *e)
{
    struct tiny *ti = ctx;
    const cJSON *ncp = kube_store_get(view->stores[0], ns, name);
    const cJSON *phase;
    char child[256];
    cJSON *svc, *spec, *ports, *port, *cm, *status;

    ti->reconciles++;
    if (!ncp)
        return 0;
    if (ti->claim) {
        for (int i = 0; i < 2; i++) {
            snprintf(child, sizeof(child), "%s-%s", name, i == 0 ? "new" : "theirs");
            cm = owned("ConfigMap", ns, child, ncp);
            cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "data"), "writer", ti->identity);
            if (plan_apply_claimed(plan, &KUBE_CONFIGMAPS, cm, kube_obj_uid(ncp),
                                   "ConfigMap %s/%s: missing", ns, child) < 0)
                return err_set(e, -ENOMEM, "out of memory");
        }
        return 0;
    }
    snprintf(child, sizeof(child), "%s-svc", name);
    svc = owned("Service", ns, child, ncp);
    spec = cJSON_AddObjectToObject(svc, "spec");
    cJSON_AddStringToObject(spec, "clusterIP", "None");
    ports = cJSON_AddArrayToObject(spec, "ports");
    port = cJSON_CreateObject();
    cJSON_AddStringToObject(port, "name", "http");
    /* Server-side apply in 1.20 needs the list-map key spelled out. */
    cJSON_AddStringToObject(port, "protocol", "TCP");
    cJSON_AddNumberToObject(port, "port", 80);
    cJSON_AddItemToArray(ports, port);
    if (plan_apply(plan, &KUBE_SERVICES, svc, "Service %s/%s: desired", ns, child) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    snprintf(child, sizeof(child), "%s-cm", name);
    cm = owned("ConfigMap", ns, child, ncp);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "data"), "writer", ti->identity);
    if (plan_apply(plan, &KUBE_CONFIGMAPS, cm, "ConfigMap %s/%s: desired", ns, child) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    phase =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ncp, "status"), "phase");
    if (cJSON_IsString(phase) && strcmp(phase->valuestring, "Reconciled") == 0)
        return 0;
    status = cJSON_Duplicate(ncp, true);
    cJSON_DeleteItemFromObjectCaseSensitive(status, "status");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(status, "status"), "phase", "Reconciled");
    if (ti->conflict_once) {
        ti->conflict_once = false;
        cJSON_ReplaceItemInObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(status, "metadata"),
                                               "resourceVersion", cJSON_CreateString("1"));
    }
    if (plan_update_status(plan, &PRIMARY, status, "status: phase Reconciled") < 0 ||
        plan_event(plan, KUBE_EVENT_NORMAL, "Reconciled", "children applied by %s", ti->identity) <
            0)
        return err_set(e, -ENOMEM, "out of memory");
    return 0;
}

static void tiny_start(struct tiny *ti, const struct manager_opts *extra, bool http)
{
    struct manager_opts o = extra ? *extra : (struct manager_opts){0};
    struct controller_def def = {
        .name = "tiny", .primary = &PRIMARY, .reconcile = tiny_reconcile, .ctx = ti};
    struct httpserver_opts ho = {.metrics_address = "127.0.0.1:0",
                                 .health_address = "127.0.0.1:0",
                                 .metrics_insecure = true};
    struct err e;

    o.namespace_ = t.ns;
    for (int i = 0; i < 4; i++) {
        if (!live[i]) {
            live[i] = ti;
            break;
        }
    }
    ti->client = kt_client(&t);
    if (!o.caches) {
        o.caches = caches;
        o.n_caches = sizeof(caches) / sizeof(caches[0]);
    }
    if (ti->reconcile) {
        def.primary = o.caches[0].resource;
        def.reconcile = ti->reconcile;
    }
    o.component = "ctrl-test";
    o.field_manager = "ctrl-test";
    o.metrics_prefix = "tester";
    if (!o.leader_election_id)
        o.leader_election_id = "ctrl-test";
    assert_int_equal(manager_new(t.loop, ti->client, &o, &ti->m, &e), 0);
    assert_int_equal(manager_add_controller(ti->m, &def, &e), 0);
    if (http)
        assert_int_equal(httpserver_start(t.loop, ti->m, &ho, &ti->http, &e), 0);
    assert_int_equal(manager_start(ti->m, &e), 0);
}

static void tiny_free(struct tiny *ti)
{
    for (int i = 0; i < 4; i++)
        if (live[i] == ti)
            live[i] = NULL;
    httpserver_free(ti->http);
    manager_free(ti->m);
    kube_client_free(ti->client);
    memset(ti, 0, sizeof(*ti));
}

/* GET path from the manager's endpoint on loopback while the loop runs; returns the status
 * line and body, or "" on timeout. */
static char *http_get(struct tiny *ti, const char *path)
{
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)httpserver_metrics_port(ti->http))};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    double end = time_mono() + 10;
    struct buf b = BUF_INIT;
    char req[256], chunk[4096];
    int n;

    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", path);
    assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
    buf_puts(&b, "");
    while (time_mono() < end) {
        ssize_t got = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
        if (got == 0)
            break;
        if (got > 0) {
            buf_append(&b, chunk, (size_t)got);
            continue;
        }
        ev_run(t.loop, EVRUN_NOWAIT);
        usleep(1000);
    }
    close(fd);
    return buf_steal(&b);
}

/* The value of the sample `line_prefix <value>` in a scrape, or -1. */
static double sample(const char *scrape, const char *line_prefix)
{
    size_t n = strlen(line_prefix);

    for (const char *p = scrape; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, line_prefix, n) == 0 && p[n] == ' ')
            return strtod(p + n + 1, NULL);
    return -1;
}

static double applies(const char *scrape)
{
    double ok = sample(scrape, "tester_api_requests_total{verb=\"apply\",code=\"200\"}");
    double created = sample(scrape, "tester_api_requests_total{verb=\"apply\",code=\"201\"}");

    return (ok > 0 ? ok : 0) + (created > 0 ? created : 0);
}

static void create_ncp(const char *name)
{
    char json[512];
    cJSON *o;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"" NCP_API_VERSION "\",\"kind\":\"NestedControlPlane\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{}}",
             name, t.ns);
    o = kt_obj(json);
    assert_int_equal(
        kt_sync(&t, &(struct kube_request){.verb = KUBE_CREATE, .resource = &PRIMARY, .body = o},
                NULL),
        0);
    cJSON_Delete(o);
}

static cJSON *get(const struct kube_resource *res, const char *name)
{
    cJSON *body = NULL;

    if (kt_sync(&t,
                &(struct kube_request){
                    .verb = KUBE_GET, .resource = res, .namespace_ = t.ns, .name = name},
                &body) < 0)
        return NULL;
    return body;
}

struct expect {
    const struct kube_resource *res;
    const char *name;
    const char *path[3]; /* nested fields */
    const char *value;   /* NULL: exists */
};

static bool has_value(void *arg)
{
    const struct expect *x = arg;
    cJSON *o = get(x->res, x->name);
    const cJSON *v = o;
    bool ok;

    for (int i = 0; v && i < 3 && x->path[i]; i++)
        v = cJSON_GetObjectItemCaseSensitive(v, x->path[i]);
    ok = o && (!x->value || (cJSON_IsString(v) && strcmp(v->valuestring, x->value) == 0));
    cJSON_Delete(o);
    return ok;
}

struct event_query {
    const char *object, *reason;
};

static bool event_exists(void *arg)
{
    const struct event_query *q = arg;
    char selector[256];
    cJSON *list = NULL, *it;
    bool found = false;

    snprintf(selector, sizeof(selector), "involvedObject.name=%s,reason=%s", q->object, q->reason);
    if (kt_sync(&t,
                &(struct kube_request){.verb = KUBE_LIST,
                                       .resource = &KUBE_EVENTS,
                                       .namespace_ = t.ns,
                                       .field_selector = selector},
                &list) < 0)
        return false;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(list, "items")) {
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(it, "involvedObject"), "kind");
        found =
            found || (cJSON_IsString(kind) && strcmp(kind->valuestring, "NestedControlPlane") == 0);
    }
    cJSON_Delete(list);
    return found;
}

static bool synced(void *arg)
{
    return manager_synced(arg);
}

static void install_crds(void)
{
    const char *src = getenv("NESTCP_SOURCE_DIR");
    char cmd[1024];
    double end = time_mono() + 60;

    assert_non_null(src);
    snprintf(cmd, sizeof(cmd),
             "NESTCP_SOURCE_DIR='%s' bash -c '. \"$NESTCP_SOURCE_DIR/test/support/crds.sh\" && "
             "crds_install --no-capi'",
             src);
    assert_int_equal(system(cmd), 0);
    /* Discovery follows Established by a moment: wait until the resource lists. */
    while (kt_sync(&t,
                   &(struct kube_request){
                       .verb = KUBE_LIST, .resource = &PRIMARY, .namespace_ = t.ns, .limit = 1},
                   NULL) < 0) {
        assert_true(time_mono() < end);
        usleep(200000);
    }
}

static int group_setup(void **state)
{
    kt_setup(&t, "ctrl");
    install_crds();
    return 0;
}

static int test_teardown(void **state)
{
    for (int i = 0; i < 4; i++)
        if (live[i])
            tiny_free(live[i]);
    return 0;
}

static int group_teardown(void **state)
{
    kt_teardown(&t);
    return 0;
}

static void test_manager__plans_land_and_events_appear(void **state)
{
    struct tiny ti = {.identity = "tiny-a"};
    struct expect cm = {&KUBE_CONFIGMAPS, "a-cm", {"data", "writer"}, "tiny-a"};
    struct expect phase = {&PRIMARY, "a", {"status", "phase"}, "Reconciled"};
    struct expect svc = {&KUBE_SERVICES, "a-svc", {NULL}, NULL};
    struct event_query ev = {"a", "Reconciled"};
    char *r, *scrape;
    cJSON *old;
    char old_uid[64];

    tiny_start(&ti, NULL, true);
    /* Nothing has been listed yet: not ready, but live. */
    r = http_get(&ti, "/readyz");
    assert_true(str_has_prefix(r, "HTTP/1.1 503"));
    free(r);
    r = http_get(&ti, "/healthz");
    assert_true(str_has_prefix(r, "HTTP/1.1 200"));
    free(r);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    r = http_get(&ti, "/readyz");
    assert_true(str_has_prefix(r, "HTTP/1.1 200"));
    free(r);

    create_ncp("a");
    assert_true(kt_wait(&t, has_value, &cm, 20));
    assert_true(kt_wait(&t, has_value, &phase, 20));
    assert_true(kt_wait(&t, has_value, &svc, 20));
    assert_true(kt_wait(&t, event_exists, &ev, 20));

    /* Deleting an owned Service: its change maps to the owner, which recreates it. */
    old = get(&KUBE_SERVICES, "a-svc");
    snprintf(old_uid, sizeof(old_uid), "%s", kube_obj_uid(old));
    cJSON_Delete(old);
    assert_int_equal(kt_sync(&t,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_SERVICES,
                                                    .namespace_ = t.ns,
                                                    .name = "a-svc"},
                             NULL),
                     0);
    for (double end = time_mono() + 20;; kt_run_for(&t, 0.2)) {
        cJSON *now = get(&KUBE_SERVICES, "a-svc");
        bool recreated = now && strcmp(kube_obj_uid(now), old_uid) != 0;
        cJSON_Delete(now);
        if (recreated)
            break;
        assert_true(time_mono() < end);
    }

    scrape = http_get(&ti, "/metrics");
    assert_true(str_has_prefix(scrape, "HTTP/1.1 200"));
    assert_non_null(strstr(scrape, "Content-Type: text/plain; version=0.0.4"));
    assert_true(sample(scrape, "controller_runtime_reconcile_total{controller=\"tiny\","
                               "result=\"success\"}") >= 2);
    /* Server-side apply answers 201 when it creates, 200 otherwise. */
    assert_true(applies(scrape) >= 3);
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"update\",code=\"200\"}") >= 1);
    assert_true(sample(scrape, "workqueue_adds_total{name=\"tiny\"}") >= 2);
    assert_true(sample(scrape, "tester_informer_synced{resource=\"services\"}") == 1);
    /* The optional cache of a resource not served counts as synced, and stays empty. */
    assert_true(sample(scrape, "tester_informer_synced{resource=\"nothings\"}") == 1);
    assert_true(sample(scrape, "tester_informer_objects{resource=\"nothings\"}") == 0);
    assert_true(sample(scrape, "tester_informer_objects{resource=\"nestedcontrolplanes\"}") == 1);
    assert_true(sample(scrape, "tester_events_total{result=\"created\"}") >= 1);
    assert_true(sample(scrape, "leader_election_master_status{name=\"ctrl-test\"}") == 1);
    free(scrape);
    tiny_free(&ti);
}

static void test_manager__conflict_is_retried(void **state)
{
    struct tiny ti = {.identity = "tiny-b", .conflict_once = true};
    struct expect phase = {&PRIMARY, "b", {"status", "phase"}, "Reconciled"};
    char *scrape;

    tiny_start(&ti, NULL, true);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    create_ncp("b");
    assert_true(kt_wait(&t, has_value, &phase, 20));
    assert_false(ti.conflict_once);
    scrape = http_get(&ti, "/metrics");
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"update\",code=\"409\"}") == 1);
    assert_true(sample(scrape, "controller_runtime_reconcile_total{controller=\"tiny\","
                               "result=\"requeue\"}") == 1);
    assert_true(sample(scrape, "controller_runtime_reconcile_errors_total{controller=\"tiny\"}") <=
                0);
    free(scrape);
    tiny_free(&ti);
}

/* The managers of a live object's managedFields, as "manager/operation" joined by spaces. */
static void field_managers(const cJSON *o, char *out, size_t size)
{
    const cJSON *mf;
    size_t n = 0;

    out[0] = '\0';
    cJSON_ArrayForEach(mf, cJSON_GetObjectItemCaseSensitive(
                               cJSON_GetObjectItemCaseSensitive(o, "metadata"), "managedFields")) {
        const cJSON *who = cJSON_GetObjectItemCaseSensitive(mf, "manager");
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(mf, "operation");
        if (cJSON_IsString(who) && cJSON_IsString(op) && n < size)
            n += (size_t)snprintf(out + n, size - n, "%s%s/%s", n ? " " : "", who->valuestring,
                                  op->valuestring);
    }
}

/* A claimed apply against the real API server: an absent object is created by the apply
 * itself (no read first, fields owned by the apply); an object of the name that someone else
 * made is answered 409, read, and left as it is, with an ObjectConflict Event. */
static void test_manager__a_claimed_apply_creates_what_is_absent_and_spares_the_rest(void **state)
{
    struct tiny ti = {.identity = "tiny-c", .claim = true};
    struct expect made = {&KUBE_CONFIGMAPS, "c-new", {"data", "writer"}, "tiny-c"};
    struct event_query ev = {"c", "ObjectConflict"};
    cJSON *theirs = kt_obj("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":"
                           "{\"name\":\"c-theirs\"},\"data\":{\"writer\":\"someone\"}}");
    cJSON *o;
    char managers[256], *scrape;

    assert_int_equal(kt_sync(&t,
                             &(struct kube_request){.verb = KUBE_CREATE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = t.ns,
                                                    .body = theirs},
                             NULL),
                     0);
    cJSON_Delete(theirs);
    tiny_start(&ti, NULL, true);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    create_ncp("c");
    assert_true(kt_wait(&t, has_value, &made, 20));
    assert_true(kt_wait(&t, event_exists, &ev, 20));

    o = get(&KUBE_CONFIGMAPS, "c-new");
    field_managers(o, managers, sizeof(managers));
    assert_string_equal(managers, "ctrl-test/Apply");
    cJSON_Delete(o);
    o = get(&KUBE_CONFIGMAPS, "c-theirs");
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "data"), "writer")
            ->valuestring,
        "someone");
    assert_null(kube_obj_controller_ref(o));
    cJSON_Delete(o);

    scrape = http_get(&ti, "/metrics");
    /* The control planes of the tests before are reconciled too: each one's -new created. */
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"apply\",code=\"201\"}") >= 1);
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"apply\",code=\"409\"}") >= 1);
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"get\",code=\"200\"}") >= 1);
    /* No read of the absent object. */
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"get\",code=\"404\"}") <= 0);
    free(scrape);
    tiny_free(&ti);
}

/* The patcher: for a control plane named w<i>, its status, then a merge patch of its ConfigMap
 * w<i>-cm (of the ConfigMaps cache, which selects by label), as the etcd reconciler records a
 * member and then releases its pod. The status write's watch event brings the key back while
 * the patch is in flight; the reconcile that follows must read the patch from the cache and
 * not send it again. */
static unsigned patch_planned, patch_settled;
static int patch_again;

static int patcher_reconcile(void *ctx, const struct ctrl_view *view, const char *ns,
                             const char *name, struct plan *plan, struct err *e)
{
    const cJSON *ncp = kube_store_get(view->stores[0], ns, name), *cm, *v;
    unsigned bit;
    char child[256];
    cJSON *status, *patch;

    (void)ctx;
    if (!ncp || name[0] != 'w' || name[1] < '0' || name[1] > '3' || name[2])
        return 0;
    bit = 1u << (name[1] - '0');
    snprintf(child, sizeof(child), "%s-cm", name);
    if (!(cm = kube_store_get(view->stores[3], ns, child)))
        return 0;
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(cm, "data"), "patched");
    if (cJSON_IsString(v) && strcmp(v->valuestring, "yes") == 0) {
        patch_settled |= bit;
        return 0;
    }
    if (patch_planned & bit)
        patch_again++;
    patch_planned |= bit;
    v = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ncp, "status"), "phase");
    if (!cJSON_IsString(v)) {
        status = cJSON_Duplicate(ncp, true);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(status, "status"), "phase", "Patching");
        if (plan_update_status(plan, &PRIMARY, status, "status: phase Patching") < 0)
            return err_set(e, -ENOMEM, "out of memory");
    }
    patch = cJSON_Parse("{\"data\":{\"patched\":\"yes\"}}");
    if (!patch || plan_merge_patch(plan, &KUBE_CONFIGMAPS, ns, child, NULL, patch,
                                   "ConfigMap %s/%s: patched", ns, child) < 0)
        return err_set(e, -ENOMEM, "out of memory");
    return 0;
}

static bool all_settled(void *arg)
{
    (void)arg;
    return patch_settled == 0xf;
}

static void test_manager__a_write_of_a_selected_object_is_read_back_at_once(void **state)
{
    struct tiny ti = {.identity = "tiny-w", .reconcile = patcher_reconcile};
    char name[8], *scrape;

    (void)state;
    tiny_start(&ti, NULL, true);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    for (int i = 0; i < 4; i++) {
        cJSON *ncp, *cm;
        snprintf(name, sizeof(name), "w%d", i);
        create_ncp(name);
        ncp = get(&PRIMARY, name);
        assert_non_null(ncp);
        snprintf(name, sizeof(name), "w%d-cm", i);
        cm = owned("ConfigMap", t.ns, name, ncp);
        cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "data"), "patched", "no");
        assert_int_equal(kt_sync(&t,
                                 &(struct kube_request){.verb = KUBE_CREATE,
                                                        .resource = &KUBE_CONFIGMAPS,
                                                        .namespace_ = t.ns,
                                                        .body = cm},
                                 NULL),
                         0);
        cJSON_Delete(cm);
        cJSON_Delete(ncp);
    }
    assert_true(kt_wait(&t, all_settled, NULL, 30));
    assert_int_equal(patch_again, 0);
    scrape = http_get(&ti, "/metrics");
    assert_true(sample(scrape, "tester_api_requests_total{verb=\"patch\",code=\"200\"}") == 4);
    free(scrape);
    tiny_free(&ti);
}

static void stopped(void *userdata)
{
    *(bool *)userdata = true;
}

static void test_manager__stop_is_quick_when_idle(void **state)
{
    struct tiny ti = {.identity = "tiny-c"};
    bool done = false;
    double t0;

    tiny_start(&ti, NULL, false);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    kt_run_for(&t, 0.5);
    t0 = time_mono();
    assert_int_equal(manager_stop(ti.m, stopped, &done), 0);
    assert_true(kt_run_until(&t, &done, 5));
    printf("stop took %.3f s\n", time_mono() - t0);
    assert_true(time_mono() - t0 < 1.0);
    tiny_free(&ti);
}

/* A renew deadline well above a slow first write: the deadline counts from the start of the
 * attempt that acquired the Lease, which on a freshly started, sanitizer-slowed server can take
 * more than a second. */
#define LEASE_S 6.0
#define RENEW_S 4.0
#define RETRY_S 0.5
#define SLACK_S 2.5

static bool one_leads(void *arg)
{
    struct tiny *pair = arg;

    return manager_processing(pair[0].m) || manager_processing(pair[1].m);
}

static bool other_leads(void *arg)
{
    return manager_processing(arg);
}

static void test_manager__only_the_leader_reconciles_and_a_standby_takes_over(void **state)
{
    struct tiny pair[2] = {{.identity = "tiny-one"}, {.identity = "tiny-two"}};
    struct manager_opts o = {.leader_elect = true,
                             .leader_election_namespace = t.ns,
                             .leader_election_id = "runtime-test",
                             .lease_duration = LEASE_S,
                             .renew_deadline = RENEW_S,
                             .retry_period = RETRY_S};
    struct expect cm = {&KUBE_CONFIGMAPS, "d-cm", {"data", "writer"}, NULL};
    int leader, standby;
    double t0, took;

    create_ncp("d");
    tiny_start(&pair[0], &o, false);
    tiny_start(&pair[1], &o, false);
    assert_true(kt_wait(&t, synced, pair[0].m, 30));
    assert_true(kt_wait(&t, synced, pair[1].m, 30));
    assert_true(kt_wait(&t, one_leads, pair, 15));
    leader = manager_processing(pair[0].m) ? 0 : 1;
    standby = 1 - leader;
    cm.value = pair[leader].identity;
    assert_true(kt_wait(&t, has_value, &cm, 20));
    /* A standby is warm (synced) but reconciles nothing. */
    kt_run_for(&t, 2 * RETRY_S);
    assert_true(manager_synced(pair[standby].m));
    assert_false(manager_processing(pair[standby].m));
    assert_int_equal(pair[standby].reconciles, 0);
    assert_true(pair[leader].reconciles >= 1);

    assert_true(manager_processing(pair[leader].m));

    /* The leader vanishes without releasing the Lease (as after kill -9). */
    tiny_free(&pair[leader]);
    t0 = time_mono();
    assert_true(kt_wait(&t, other_leads, pair[standby].m, LEASE_S + RETRY_S + SLACK_S + 2));
    took = time_mono() - t0;
    printf("standby took over after %.2f s (lease %.0f s + retry %.1f s)\n", took, LEASE_S,
           RETRY_S);
    assert_true(took <= LEASE_S + RETRY_S + SLACK_S);
    cm.value = pair[standby].identity;
    assert_true(kt_wait(&t, has_value, &cm, 20));
    assert_true(pair[standby].reconciles >= 1);
    tiny_free(&pair[standby]);
}

/* The Gizmo CRD gone, its objects with it, before the next step. */
static void delete_gizmo_crd(void)
{
    assert_int_equal(
        system("kubectl delete crd gizmos." GIZMO_GROUP " --wait=true --timeout=60s >/dev/null"),
        0);
}

/* The Gizmo CRD serving versions (NULL-terminated; the first is stored), with the same schema
 * in each, so that conversion None is correct. */
static void apply_gizmo_crd(const char *const *versions)
{
    struct buf cmd = BUF_INIT;

    buf_printf(&cmd,
               "kubectl apply -f - >/dev/null <<'YAML'\n"
               "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
               "metadata: {name: gizmos." GIZMO_GROUP "}\n"
               "spec:\n  group: " GIZMO_GROUP "\n  scope: Namespaced\n"
               "  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}\n"
               "  versions:\n");
    for (const char *const *v = versions; *v; v++)
        buf_printf(&cmd,
                   "  - name: %s\n    served: true\n    storage: %s\n    schema:\n"
                   "      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: "
                   "true}\n",
                   *v, v == versions ? "true" : "false");
    buf_puts(&cmd, "YAML\n");
    assert_int_equal(system(cmd.data), 0);
    buf_done(&cmd);
}

struct version_seen {
    struct tiny *ti;
    const char *version;
    double objects;
};

/* The Gizmo cache reads the version, and holds that many objects. */
static bool reads_version(void *arg)
{
    struct version_seen *v = arg;
    char line[160];
    char *scrape = http_get(v->ti, "/metrics");
    bool ok;

    snprintf(line, sizeof(line), "tester_informer_version{resource=\"gizmos\",version=\"%s\"}",
             v->version);
    ok = sample(scrape, line) == 1 &&
         sample(scrape, "tester_informer_objects{resource=\"gizmos\"}") == v->objects;
    free(scrape);
    return ok;
}

/* An optional cache with versions reads the newest one served, and moves to a newer one once
 * its CRD serves it, its objects kept throughout. */
static void test_manager__a_cache_reads_the_newest_version_served(void **state)
{
    struct tiny ti = {.identity = "tiny-v"};
    struct manager_opts o = {.absent_retry = 1};
    struct kube_resource v1 = GIZMOS;
    struct version_seen seen = {&ti, "v1", 0};
    cJSON *g;

    tiny_start(&ti, &o, true);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    apply_gizmo_crd((const char *const[]){"v1", NULL});
    assert_true(kt_wait(&t, reads_version, &seen, 30));
    g = kt_obj("{\"apiVersion\":\"" GIZMO_GROUP "/v1\",\"kind\":\"Gizmo\","
               "\"metadata\":{\"name\":\"g1\"},\"spec\":{\"size\":3}}");
    cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(g, "metadata"), "namespace", t.ns);
    assert_int_equal(
        kt_sync(&t, &(struct kube_request){.verb = KUBE_CREATE, .resource = &v1, .body = g}, NULL),
        0);
    cJSON_Delete(g);
    seen.objects = 1;
    assert_true(kt_wait(&t, reads_version, &seen, 20));

    /* v2 served (v1 still stored): the cache moves to it within the retry, keeping g1. */
    apply_gizmo_crd((const char *const[]){"v1", "v2", NULL});
    seen.version = "v2";
    assert_true(kt_wait(&t, reads_version, &seen, 30));
    tiny_free(&ti);
    delete_gizmo_crd();
}

/* The Gizmo cache holds no version and no object, and counts as synced: the resource is
 * absent. */
static bool gizmos_absent(void *arg)
{
    char *scrape = http_get(arg, "/metrics");
    bool ok = sample(scrape, "tester_informer_synced{resource=\"gizmos\"}") == 1 &&
              sample(scrape, "tester_informer_objects{resource=\"gizmos\"}") == 0 &&
              sample(scrape, "tester_informer_version{resource=\"gizmos\",version=\"v1\"}") == 0 &&
              sample(scrape, "tester_informer_version{resource=\"gizmos\",version=\"v2\"}") == 0;

    free(scrape);
    return ok;
}

/* The API server answers a list of Gizmos at v1 with 404 (want_served false) or a list. */
static bool gizmos_served(void *arg)
{
    bool want_served = *(const bool *)arg;
    struct kube_resource v1 = GIZMOS;
    int r = kt_sync(
        &t,
        &(struct kube_request){.verb = KUBE_LIST, .resource = &v1, .namespace_ = t.ns, .limit = 1},
        NULL);

    return want_served ? r == 0 : r == -ENOENT;
}

static void create_gizmo(const char *name)
{
    struct kube_resource v1 = GIZMOS;
    char json[256];
    cJSON *g;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"" GIZMO_GROUP "/v1\",\"kind\":\"Gizmo\","
             "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},\"spec\":{\"size\":3}}",
             name, t.ns);
    g = kt_obj(json);
    assert_int_equal(
        kt_sync(&t, &(struct kube_request){.verb = KUBE_CREATE, .resource = &v1, .body = g}, NULL),
        0);
    cJSON_Delete(g);
}

static int gizmo_reconcile(void *ctx, const struct ctrl_view *view, const char *ns,
                           const char *name, struct plan *plan, struct err *e)
{
    ((struct tiny *)ctx)->reconciles++;
    return 0;
}

static bool gizmo_reconciled(void *arg)
{
    return ((struct tiny *)arg)->reconciles > 0;
}

/* The manager's client has started this many lists (the probes of an optional cache count). */
struct lists_sent {
    struct kube_client *client;
    unsigned long n;
};

static bool lists_started(void *arg)
{
    const struct lists_sent *l = arg;
    struct kube_client_stats st;

    kube_client_get_stats(l->client, &st);
    return st.lists >= l->n;
}

/* The CRD of an optional cache deleted after the probe found its resource, before the cache's
 * first list: the list answers 404, and the cache is absent (synced, empty) instead of retrying
 * that list for ever, which kept the manager from ever counting its caches synced. When the
 * CRD is back, the cache reads it again. */
static void test_manager__a_crd_deleted_before_the_first_list_leaves_the_cache_absent(void **state)
{
    static const struct ctrl_cache_spec only_gizmos[] = {
        {&GIZMOS, NULL, true, NULL, gizmo_versions, NULL}};
    /* Static: the teardown frees it when an assertion ended the test. */
    static struct tiny ti;
    struct manager_opts o = {.absent_retry = 1, .caches = only_gizmos, .n_caches = 1};
    struct version_seen seen = {&ti, "v1", 0};
    bool served = true;
    struct lists_sent three;

    ti = (struct tiny){.identity = "tiny-g", .reconcile = gizmo_reconcile};
    apply_gizmo_crd((const char *const[]){"v1", NULL});
    assert_true(kt_wait(&t, gizmos_served, &served, 30));
    tiny_start(&ti, &o, true);
    /* Its only cache: the probe at v2 (404), the probe at v1 (served), then the first list,
     * which the loop sends on its next turn: the loop stays still until the CRD is gone. */
    three = (struct lists_sent){ti.client, 3};
    assert_true(kt_wait(&t, lists_started, &three, 30));
    assert_false(manager_synced(ti.m));
    delete_gizmo_crd();
    served = false;
    assert_true(kt_wait(&t, gizmos_served, &served, 30));

    assert_true(kt_wait(&t, synced, ti.m, 30));
    assert_true(gizmos_absent(&ti));

    /* The CRD back: the next probe finds it and the cache reads it. */
    apply_gizmo_crd((const char *const[]){"v1", NULL});
    served = true;
    assert_true(kt_wait(&t, gizmos_served, &served, 30));
    create_gizmo("g2");
    seen.objects = 1;
    assert_true(kt_wait(&t, reads_version, &seen, 30));
    assert_true(kt_wait(&t, gizmo_reconciled, &ti, 20));
    tiny_free(&ti);
    delete_gizmo_crd();
}

/* The CRD of an optional cache deleted while the cache is synced and watching: its objects leave
 * the cache, the cache is absent (the watch, then any list, answers 404), the manager stays
 * synced and goes on reconciling the rest; the CRD back, the cache reads it again. */
static void test_manager__a_crd_deleted_while_watched_leaves_the_cache_absent(void **state)
{
    static struct tiny ti; /* as above */
    struct manager_opts o = {.absent_retry = 1};
    struct version_seen seen = {&ti, "v1", 1};
    struct expect cm = {&KUBE_CONFIGMAPS, "w-cm", {"data", "writer"}, "tiny-w"};
    bool served = true;

    ti = (struct tiny){.identity = "tiny-w"};
    apply_gizmo_crd((const char *const[]){"v1", NULL});
    assert_true(kt_wait(&t, gizmos_served, &served, 30));
    create_gizmo("g3");
    tiny_start(&ti, &o, true);
    assert_true(kt_wait(&t, synced, ti.m, 30));
    assert_true(kt_wait(&t, reads_version, &seen, 30));

    delete_gizmo_crd();
    assert_true(kt_wait(&t, gizmos_absent, &ti, 30));
    assert_true(manager_synced(ti.m));
    /* The other caches and the controller go on. */
    create_ncp("w");
    assert_true(kt_wait(&t, has_value, &cm, 20));

    apply_gizmo_crd((const char *const[]){"v1", NULL});
    seen.objects = 0;
    assert_true(kt_wait(&t, reads_version, &seen, 30));
    assert_true(kt_wait(&t, gizmos_served, &served, 30));
    create_gizmo("g4");
    seen.objects = 1;
    assert_true(kt_wait(&t, reads_version, &seen, 20));
    tiny_free(&ti);
    delete_gizmo_crd();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_manager__plans_land_and_events_appear, test_teardown),
        cmocka_unit_test_teardown(test_manager__conflict_is_retried, test_teardown),
        cmocka_unit_test_teardown(
            test_manager__a_claimed_apply_creates_what_is_absent_and_spares_the_rest,
            test_teardown),
        cmocka_unit_test_teardown(test_manager__a_write_of_a_selected_object_is_read_back_at_once,
                                  test_teardown),
        cmocka_unit_test_teardown(test_manager__stop_is_quick_when_idle, test_teardown),
        cmocka_unit_test_teardown(test_manager__a_cache_reads_the_newest_version_served,
                                  test_teardown),
        cmocka_unit_test_teardown(
            test_manager__a_crd_deleted_before_the_first_list_leaves_the_cache_absent,
            test_teardown),
        cmocka_unit_test_teardown(test_manager__a_crd_deleted_while_watched_leaves_the_cache_absent,
                                  test_teardown),
        cmocka_unit_test_teardown(test_manager__only_the_leader_reconciles_and_a_standby_takes_over,
                                  test_teardown),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
