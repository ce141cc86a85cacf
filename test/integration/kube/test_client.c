/* The client against the real API server: CRUD, errors, paging, patches, server-side apply,
 * the status subresource, conflicts between writers, and a watch ended by timeoutSeconds. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test/support/kube_testenv.h"

static struct kt T;

static int setup(void **state)
{
    kt_setup(&T, "kube-client");
    return 0;
}

static int teardown(void **state)
{
    kt_sync(&T,
            &(struct kube_request){.verb = KUBE_DELETE,
                                   .resource = &KUBE_CRDS,
                                   .name = "statusprobes.kubetest.nestcp.io"},
            NULL);
    kt_teardown(&T);
    return 0;
}

static const char *data_k(const cJSON *o)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "k");

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_client__crud_and_error_codes(void **state)
{
    struct kube_request get = {
        .verb = KUBE_GET, .resource = &KUBE_CONFIGMAPS, .namespace_ = T.ns, .name = "crud"};
    cJSON *created = NULL, *got = NULL, *updated = NULL, *stale;
    char uid[64];
    struct err e;

    assert_int_equal(kt_create_cm(&T, T.ns, "crud", "crud", "v1", &created), 0);
    assert_string_equal(kube_obj_name(created), "crud");
    assert_non_null(kube_obj_uid(created));
    snprintf(uid, sizeof(uid), "%s", kube_obj_uid(created));
    assert_int_equal(kt_create_cm(&T, T.ns, "crud", "crud", "v1", NULL), -EEXIST);

    assert_int_equal(kt_sync(&T, &get, &got), 0);
    assert_string_equal(data_k(got), "v1");

    /* Update with the current resourceVersion, then again with the stale one: 409. */
    stale = cJSON_Duplicate(got, 1);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(got, "data"), "k", cJSON_CreateString("v2"));
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_UPDATE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "crud",
                                                    .body = got},
                             &updated),
                     0);
    assert_string_equal(data_k(updated), "v2");
    assert_int_equal(kube_request_sync(T.c,
                                       &(struct kube_request){.verb = KUBE_UPDATE,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .name = "crud",
                                                              .body = stale},
                                       NULL, &e),
                     -EBUSY);
    assert_non_null(strstr(e.msg, "the object has been modified"));

    /* dryRun creates nothing. */
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_CREATE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .body = stale,
                                                    .dry_run = true},
                             NULL),
                     -EEXIST);

    /* Delete with a wrong uid precondition is refused; the right one deletes. */
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "crud",
                                                    .precondition_uid = "not-the-uid"},
                             NULL),
                     -EBUSY);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "crud",
                                                    .precondition_uid = uid,
                                                    .propagation_policy = "Background"},
                             NULL),
                     0);
    assert_int_equal(kt_sync(&T, &get, NULL), -ENOENT);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "crud"},
                             NULL),
                     -ENOENT);
    cJSON_Delete(created);
    cJSON_Delete(got);
    cJSON_Delete(updated);
    cJSON_Delete(stale);
}

/* A write's answer and a read's, each far larger than the receive buffer a request that is not
 * a list gets (4 KiB), arrive whole. */
static void test_client__answers_larger_than_the_receive_buffer_arrive_whole(void **state)
{
    enum { LEN = 300 * 1024 };
    char *value = malloc(LEN + 1);
    cJSON *cm, *created = NULL, *got = NULL;

    assert_non_null(value);
    for (size_t i = 0; i < LEN; i++)
        value[i] = (char)('a' + (i * 7 + i / 13) % 26);
    value[LEN] = '\0';
    cm = kt_obj("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"large\"}}");
    cJSON_AddStringToObject(cJSON_GetObjectItem(cm, "metadata"), "namespace", T.ns);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cm, "data"), "k", value);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){
                                 .verb = KUBE_CREATE, .resource = &KUBE_CONFIGMAPS, .body = cm},
                             &created),
                     0);
    assert_string_equal(data_k(created), value);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_GET,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "large"},
                             &got),
                     0);
    assert_string_equal(data_k(got), value);
    cJSON_Delete(cm);
    cJSON_Delete(created);
    cJSON_Delete(got);
    free(value);
}

struct slots_seen {
    struct kube_client *c;
    int done, ok;
    unsigned long most_sending;
};

