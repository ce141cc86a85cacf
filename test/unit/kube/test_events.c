#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "lib/kube/events.h"
#include "lib/util/strutil.h"

/*
 * The recorder's own logic (aggregation, spam filter, naming, truncation, follow-up requests)
 * checked through its send hook: each request is kept as the JSON the client would send and
 * completed by the test with the result the server would give. That the server accepts these
 * Events is checked against the real apiserver in test/integration/kube/test_events.c.
 */

#define MAX_SENT 64

struct sent {
    enum kube_verb verb;
    char *namespace_;
    char *name;
    cJSON *body;
    kube_done_fn done;
    void *userdata;
    bool completed;
};

struct fixture {
    struct ev_loop *loop;
    struct kube_recorder *r;
    struct sent sent[MAX_SENT];
    int nsent;
    int ncompleted;
    int flushed;
};

static int record_send(void *ctx, const struct kube_request *req, kube_done_fn done, void *userdata)
{
    struct fixture *f = ctx;
    struct sent *s;

    assert_true(f->nsent < MAX_SENT);
    assert_ptr_equal(req->resource, &KUBE_EVENTS);
    s = &f->sent[f->nsent++];
    s->verb = req->verb;
    s->namespace_ = str_dup(req->namespace_);
    s->name = str_dup(req->name);
    s->body = cJSON_Duplicate(req->body, true);
    if (req->verb == KUBE_PATCH)
        assert_int_equal(req->patch_type, KUBE_PATCH_MERGE);
    s->done = done;
    s->userdata = userdata;
    return 0;
}

/* Completes the oldest outstanding request with code (0: success). */
static void complete_next(struct fixture *f, int code)
{
    struct kube_result res = {.code = code, .message = ""};

    for (int i = 0; i < f->nsent; i++) {
        if (!f->sent[i].completed) {
            f->sent[i].completed = true;
            f->ncompleted++;
            res.http_status = code == 0 ? 200 : code == -ENOENT ? 404 : 500;
            f->sent[i].done(f->sent[i].userdata, &res);
            return;
        }
    }
    fail_msg("no request outstanding");
}

static void complete_all(struct fixture *f)
{
    while (f->ncompleted < f->nsent)
        complete_next(f, 0);
}

static struct fixture *fixture_new(const struct kube_recorder_opts *extra)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct kube_recorder_opts opts = extra ? *extra : (struct kube_recorder_opts){0};
    struct err e = {0};

    assert_non_null(f);
    f->loop = ev_loop_new(EVFLAG_AUTO);
    if (!opts.component)
        opts.component = "nestcp";
    opts.instance = "host-1";
    opts.send = record_send;
    opts.send_ctx = f;
    assert_int_equal(kube_recorder_new(f->loop, NULL, &opts, &f->r, &e), 0);
    return f;
}

static void fixture_free(struct fixture *f)
{
    kube_recorder_free(f->r);
    for (int i = 0; i < f->nsent; i++) {
        free(f->sent[i].namespace_);
        free(f->sent[i].name);
        cJSON_Delete(f->sent[i].body);
    }
    ev_loop_destroy(f->loop);
    free(f);
}

static const struct kube_event_ref CM = {
    .resource = &KUBE_CONFIGMAPS,
    .namespace_ = "team-a",
    .name = "settings",
    .uid = "1111-2222",
    .resource_version = "42",
};

