#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/kube/status.h"
#include "lib/kube/watch.h"

/* What a decoded stream looked like: "TYPE name rv;" per event. */
struct seen {
    char log[4096];
    int events;
    int stop_after; /* 0: never */
};

static int record(void *userdata, const char *type, cJSON *object, cJSON *event)
{
    struct seen *s = userdata;
    const cJSON *meta = cJSON_GetObjectItem(object, "metadata");
    const cJSON *name = cJSON_GetObjectItem(meta, "name");
    const cJSON *rv = cJSON_GetObjectItem(meta, "resourceVersion");
    size_t n = strlen(s->log);

    snprintf(s->log + n, sizeof(s->log) - n, "%s %s %s;", type,
             cJSON_IsString(name) ? name->valuestring : "-",
             cJSON_IsString(rv) ? rv->valuestring : "-");
    s->events++;
    if (s->stop_after && s->events >= s->stop_after)
        return -ECANCELED;
    return 0;
}

static const char stream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"a\","
    "\"resourceVersion\":\"10\"},\"data\":{\"k\":\"v\\n\"}}}\n"
    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"11\"}}}"
    "\r\n"
    "\n"
    "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"12\"}}}\n"
    "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\",\"resourceVersion\":\"13\"}}}\n"
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
    "\"Failure\",\"message\":\"too old resource version: 5 (9)\",\"reason\":\"Expired\","
    "\"code\":410}}\n";

static const char want[] = "ADDED a 10;MODIFIED a 11;BOOKMARK - 12;DELETED a 13;ERROR - -;";

static void test_watch__decodes_whole_stream(void **state)
{
    struct kube_watch_decoder d;
    struct seen s = {0};

    kube_watch_decoder_init(&d, 0);
    assert_int_equal(kube_watch_decoder_feed(&d, stream, strlen(stream), record, &s), 0);
    assert_string_equal(s.log, want);
    assert_int_equal(d.line.len, 0);
    kube_watch_decoder_done(&d);
}

static void test_watch__split_at_every_byte(void **state)
{
    size_t n = strlen(stream);

    for (size_t cut = 0; cut <= n; cut++) {
        struct kube_watch_decoder d;
        struct seen s = {0};

        kube_watch_decoder_init(&d, 0);
        assert_int_equal(kube_watch_decoder_feed(&d, stream, cut, record, &s), 0);
        assert_int_equal(kube_watch_decoder_feed(&d, stream + cut, n - cut, record, &s), 0);
        assert_string_equal(s.log, want);
        kube_watch_decoder_done(&d);
    }
    /* And one byte at a time. */
    {
        struct kube_watch_decoder d;
        struct seen s = {0};

        kube_watch_decoder_init(&d, 0);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(kube_watch_decoder_feed(&d, stream + i, 1, record, &s), 0);
        assert_string_equal(s.log, want);
        kube_watch_decoder_done(&d);
    }
}

static void test_watch__partial_last_line_waits_for_newline(void **state)
{
    const char *ev = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}";
    struct kube_watch_decoder d;
    struct seen s = {0};

    kube_watch_decoder_init(&d, 0);
    assert_int_equal(kube_watch_decoder_feed(&d, ev, strlen(ev), record, &s), 0);
    assert_int_equal(s.events, 0);
    assert_int_equal(kube_watch_decoder_feed(&d, "\n", 1, record, &s), 0);
    assert_string_equal(s.log, "ADDED b -;");
    kube_watch_decoder_done(&d);
}

static void test_watch__overlong_line_is_an_error(void **state)
{
    struct kube_watch_decoder d;
    struct seen s = {0};
    char chunk[100];

    memset(chunk, 'x', sizeof(chunk));
    kube_watch_decoder_init(&d, 256);
    /* Two short chunks fit; the third passes the bound without a newline. */
    assert_int_equal(kube_watch_decoder_feed(&d, chunk, 100, record, &s), 0);
    assert_int_equal(kube_watch_decoder_feed(&d, chunk, 100, record, &s), 0);
    assert_int_equal(kube_watch_decoder_feed(&d, chunk, 100, record, &s), -EMSGSIZE);
    assert_true(d.line.cap <= 512); /* nothing grew past the bound */
    kube_watch_decoder_done(&d);

    /* A complete line longer than the bound, in one chunk, is refused too. */
    {
        char big[400];

        memset(big, ' ', sizeof(big));
        big[399] = '\n';
        kube_watch_decoder_init(&d, 256);
        assert_int_equal(kube_watch_decoder_feed(&d, big, sizeof(big), record, &s), -EMSGSIZE);
        kube_watch_decoder_done(&d);
    }
    /* A line exactly at the bound is fine. */
    {
        const char *ev = "{\"type\":\"ADDED\",\"object\":{}}\n";

        kube_watch_decoder_init(&d, strlen(ev) - 1);
        assert_int_equal(kube_watch_decoder_feed(&d, ev, strlen(ev), record, &s), 0);
        kube_watch_decoder_done(&d);
    }
}

static void test_watch__malformed_events_are_skipped_and_counted(void **state)
{
    const char *bad[] = {"not json\n",
                         "{\"type\":\"ADDED\"}\n",
                         "{\"type\":1,\"object\":{}}\n",
                         "{\"type\":\"ADDED\",\"object\":[]}\n",
                         "[1,2]\n",
                         "{\"type\":\"ADDED\",\"object\":{\"metadata\":\n"};
    const char *good = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"c\"}}}\n";

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct kube_watch_decoder d;
        struct seen s = {0};

        kube_watch_decoder_init(&d, 0);
        assert_int_equal(kube_watch_decoder_feed(&d, bad[i], strlen(bad[i]), record, &s), 0);
        assert_int_equal(s.events, 0);
        assert_int_equal(d.skipped, 1);
        /* The stream goes on: the next event is decoded. */
        assert_int_equal(kube_watch_decoder_feed(&d, good, strlen(good), record, &s), 0);
        assert_string_equal(s.log, "ADDED c -;");
        assert_int_equal(d.skipped, 1);
        kube_watch_decoder_done(&d);
    }
}

static void test_watch__callback_can_stop_decoding(void **state)
{
    struct kube_watch_decoder d;
    struct seen s = {.stop_after = 2};

    kube_watch_decoder_init(&d, 0);
    assert_int_equal(kube_watch_decoder_feed(&d, stream, strlen(stream), record, &s), -ECANCELED);
    assert_string_equal(s.log, "ADDED a 10;MODIFIED a 11;");
    kube_watch_decoder_done(&d);
}

static void test_watch__error_event_status_maps_to_estale(void **state)
{
    cJSON *st = cJSON_Parse("{\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\","
                            "\"message\":\"too old resource version: 5 (9)\",\"code\":410}");
    cJSON *gone = cJSON_Parse("{\"kind\":\"Status\",\"code\":410}");

    assert_int_equal(kube_status_code(0, st), -ESTALE);
    assert_string_equal(kube_status_message(st), "too old resource version: 5 (9)");
    assert_int_equal(kube_status_code(0, gone), -ESTALE);
    cJSON_Delete(st);
    cJSON_Delete(gone);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch__decodes_whole_stream),
        cmocka_unit_test(test_watch__split_at_every_byte),
        cmocka_unit_test(test_watch__partial_last_line_waits_for_newline),
        cmocka_unit_test(test_watch__overlong_line_is_an_error),
        cmocka_unit_test(test_watch__malformed_events_are_skipped_and_counted),
        cmocka_unit_test(test_watch__callback_can_stop_decoding),
        cmocka_unit_test(test_watch__error_event_status_maps_to_estale),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