static void count_sending(void *ud, const struct kube_result *res)
{
    struct slots_seen *seen = ud;
    struct kube_client_stats st;

    kube_client_get_stats(seen->c, &st);
    if (st.sending > seen->most_sending)
        seen->most_sending = st.sending;
    seen->done++;
    seen->ok += res->code == 0;
}

static bool all_done(void *ud)
{
    return ((struct slots_seen *)ud)->done == 11;
}

/* With two slots, ten requests started at once go two at a time, in order, and every one is
 * answered; an urgent one does not wait. */
static void test_client__requests_wait_for_a_slot_and_all_are_answered(void **state)
{
    struct slots_seen seen = {.c = T.c};
    struct kube_client_stats st;
    unsigned long waits, sent;

    kube_client_get_stats(T.c, &st);
    waits = st.slot_waits;
    sent = st.requests;
    kube_client_set_max_sending(T.c, 2);
    for (int i = 0; i < 10; i++)
        assert_int_equal(kube_request_send(T.c,
                                           &(struct kube_request){.verb = KUBE_GET,
                                                                  .resource = &KUBE_NAMESPACES,
                                                                  .name = T.ns},
                                           count_sending, &seen),
                         0);
    kube_client_get_stats(T.c, &st);
    assert_int_equal(st.sending, 2);
    assert_int_equal(st.slot_waits - waits, 8);
    assert_int_equal(st.requests - sent, 2);
    /* An urgent one (the leader's lease) goes on the wire at once, slot or none. */
    assert_int_equal(kube_request_send(T.c,
                                       &(struct kube_request){.verb = KUBE_GET,
                                                              .resource = &KUBE_NAMESPACES,
                                                              .name = T.ns,
                                                              .urgent = true},
                                       count_sending, &seen),
                     0);
    kube_client_get_stats(T.c, &st);
    assert_int_equal(st.requests - sent, 3);
    assert_true(kt_wait(&T, all_done, &seen, 30));
    assert_int_equal(seen.ok, 11);
    assert_true(seen.most_sending <= 2);
    kube_client_get_stats(T.c, &st);
    assert_int_equal(st.sending, 0);
    kube_client_set_max_sending(T.c, KUBE_CLIENT_MAX_SENDING);
}

struct result_copy {
    bool done;
    int code;
    long http;
    char message[512];
};

static void copy_result(void *ud, const struct kube_result *res)
{
    struct result_copy *r = ud;

    r->done = true;
    r->code = res->code;
    r->http = res->http_status;
    snprintf(r->message, sizeof(r->message), "%s", res->message);
}

static void test_client__invalid_object_is_422_with_server_message(void **state)
{
    cJSON *bad = kt_obj("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\","
                        "\"metadata\":{\"name\":\"Bad_Name\"}}");
    struct result_copy r = {0};

    assert_int_equal(kube_request_send(T.c,
                                       &(struct kube_request){.verb = KUBE_CREATE,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .body = bad},
                                       copy_result, &r),
                     0);
    assert_true(kt_run_until(&T, &r.done, 30));
    assert_int_equal(r.code, -EINVAL);
    assert_int_equal(r.http, 422);
    assert_non_null(strstr(r.message, "ConfigMap \"Bad_Name\" is invalid"));
    cJSON_Delete(bad);
}

struct list_copy {
    bool done;
    int code;
    int items;
    char rv[64];
};

static void copy_list(void *ud, const struct kube_result *res)
{
    struct list_copy *l = ud;

    l->done = true;
    l->code = res->code;
    l->items = cJSON_GetArraySize(cJSON_GetObjectItem(res->body, "items"));
    snprintf(l->rv, sizeof(l->rv), "%s", res->body ? kube_obj_resource_version(res->body) : "");
}

static void test_client__list_pages_follow_continue(void **state)
{
    struct kube_request req = {.verb = KUBE_LIST,
                               .resource = &KUBE_CONFIGMAPS,
                               .namespace_ = T.ns,
                               .label_selector = "test=paging",
                               .limit = 10};
    struct kube_client_stats before, after;
    struct list_copy l = {0};
    cJSON *page = NULL;
    char name[32];

    for (int i = 0; i < 25; i++) {
        snprintf(name, sizeof(name), "page-%02d", i);
        assert_int_equal(kt_create_cm(&T, T.ns, name, "paging", "x", NULL), 0);
    }
    /* One page: 10 items and a continue token. */
    assert_int_equal(kt_sync(&T, &req, &page), 0);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(page, "items")), 10);
    assert_true(strlen(cJSON_GetObjectItem(cJSON_GetObjectItem(page, "metadata"), "continue")
                           ->valuestring) > 0);
    cJSON_Delete(page);

    /* Every page: 25 items in 3 requests, one resourceVersion. */
    kube_client_get_stats(T.c, &before);
    assert_int_equal(kube_list_all(T.c, &req, copy_list, &l), 0);
    assert_true(kt_run_until(&T, &l.done, 30));
    kube_client_get_stats(T.c, &after);
    assert_int_equal(l.code, 0);
    assert_int_equal(l.items, 25);
    assert_true(strlen(l.rv) > 0);
    assert_int_equal(after.lists - before.lists, 3);
}

