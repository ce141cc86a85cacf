#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/util/buf.h"
#include "lib/util/log.h"
#include "lib/util/strutil.h"

static void test_buf__cap_refuses_growth_past_max(void **state)
{
    struct buf b;

    buf_init(&b, 8);
    assert_int_equal(buf_puts(&b, "12345"), 0);
    assert_int_equal(buf_puts(&b, "678"), 0);
    assert_int_equal(buf_puts(&b, "9"), -ENOBUFS);
    assert_string_equal(b.data, "12345678");
    buf_consume(&b, 5);
    assert_string_equal(b.data, "678");
    assert_int_equal(buf_printf(&b, "%d", 42), 0);
    assert_string_equal(b.data, "67842");
    buf_done(&b);
}

static void test_buf__stolen_text_keeps_no_room_to_grow(void **state)
{
    struct buf b = BUF_INIT;
    char *s;

    /* 300 bytes grow the buffer to 512; what is stolen is the text's size. */
    for (int i = 0; i < 30; i++)
        assert_int_equal(buf_printf(&b, "%s", "0123456789"), 0);
    assert_true(b.cap >= 512);
    s = buf_steal(&b);
    assert_int_equal(strlen(s), 300);
    assert_true(malloc_usable_size(s) < 320);
    assert_null(b.data);
    free(s);
    s = buf_steal(&b);
    assert_string_equal(s, "");
    free(s);
}

static void test_log__json_lines_carry_each_key(void **state)
{
    char *line = log_format_line(LOG_FORMAT_JSON, 1.5, LOG_LEVEL_WARN, "watch restarted",
                                 "resource=pods reason=too old resource version rv=42");
    cJSON *j = cJSON_Parse(line);

    assert_non_null(j);
    assert_string_equal(cJSON_GetObjectItem(j, "level")->valuestring, "warn");
    assert_string_equal(cJSON_GetObjectItem(j, "msg")->valuestring, "watch restarted");
    assert_string_equal(cJSON_GetObjectItem(j, "resource")->valuestring, "pods");
    assert_string_equal(cJSON_GetObjectItem(j, "reason")->valuestring, "too old resource version");
    assert_string_equal(cJSON_GetObjectItem(j, "rv")->valuestring, "42");
    assert_string_equal(cJSON_GetObjectItem(j, "ts")->valuestring, "1970-01-01T00:00:01.500Z");
    cJSON_Delete(j);
    free(line);
}

static void test_log__text_lines_are_readable(void **state)
{
    char *line = log_format_line(LOG_FORMAT_TEXT, 0, LOG_LEVEL_INFO, "started", "port=8080");

    assert_string_equal(line, "1970-01-01T00:00:00.000Z info  started port=8080\n");
    free(line);
}

static void test_strutil__parsers_reject_junk(void **state)
{
    int v;
    double t;

    assert_int_equal(str_to_int("42", 0, 100, &v), 0);
    assert_int_equal(v, 42);
    assert_int_equal(str_to_int("42x", 0, 100, &v), -EINVAL);
    assert_int_equal(str_to_int("", 0, 100, &v), -EINVAL);
    assert_int_equal(str_to_int("101", 0, 100, &v), -ERANGE);
    assert_int_equal(time_parse_rfc3339("2021-01-02T03:04:05Z", &t), 0);
    assert_true(t == 1609556645.0);
    assert_int_equal(time_parse_rfc3339("2021-01-02T04:04:05.5+01:00", &t), 0);
    assert_true(t == 1609556645.5);
    assert_int_equal(time_parse_rfc3339("yesterday", &t), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf__cap_refuses_growth_past_max),
        cmocka_unit_test(test_buf__stolen_text_keeps_no_room_to_grow),
        cmocka_unit_test(test_log__json_lines_carry_each_key),
        cmocka_unit_test(test_log__text_lines_are_readable),
        cmocka_unit_test(test_strutil__parsers_reject_junk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