static const char *str_at(const cJSON *obj, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    if (b)
        v = cJSON_GetObjectItemCaseSensitive(v, b);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double num_at(const cJSON *obj, const char *a)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, a);

    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void test_events__first_occurrence_creates_a_complete_event(void **state)
{
    struct fixture *f = fixture_new(NULL);
    const cJSON *ev;

    kube_recorder_event(f->r, &CM, KUBE_EVENT_WARNING, "RenderFailed", "template %s: %d errors",
                        "etcd", 2);
    assert_int_equal(f->nsent, 1);
    assert_int_equal(f->sent[0].verb, KUBE_CREATE);
    assert_string_equal(f->sent[0].namespace_, "team-a");
    ev = f->sent[0].body;
    assert_string_equal(str_at(ev, "apiVersion", NULL), "v1");
    assert_string_equal(str_at(ev, "kind", NULL), "Event");
    assert_true(str_has_prefix(str_at(ev, "metadata", "name"), "settings."));
    assert_true(strlen(str_at(ev, "metadata", "name")) > strlen("settings."));
    assert_string_equal(str_at(ev, "metadata", "namespace"), "team-a");
    assert_string_equal(str_at(ev, "involvedObject", "apiVersion"), "v1");
    assert_string_equal(str_at(ev, "involvedObject", "kind"), "ConfigMap");
    assert_string_equal(str_at(ev, "involvedObject", "namespace"), "team-a");
    assert_string_equal(str_at(ev, "involvedObject", "name"), "settings");
    assert_string_equal(str_at(ev, "involvedObject", "uid"), "1111-2222");
    assert_string_equal(str_at(ev, "involvedObject", "resourceVersion"), "42");
    assert_string_equal(str_at(ev, "type", NULL), "Warning");
    assert_string_equal(str_at(ev, "reason", NULL), "RenderFailed");
    assert_string_equal(str_at(ev, "message", NULL), "template etcd: 2 errors");
    assert_string_equal(str_at(ev, "source", "component"), "nestcp");
    assert_string_equal(str_at(ev, "source", "host"), "host-1");
    assert_string_equal(str_at(ev, "reportingComponent", NULL), "nestcp");
    assert_string_equal(str_at(ev, "reportingInstance", NULL), "host-1");
    assert_true(num_at(ev, "count") == 1);
    assert_non_null(str_at(ev, "firstTimestamp", NULL));
    assert_string_equal(str_at(ev, "firstTimestamp", NULL), str_at(ev, "lastTimestamp", NULL));
    complete_all(f);
    assert_int_equal(kube_recorder_stats(f->r)->created, 1);
    assert_int_equal(kube_recorder_stats(f->r)->in_flight, 0);
    fixture_free(f);
}

static void test_events__repeats_patch_the_count_of_the_same_event(void **state)
{
    struct fixture *f = fixture_new(NULL);

    for (int i = 0; i < 3; i++) {
        kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
        complete_all(f);
    }
    assert_int_equal(f->nsent, 3);
    assert_int_equal(f->sent[0].verb, KUBE_CREATE);
    for (int i = 1; i < 3; i++) {
        assert_int_equal(f->sent[i].verb, KUBE_PATCH);
        assert_string_equal(f->sent[i].name, str_at(f->sent[0].body, "metadata", "name"));
        assert_string_equal(f->sent[i].namespace_, "team-a");
        assert_true(num_at(f->sent[i].body, "count") == i + 1);
        assert_non_null(str_at(f->sent[i].body, "lastTimestamp", NULL));
        /* A merge patch of count and lastTimestamp only. */
        assert_int_equal(cJSON_GetArraySize(f->sent[i].body), 2);
    }
    assert_int_equal(kube_recorder_stats(f->r)->created, 1);
    assert_int_equal(kube_recorder_stats(f->r)->patched, 2);
    fixture_free(f);
}

static void test_events__repeats_while_in_flight_fold_into_one_patch(void **state)
{
    struct fixture *f = fixture_new(NULL);

    for (int i = 0; i < 5; i++)
        kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    assert_int_equal(f->nsent, 1);
    complete_next(f, 0);
    assert_int_equal(f->nsent, 2);
    assert_int_equal(f->sent[1].verb, KUBE_PATCH);
    assert_true(num_at(f->sent[1].body, "count") == 5);
    complete_next(f, 0);
    assert_int_equal(f->nsent, 2);
    assert_int_equal(kube_recorder_stats(f->r)->in_flight, 0);
    fixture_free(f);
}

static void test_events__different_type_reason_or_message_is_a_different_event(void **state)
{
    struct fixture *f = fixture_new(NULL);
    struct kube_event_ref other = CM;

    other.name = "other";
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_WARNING, "Synced", "all good");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Created", "all good");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all fine");
    kube_recorder_event(f->r, &other, KUBE_EVENT_NORMAL, "Synced", "all good");
    assert_int_equal(f->nsent, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(f->sent[i].verb, KUBE_CREATE);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(str_at(f->sent[i].body, "metadata", "name"),
                                    str_at(f->sent[j].body, "metadata", "name"));
    }
    complete_all(f);
    fixture_free(f);
}

static void test_events__spam_filter_limits_each_object_to_its_burst(void **state)
{
    struct kube_recorder_opts opts = {.burst = 3, .refill_seconds = 300};
    struct fixture *f = fixture_new(&opts);
    struct kube_event_ref other = CM;

    other.name = "other";
    /* A hot loop on one object: distinct messages, so no aggregation helps. */
    for (int i = 0; i < 10; i++) {
        kube_recorder_event(f->r, &CM, KUBE_EVENT_WARNING, "Failed", "attempt %d", i);
        complete_all(f);
    }
    assert_int_equal(f->nsent, 3);
    assert_int_equal(kube_recorder_stats(f->r)->dropped, 7);
    assert_int_equal(kube_recorder_stats(f->r)->recorded, 10);
    /* Repeats of an allowed event take tokens too: none is left for this object. */
    kube_recorder_event(f->r, &CM, KUBE_EVENT_WARNING, "Failed", "attempt 0");
    assert_int_equal(f->nsent, 3);
    /* Another object has its own bucket. */
    kube_recorder_event(f->r, &other, KUBE_EVENT_WARNING, "Failed", "attempt 0");
    assert_int_equal(f->nsent, 4);
    complete_all(f);
    fixture_free(f);
}