static void test_client__merge_and_json_patch(void **state)
{
    cJSON *merge = kt_obj("{\"data\":{\"k\":\"merged\",\"extra\":\"1\"}}");
    cJSON *jp = kt_obj("[{\"op\":\"replace\",\"path\":\"/data/k\",\"value\":\"json-patched\"},"
                       "{\"op\":\"remove\",\"path\":\"/data/extra\"}]");
    cJSON *jp_bad = kt_obj("[{\"op\":\"test\",\"path\":\"/data/k\",\"value\":\"nope\"}]");
    cJSON *out = NULL;

    assert_int_equal(kt_create_cm(&T, T.ns, "patched", "patch", "v", NULL), 0);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_PATCH,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "patched",
                                                    .body = merge,
                                                    .patch_type = KUBE_PATCH_MERGE},
                             &out),
                     0);
    assert_string_equal(data_k(out), "merged");
    cJSON_Delete(out);
    out = NULL;
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_PATCH,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "patched",
                                                    .body = jp,
                                                    .patch_type = KUBE_PATCH_JSON},
                             &out),
                     0);
    assert_string_equal(data_k(out), "json-patched");
    assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(out, "data"), "extra"));
    cJSON_Delete(out);
    /* A failing RFC 6902 "test" op changes nothing and is an error. */
    assert_true(kt_sync(&T,
                        &(struct kube_request){.verb = KUBE_PATCH,
                                               .resource = &KUBE_CONFIGMAPS,
                                               .namespace_ = T.ns,
                                               .name = "patched",
                                               .body = jp_bad,
                                               .patch_type = KUBE_PATCH_JSON},
                        NULL) < 0);
    cJSON_Delete(merge);
    cJSON_Delete(jp);
    cJSON_Delete(jp_bad);
}

static int apply(const char *manager, const char *value, bool force, cJSON **ret, struct err *e)
{
    char json[512];
    cJSON *o;
    int r;

    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"applied\","
             "\"namespace\":\"%s\"},\"data\":{\"k\":\"%s\"}}",
             T.ns, value);
    o = kt_obj(json);
    r = kube_request_sync(T.c,
                          &(struct kube_request){.verb = KUBE_PATCH,
                                                 .resource = &KUBE_CONFIGMAPS,
                                                 .namespace_ = T.ns,
                                                 .name = "applied",
                                                 .body = o,
                                                 .patch_type = KUBE_PATCH_APPLY,
                                                 .field_manager = manager,
                                                 .force = force},
                          ret, e);
    cJSON_Delete(o);
    return r;
}

static void test_client__server_side_apply_conflict_and_force(void **state)
{
    cJSON *out = NULL;
    struct err e;

    /* Apply creates the object and owns data.k for manager "alpha". */
    assert_int_equal(apply("alpha", "a1", false, &out, &e), 0);
    assert_string_equal(data_k(out), "a1");
    cJSON_Delete(out);
    out = NULL;
    /* Re-applying the same intent is a no-op success. */
    assert_int_equal(apply("alpha", "a1", false, NULL, &e), 0);
    /* Another manager setting the same field to another value conflicts... */
    assert_int_equal(apply("beta", "b1", false, NULL, &e), -EBUSY);
    assert_non_null(strstr(e.msg, "conflict"));
    /* ...unless it forces, and then it owns the field. */
    assert_int_equal(apply("beta", "b1", true, &out, &e), 0);
    assert_string_equal(data_k(out), "b1");
    cJSON_Delete(out);
    assert_int_equal(apply("alpha", "a2", false, NULL, &e), -EBUSY);
}

/* A kind name no other test uses, so short names such as `kubectl get widget` stay
 * unambiguous in the shared super cluster; the CRD is deleted again in teardown. */
