/* The informer against the real API server: sync, events, indexes, scoping, and watches that
 * end by timeoutSeconds and resume from the last resourceVersion without a relist. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/kube/informer.h"
#include "test/support/kube_testenv.h"

static struct kt T;

static int setup(void **state)
{
    kt_setup(&T, "kube-informer");
    return 0;
}

static int teardown(void **state)
{
    kt_teardown(&T);
    return 0;
}

struct counts {
    int adds, updates, deletes, missed, synced;
};

static void on_add(void *ud, const cJSON *obj)
{
    ((struct counts *)ud)->adds++;
}

static void on_update(void *ud, const cJSON *old_obj, const cJSON *new_obj)
{
    ((struct counts *)ud)->updates++;
}

static void on_delete(void *ud, const cJSON *obj, bool unknown)
{
    struct counts *c = ud;

    if (unknown)
        c->missed++;
    else
        c->deletes++;
}

static void on_synced(void *ud)
{
    ((struct counts *)ud)->synced++;
}

static const struct kube_informer_handlers handlers = {
    .on_add = on_add, .on_update = on_update, .on_delete = on_delete, .on_synced = on_synced};

static bool synced(void *inf)
{
    return kube_informer_synced(inf);
}

/* True when the cache holds exactly what a fresh list returns, at the same versions. */
struct converge {
    struct kube_informer *inf;
    const char *ns;
    const char *selector;
};

static bool converged(void *arg)
{
    struct converge *cv = arg;
    cJSON *list = NULL, *it;
    bool ok = true;
    int n = 0;

    if (kt_sync(&T,
                &(struct kube_request){.verb = KUBE_LIST,
                                       .resource = &KUBE_CONFIGMAPS,
                                       .namespace_ = cv->ns,
                                       .label_selector = cv->selector},
                &list) < 0)
        return false;
    cJSON_ArrayForEach(it, cJSON_GetObjectItem(list, "items")) {
        const cJSON *c = kube_informer_get(cv->inf, kube_obj_namespace(it), kube_obj_name(it));

        n++;
        if (!c || strcmp(kube_obj_resource_version(c), kube_obj_resource_version(it)) != 0)
            ok = false;
    }
    cJSON_Delete(list);
    return ok && (size_t)n == kube_informer_count(cv->inf);
}

static void create_child(const char *name, const char *parent_uid)
{
    char json[1024];
    cJSON *o;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\",\"labels\":{\"test\":\"inf\"},\"ownerReferences\":[{"
             "\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"parent\",\"uid\":\"%s\","
             "\"controller\":true}]},\"data\":{\"k\":\"0\"}}",
             name, T.ns, parent_uid);
    o = kt_obj(json);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){
                                 .verb = KUBE_CREATE, .resource = &KUBE_CONFIGMAPS, .body = o},
                             NULL),
                     0);
    cJSON_Delete(o);
}

static void set_value(const char *name, const char *value)
{
    char json[128];
    cJSON *p;

    snprintf(json, sizeof(json), "{\"data\":{\"k\":\"%s\"}}", value);
    p = kt_obj(json);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_PATCH,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = name,
                                                    .body = p},
                             NULL),
                     0);
    cJSON_Delete(p);
}

static bool collect_names(void *ud, const cJSON *obj)
{
    size_t n = strlen(ud);

    snprintf((char *)ud + n, 256 - n, "%s,", kube_obj_name(obj));
    return true;
}