static void test_events__long_messages_are_cut_at_a_character_boundary(void **state)
{
    struct fixture *f = fixture_new(NULL);
    char msg[3000];
    const char *sent;
    size_t n = 0;

    /* 1023 ASCII bytes then two-byte characters: byte 1024 falls inside "é". */
    memset(msg, 'a', 1023);
    n = 1023;
    while (n + 2 < sizeof(msg)) {
        msg[n++] = (char)0xc3;
        msg[n++] = (char)0xa9;
    }
    msg[n] = '\0';
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Long", "%s", msg);
    assert_int_equal(f->nsent, 1);
    sent = str_at(f->sent[0].body, "message", NULL);
    assert_int_equal(strlen(sent), 1023);
    assert_memory_equal(sent, msg, 1023);

    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Long", "%.*s", 1500, msg + 1023);
    sent = str_at(f->sent[1].body, "message", NULL);
    assert_int_equal(strlen(sent), KUBE_EVENT_MESSAGE_MAX);
    complete_all(f);
    fixture_free(f);
}

static void test_events__expired_event_is_created_again_with_its_count(void **state)
{
    struct fixture *f = fixture_new(NULL);
    cJSON *first, *again;
    const char *name;

    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    complete_all(f);
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    assert_int_equal(f->sent[1].verb, KUBE_PATCH);
    complete_next(f, -ENOENT);
    assert_int_equal(f->nsent, 3);
    assert_int_equal(f->sent[2].verb, KUBE_CREATE);
    name = str_at(f->sent[0].body, "metadata", "name");
    assert_string_equal(str_at(f->sent[2].body, "metadata", "name"), name);
    assert_true(num_at(f->sent[2].body, "count") == 2);
    assert_string_equal(str_at(f->sent[2].body, "firstTimestamp", NULL),
                        str_at(f->sent[0].body, "firstTimestamp", NULL));
    /* The same Event in every other field, as the recorder builds it again from what it kept. */
    first = cJSON_Duplicate(f->sent[0].body, true);
    again = cJSON_Duplicate(f->sent[2].body, true);
    cJSON_DeleteItemFromObjectCaseSensitive(first, "count");
    cJSON_DeleteItemFromObjectCaseSensitive(again, "count");
    cJSON_DeleteItemFromObjectCaseSensitive(first, "lastTimestamp");
    cJSON_DeleteItemFromObjectCaseSensitive(again, "lastTimestamp");
    assert_int_equal(cJSON_GetArraySize(again), 11);
    assert_true(cJSON_Compare(first, again, true));
    cJSON_Delete(first);
    cJSON_Delete(again);
    complete_all(f);
    /* It is the server's again: the next repeat patches. */
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    assert_int_equal(f->sent[3].verb, KUBE_PATCH);
    assert_true(num_at(f->sent[3].body, "count") == 3);
    complete_all(f);
    assert_int_equal(kube_recorder_stats(f->r)->created, 2);
    assert_int_equal(kube_recorder_stats(f->r)->failed, 0);
    fixture_free(f);
}

static void test_events__failures_are_counted_and_a_repeat_retries_the_create(void **state)
{
    struct fixture *f = fixture_new(NULL);

    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    complete_next(f, -EIO);
    assert_int_equal(kube_recorder_stats(f->r)->failed, 1);
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "all good");
    assert_int_equal(f->nsent, 2);
    assert_int_equal(f->sent[1].verb, KUBE_CREATE);
    assert_true(num_at(f->sent[1].body, "count") == 2);
    complete_all(f);
    assert_int_equal(kube_recorder_stats(f->r)->created, 1);
    fixture_free(f);
}

static void test_events__cache_forgets_the_least_recently_used_event(void **state)
{
    struct kube_recorder_opts opts = {.cache_size = 2};
    struct fixture *f = fixture_new(&opts);

    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "A", "a");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "B", "b");
    complete_all(f);
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "A", "a"); /* A is now the most recent */
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "C", "c"); /* evicts B */
    complete_all(f);
    assert_int_equal(f->sent[2].verb, KUBE_PATCH);
    assert_int_equal(f->sent[3].verb, KUBE_CREATE);
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "B", "b");
    assert_int_equal(f->sent[4].verb, KUBE_CREATE);
    assert_true(num_at(f->sent[4].body, "count") == 1);
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "C", "c");
    assert_int_equal(f->sent[5].verb, KUBE_PATCH);
    complete_all(f);
    fixture_free(f);
}