static const struct kube_resource PROBES = {"kubetest.nestcp.io", "v1", "statusprobes",
                                            "StatusProbe", true};

static void install_probe_crd(void)
{
    cJSON *crd = kt_obj(
        "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
        "\"metadata\":{\"name\":\"statusprobes.kubetest.nestcp.io\"},\"spec\":{\"group\":"
        "\"kubetest.nestcp.io\",\"scope\":\"Namespaced\",\"names\":{\"plural\":\"statusprobes\","
        "\"singular\":\"statusprobe\",\"kind\":\"StatusProbe\",\"listKind\":\"StatusProbeList\"},"
        "\"versions\":"
        "[{\"name\":\"v1\",\"served\":true,\"storage\":true,\"subresources\":{\"status\":{}},"
        "\"schema\":{\"openAPIV3Schema\":{\"type\":\"object\",\"properties\":{\"spec\":{"
        "\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true},\"status\":{"
        "\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}}}]}}");
    int r = kt_sync(
        &T, &(struct kube_request){.verb = KUBE_CREATE, .resource = &KUBE_CRDS, .body = crd}, NULL);

    assert_true(r == 0 || r == -EEXIST);
    cJSON_Delete(crd);
}

static const char *status_phase(const cJSON *o)
{
    const cJSON *v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "status"), "phase");

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static void test_client__status_subresource(void **state)
{
    char json[512];
    cJSON *w, *out = NULL, *st;
    double end;
    int r;

    install_probe_crd();
    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"kubetest.nestcp.io/v1\",\"kind\":\"StatusProbe\",\"metadata\":"
             "{\"name\":\"w1\",\"namespace\":\"%s\"},\"spec\":{\"size\":1},"
             "\"status\":{\"phase\":\"ignored\"}}",
             T.ns);
    w = kt_obj(json);
    /* The new type takes a moment to be served. */
    end = time_mono() + 30;
    do {
        r = kt_sync(&T, &(struct kube_request){.verb = KUBE_CREATE, .resource = &PROBES, .body = w},
                    &out);
        if (r == -ENOENT)
            kt_run_for(&T, 0.2);
    } while (r == -ENOENT && time_mono() < end);
    assert_int_equal(r, 0);
    /* Status on the main resource is dropped. */
    assert_null(status_phase(out));
    cJSON_Delete(out);
    out = NULL;

    st = kt_obj("{\"status\":{\"phase\":\"Ready\"}}");
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_PATCH,
                                                    .resource = &PROBES,
                                                    .namespace_ = T.ns,
                                                    .name = "w1",
                                                    .subresource = "status",
                                                    .body = st,
                                                    .patch_type = KUBE_PATCH_MERGE},
                             &out),
                     0);
    assert_string_equal(status_phase(out), "Ready");
    /* A status write does not bump the generation. */
    assert_int_equal(
        cJSON_GetObjectItem(cJSON_GetObjectItem(out, "metadata"), "generation")->valueint, 1);
    /* PUT on /status with the object read back works too (and only touches status). */
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(out, "status"), "phase",
                              cJSON_CreateString("Done"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(out, "spec"), "size", cJSON_CreateNumber(9));
    {
        cJSON *put = NULL;

        assert_int_equal(kt_sync(&T,
                                 &(struct kube_request){.verb = KUBE_UPDATE,
                                                        .resource = &PROBES,
                                                        .namespace_ = T.ns,
                                                        .name = "w1",
                                                        .subresource = "status",
                                                        .body = out},
                                 &put),
                         0);
        assert_string_equal(status_phase(put), "Done");
        assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(put, "spec"), "size")->valueint,
                         1);
        cJSON_Delete(put);
    }
    cJSON_Delete(out);
    cJSON_Delete(st);
    cJSON_Delete(w);
}

struct writer {
    bool done;
    int code;
};

static void writer_done(void *ud, const struct kube_result *res)
{
    struct writer *w = ud;

    w->done = true;
    w->code = res->code;
}