static void test_informer__watch_timeouts_resume_without_relist(void **state)
{
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS,
                                   .namespace_ = T.ns,
                                   .label_selector = "test=inf",
                                   .watch_timeout_seconds = 1,
                                   .page_size = 2};
    struct kube_informer *inf = NULL;
    struct kube_informer_stats st;
    struct counts c = {0};
    struct converge cv;
    cJSON *parent = NULL;
    char parent_uid[64], names[256] = "";
    const cJSON *cached;

    assert_int_equal(kt_create_cm(&T, T.ns, "parent", "inf", "p", &parent), 0);
    snprintf(parent_uid, sizeof(parent_uid), "%s", kube_obj_uid(parent));
    create_child("child-0", parent_uid);
    create_child("child-1", parent_uid);
    /* Not selected: another label. */
    assert_int_equal(kt_create_cm(&T, T.ns, "unrelated", "other", "x", NULL), 0);

    assert_int_equal(kube_informer_new(T.c, &o, &handlers, &c, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    assert_int_equal(c.synced, 1);
    assert_int_equal(c.adds, 3);
    assert_int_equal(kube_informer_count(inf), 3);
    assert_null(kube_informer_get(inf, T.ns, "unrelated"));
    cached = kube_informer_get(inf, T.ns, "child-0");
    assert_non_null(cached);
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(cached, "metadata"), "managedFields"));

    /* Changes spread over several watch lifetimes (each 1-2 s). */
    for (int round = 0; round < 4; round++) {
        char name[32], value[8];

        snprintf(name, sizeof(name), "child-%d", round + 2);
        create_child(name, parent_uid);
        snprintf(value, sizeof(value), "%d", round + 1);
        set_value("child-0", value);
        kt_run_for(&T, 1.2);
    }
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "child-1"},
                             NULL),
                     0);
    cv = (struct converge){inf, T.ns, "test=inf"};
    assert_true(kt_wait(&T, converged, &cv, 30));

    kube_informer_get_stats(inf, &st);
    assert_int_equal(st.lists, 1); /* never relisted */
    assert_true(st.watch_timeouts >= 2);
    assert_int_equal(st.watch_expired, 0);
    assert_int_equal(st.watches, st.watch_timeouts + 1);
    assert_int_equal(c.adds, 3 + 4);
    assert_int_equal(c.updates, 4);
    assert_int_equal(c.deletes, 1);
    assert_int_equal(c.missed, 0);
    assert_string_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(kube_informer_get(inf, T.ns, "child-0"), "data"),
                            "k")
            ->valuestring,
        "4");
    /* The owner index holds the five children still there. */
    assert_int_equal(kube_informer_count_owned(inf, parent_uid), 5);
    kube_informer_foreach_owned(inf, parent_uid, collect_names, names);
    assert_null(strstr(names, "child-1,"));
    assert_non_null(strstr(names, "child-5,"));
    assert_int_equal(kube_informer_count_in_namespace(inf, T.ns), 6);
    kube_informer_free(inf);
    cJSON_Delete(parent);
}

/* What each handler call saw: the version it was told of and the one the cache then held. */
struct versions {
    struct kube_informer *inf;
    char log[512];
    char want[32]; /* the version whose event ends the wait */
    bool done;
};

static void record_update(void *ud, const cJSON *old_obj, const cJSON *new_obj)
{
    struct versions *v = ud;
    const cJSON *cached =
        kube_informer_get(v->inf, kube_obj_namespace(new_obj), kube_obj_name(new_obj));
    size_t n = strlen(v->log);

    snprintf(v->log + n, sizeof(v->log) - n, "%s/%s;", kube_obj_resource_version(new_obj),
             kube_obj_resource_version(cached));
    if (strcmp(kube_obj_resource_version(new_obj), v->want) == 0)
        v->done = true;
}

/* Sets ordered's data.k through writer; returns the object as the server answered. */
static cJSON *patch_with(struct kube_client *writer, const char *value)
{
    char json[64];
    cJSON *p, *got = NULL;
    struct err e;

    snprintf(json, sizeof(json), "{\"data\":{\"k\":\"%s\"}}", value);
    p = kt_obj(json);
    assert_int_equal(kube_request_sync(writer,
                                       &(struct kube_request){.verb = KUBE_PATCH,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .name = "ordered",
                                                              .body = p},
                                       &got, &e),
                     0);
    cJSON_Delete(p);
    return got;
}