static void test_events__cluster_scoped_objects_get_events_in_default(void **state)
{
    struct fixture *f = fixture_new(NULL);
    struct kube_event_ref node = {.resource = &KUBE_NODES, .name = "node-1", .uid = "n-1"};
    struct kube_event_ref sts = {
        .resource = &KUBE_STATEFULSETS, .namespace_ = "ns", .name = "c-etcd"};

    kube_recorder_event(f->r, &node, KUBE_EVENT_NORMAL, "Seen", "hello");
    kube_recorder_event(f->r, &sts, KUBE_EVENT_NORMAL, "Seen", "hello");
    assert_string_equal(f->sent[0].namespace_, "default");
    assert_null(str_at(f->sent[0].body, "involvedObject", "namespace"));
    assert_string_equal(str_at(f->sent[1].body, "involvedObject", "apiVersion"), "apps/v1");
    assert_string_equal(str_at(f->sent[1].body, "involvedObject", "kind"), "StatefulSet");
    assert_null(str_at(f->sent[1].body, "involvedObject", "uid"));
    complete_all(f);
    fixture_free(f);
}

static void test_events__unusable_arguments_are_dropped(void **state)
{
    struct fixture *f = fixture_new(NULL);
    struct kube_event_ref nameless = {.resource = &KUBE_CONFIGMAPS, .namespace_ = "ns"};

    kube_recorder_event(f->r, &nameless, KUBE_EVENT_NORMAL, "Seen", "hello");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "", "hello");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Not\x1fOne", "hello");
    assert_int_equal(f->nsent, 0);
    assert_int_equal(kube_recorder_stats(f->r)->dropped, 3);
    fixture_free(f);
}

static void on_flushed(void *userdata)
{
    struct fixture *f = userdata;

    f->flushed++;
}

static void test_events__flush_reports_when_nothing_is_in_flight(void **state)
{
    struct fixture *f = fixture_new(NULL);

    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "one");
    kube_recorder_event(f->r, &CM, KUBE_EVENT_NORMAL, "Synced", "one");
    kube_recorder_flush(f->r, on_flushed, f);
    ev_run(f->loop, EVRUN_NOWAIT);
    assert_int_equal(f->flushed, 0);
    complete_next(f, 0); /* the create; the folded repeat follows as a patch */
    ev_run(f->loop, EVRUN_NOWAIT);
    assert_int_equal(f->flushed, 0);
    complete_next(f, 0);
    ev_run(f->loop, 0);
    assert_int_equal(f->flushed, 1);
    fixture_free(f);
}

static void test_events__free_with_requests_in_flight_waits_for_them(void **state)
{
    struct fixture *f = fixture_new(NULL);
    struct kube_recorder *r = f->r;

    kube_recorder_event(r, &CM, KUBE_EVENT_NORMAL, "Synced", "one");
    kube_recorder_event(r, &CM, KUBE_EVENT_NORMAL, "Synced", "two");
    kube_recorder_event(r, &CM, KUBE_EVENT_NORMAL, "Synced", "two");
    kube_recorder_free(r);
    f->r = NULL;
    /* The completions arrive after the free (as -ECANCELED when the client is freed); the
     * recorder goes away with the last one and sends nothing more. ASan checks the memory. */
    complete_next(f, -ECANCELED);
    complete_next(f, 0);
    assert_int_equal(f->nsent, 2);
    fixture_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events__first_occurrence_creates_a_complete_event),
        cmocka_unit_test(test_events__repeats_patch_the_count_of_the_same_event),
        cmocka_unit_test(test_events__repeats_while_in_flight_fold_into_one_patch),
        cmocka_unit_test(test_events__different_type_reason_or_message_is_a_different_event),
        cmocka_unit_test(test_events__spam_filter_limits_each_object_to_its_burst),
        cmocka_unit_test(test_events__long_messages_are_cut_at_a_character_boundary),
        cmocka_unit_test(test_events__expired_event_is_created_again_with_its_count),
        cmocka_unit_test(test_events__failures_are_counted_and_a_repeat_retries_the_create),
        cmocka_unit_test(test_events__cache_forgets_the_least_recently_used_event),
        cmocka_unit_test(test_events__cluster_scoped_objects_get_events_in_default),
        cmocka_unit_test(test_events__unusable_arguments_are_dropped),
        cmocka_unit_test(test_events__flush_reports_when_nothing_is_in_flight),
        cmocka_unit_test(test_events__free_with_requests_in_flight_waits_for_them),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