static void test_client__concurrent_writers_one_gets_409(void **state)
{
    struct kube_client *other = kt_client(&T);
    cJSON *base = NULL, *a, *b;
    struct writer wa = {0}, wb = {0};

    assert_int_equal(kt_create_cm(&T, T.ns, "contended", "race", "0", &base), 0);
    a = cJSON_Duplicate(base, 1);
    b = cJSON_Duplicate(base, 1);
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(a, "data"), "k", cJSON_CreateString("a"));
    cJSON_ReplaceItemInObject(cJSON_GetObjectItem(b, "data"), "k", cJSON_CreateString("b"));
    /* Both updates are in flight at once, from two clients, on the same resourceVersion. */
    assert_int_equal(kube_request_send(T.c,
                                       &(struct kube_request){.verb = KUBE_UPDATE,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .name = "contended",
                                                              .body = a},
                                       writer_done, &wa),
                     0);
    assert_int_equal(kube_request_send(other,
                                       &(struct kube_request){.verb = KUBE_UPDATE,
                                                              .resource = &KUBE_CONFIGMAPS,
                                                              .namespace_ = T.ns,
                                                              .name = "contended",
                                                              .body = b},
                                       writer_done, &wb),
                     0);
    assert_true(kt_run_until(&T, &wa.done, 30));
    assert_true(kt_run_until(&T, &wb.done, 30));
    assert_true((wa.code == 0 && wb.code == -EBUSY) || (wa.code == -EBUSY && wb.code == 0));
    kube_client_free(other);
    cJSON_Delete(base);
    cJSON_Delete(a);
    cJSON_Delete(b);
}

struct watch_log {
    int added, modified, deleted, bookmarks;
    bool ended;
    int code;
    char last_rv[64];
};

static void wl_event(void *ud, enum kube_watch_event_type type, cJSON *obj)
{
    struct watch_log *l = ud;

    if (type == KUBE_WATCH_ADDED)
        l->added++;
    else if (type == KUBE_WATCH_MODIFIED)
        l->modified++;
    else if (type == KUBE_WATCH_DELETED)
        l->deleted++;
    else
        l->bookmarks++;
    snprintf(l->last_rv, sizeof(l->last_rv), "%s", kube_obj_resource_version(obj));
}

static void wl_end(void *ud, int code, const char *message)
{
    struct watch_log *l = ud;

    l->ended = true;
    l->code = code;
}

static void test_client__watch_ends_by_timeout_seconds(void **state)
{
    struct kube_request lr = {.verb = KUBE_LIST,
                              .resource = &KUBE_CONFIGMAPS,
                              .namespace_ = T.ns,
                              .label_selector = "test=watch"};
    struct kube_watch_opts o = {.namespace_ = T.ns,
                                .label_selector = "test=watch",
                                .timeout_seconds = 2,
                                .allow_bookmarks = true};
    struct watch_log l = {0};
    struct kube_watch *w = NULL;
    cJSON *list = NULL;
    double start;

    assert_int_equal(kt_sync(&T, &lr, &list), 0);
    o.resource_version = kube_obj_resource_version(list);
    assert_int_equal(kube_watch_start(T.c, &KUBE_CONFIGMAPS, &o, wl_event, wl_end, &l, &w), 0);
    start = time_mono();
    assert_int_equal(kt_create_cm(&T, T.ns, "watched", "watch", "1", NULL), 0);
    assert_int_equal(kt_sync(&T,
                             &(struct kube_request){.verb = KUBE_DELETE,
                                                    .resource = &KUBE_CONFIGMAPS,
                                                    .namespace_ = T.ns,
                                                    .name = "watched"},
                             NULL),
                     0);
    assert_true(kt_run_until(&T, &l.ended, 30));
    assert_int_equal(l.code, 0);
    assert_true(time_mono() - start >= 1.5);
    assert_int_equal(l.added, 1);
    assert_int_equal(l.deleted, 1);
    assert_int_equal(kube_watch_events(w),
                     (unsigned long)(l.added + l.modified + l.deleted + l.bookmarks));
    kube_watch_free(w);
    cJSON_Delete(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_client__crud_and_error_codes),
        cmocka_unit_test(test_client__answers_larger_than_the_receive_buffer_arrive_whole),
        cmocka_unit_test(test_client__requests_wait_for_a_slot_and_all_are_answered),
        cmocka_unit_test(test_client__invalid_object_is_422_with_server_message),
        cmocka_unit_test(test_client__list_pages_follow_continue),
        cmocka_unit_test(test_client__merge_and_json_patch),
        cmocka_unit_test(test_client__server_side_apply_conflict_and_force),
        cmocka_unit_test(test_client__status_subresource),
        cmocka_unit_test(test_client__concurrent_writers_one_gets_409),
        cmocka_unit_test(test_client__watch_ends_by_timeout_seconds),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