/* Two writes whose answers come back before the watch tells of them, the second cached at once
 * (kube_informer_observe_write, as the executor does with every write): the watch event of the
 * first comes after and must not put its older version back in the cache, or the next write
 * would carry a stale resourceVersion and be answered 409. */
static void test_informer__a_watch_event_older_than_a_cached_write_is_dropped(void **state)
{
    struct kube_informer_opts o = {
        .resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns, .label_selector = "test=order"};
    const struct kube_informer_handlers h = {.on_update = record_update};
    struct ev_loop *other = ev_loop_new(0);
    struct kube_client *writer = NULL;
    struct kube_informer_stats st;
    struct versions v = {0};
    cJSON *first, *second;
    char expect[128];
    struct err e;

    assert_non_null(other);
    assert_int_equal(kt_create_cm(&T, T.ns, "ordered", "order", "0", NULL), 0);
    assert_int_equal(kube_informer_new(T.c, &o, &h, &v, &v.inf), 0);
    assert_int_equal(kube_informer_start(v.inf), 0);
    assert_true(kt_wait(&T, synced, v.inf, 30));

    /* The writes go through a client on a loop of their own: the informer's loop does not run
     * meanwhile, so their watch events wait in its connection. */
    assert_int_equal(kube_client_new(other, T.cfg, &writer, &e), 0);
    first = patch_with(writer, "1");
    second = patch_with(writer, "2");
    assert_int_equal(kube_informer_observe_write(v.inf, second), 1);

    snprintf(v.want, sizeof(v.want), "%s", kube_obj_resource_version(second));
    assert_true(kt_run_until(&T, &v.done, 30));
    /* Only the event of the cached version reached the handlers, and the cache never went back
     * to the first write's version. */
    snprintf(expect, sizeof(expect), "%s/%s;", v.want, v.want);
    assert_string_equal(v.log, expect);
    assert_string_equal(kube_obj_resource_version(kube_informer_get(v.inf, T.ns, "ordered")),
                        v.want);
    kube_informer_get_stats(v.inf, &st);
    assert_int_equal(st.superseded, 1);
    assert_true(strcmp(kube_obj_resource_version(first), v.want) != 0);

    kube_informer_free(v.inf);
    kube_client_free(writer);
    ev_loop_destroy(other);
    cJSON_Delete(first);
    cJSON_Delete(second);
}

static void test_informer__cluster_scoped_with_selector(void **state)
{
    struct kube_informer_opts o = {.resource = &KUBE_NAMESPACES, .label_selector = "kube-inf=1"};
    struct kube_informer *inf = NULL;
    struct counts c = {0};
    char name[96], json[320];
    cJSON *ns;

    snprintf(name, sizeof(name), "%s-labelled", T.ns);
    assert_int_equal(kube_informer_new(T.c, &o, &handlers, &c, &inf), 0);
    assert_int_equal(kube_informer_start(inf), 0);
    assert_true(kt_wait(&T, synced, inf, 30));
    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"%s\","
             "\"labels\":{\"kube-inf\":\"1\"}}}",
             name);
    ns = kt_obj(json);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){
                                 .verb = KUBE_CREATE, .resource = &KUBE_NAMESPACES, .body = ns},
                             NULL),
                     0);
    {
        bool seen = false;
        double end = time_mono() + 30;

        while (!(seen = kube_informer_get(inf, NULL, name) != NULL) && time_mono() < end)
            kt_run_for(&T, 0.1);
        assert_true(seen);
    }
    assert_null(kube_informer_get(inf, NULL, T.ns)); /* not labelled */
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){
                                 .verb = KUBE_DELETE, .resource = &KUBE_NAMESPACES, .name = name},
                             NULL),
                     0);
    kube_informer_free(inf);
    cJSON_Delete(ns);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_informer__watch_timeouts_resume_without_relist),
        cmocka_unit_test(test_informer__a_watch_event_older_than_a_cached_write_is_dropped),
        cmocka_unit_test(test_informer__cluster_scoped_with_selector),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
