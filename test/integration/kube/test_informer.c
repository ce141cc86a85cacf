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
        cmocka_unit_test(test_informer__cluster_scoped_with_selector),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
