#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "api/cidr.h"

static struct api_cidr c(const char *s)
{
    struct api_cidr r;

    assert_int_equal(api_cidr_parse(s, &r), 0);
    return r;
}

static void test_cidr__parses_both_families(void **state)
{
    struct api_cidr a = c("10.96.0.0/12"), b = c("fd00:10:96::/112");

    assert_int_equal(a.family, AF_INET);
    assert_int_equal(a.prefix, 12);
    assert_int_equal(api_cidr_size_log2(&a), 20);
    assert_int_equal(b.family, AF_INET6);
    assert_int_equal(api_cidr_size_log2(&b), 16);
    assert_true(api_cidr_host_bits_zero(&a));
}

static void test_cidr__rejects_bad_text(void **state)
{
    const char *bad[] = {"10.96.0.0/33",  "10.96.0.0",      "10.96.0/12", "10.96.0.0/-1",
                         "10.96.0.0/ 12", "10.96.0.0/012",  "fd00::/129", "/12",
                         "x/1",           "10.96.0.0/12/3", "10.96.0.0/"};
    struct api_cidr r;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(api_cidr_parse(bad[i], &r), -EINVAL);
}

static void test_cidr__host_bits_and_network(void **state)
{
    struct api_cidr a = c("10.96.0.1/12");
    char out[API_CIDR_STRLEN];

    assert_false(api_cidr_host_bits_zero(&a));
    api_cidr_format_network(&a, out, sizeof(out));
    assert_string_equal(out, "10.96.0.0/12");
}

static void test_cidr__overlap(void **state)
{
    struct api_cidr a = c("10.96.0.0/12"), b = c("10.100.0.0/16"), d = c("10.112.0.0/12");
    struct api_cidr v6 = c("::/0");

    assert_true(api_cidr_overlap(&a, &b));
    assert_true(api_cidr_overlap(&b, &a));
    assert_false(api_cidr_overlap(&a, &d));
    assert_false(api_cidr_overlap(&a, &v6));
}

static void test_cidr__nth_host(void **state)
{
    struct api_cidr a = c("10.96.0.0/12"), b = c("fd00::/120"), s = c("10.0.0.0/30");
    char out[API_CIDR_STRLEN];

    assert_int_equal(api_cidr_host(&a, 1, out, sizeof(out)), 0);
    assert_string_equal(out, "10.96.0.1");
    assert_int_equal(api_cidr_host(&a, 10, out, sizeof(out)), 0);
    assert_string_equal(out, "10.96.0.10");
    assert_int_equal(api_cidr_host(&a, 256, out, sizeof(out)), 0);
    assert_string_equal(out, "10.96.1.0");
    assert_int_equal(api_cidr_host(&b, 255, out, sizeof(out)), 0);
    assert_string_equal(out, "fd00::ff");
    assert_int_equal(api_cidr_host(&s, 4, out, sizeof(out)), -ERANGE);
    assert_int_equal(api_ip_family("10.0.0.1"), AF_INET);
    assert_int_equal(api_ip_family("fd00::1"), AF_INET6);
    assert_int_equal(api_ip_family("10.0.0.256"), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cidr__parses_both_families),
        cmocka_unit_test(test_cidr__rejects_bad_text),
        cmocka_unit_test(test_cidr__host_bits_and_network),
        cmocka_unit_test(test_cidr__overlap),
        cmocka_unit_test(test_cidr__nth_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
