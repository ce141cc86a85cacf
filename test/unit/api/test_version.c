#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "api/version.h"

static int cmp(const char *a, const char *b)
{
    struct api_version va, vb;

    assert_int_equal(api_version_parse(a, &va), 0);
    assert_int_equal(api_version_parse(b, &vb), 0);
    return api_version_cmp(&va, &vb);
}

static void test_version__with_or_without_v(void **state)
{
    struct api_version v;
    char out[API_VERSION_MAX_LEN];

    assert_int_equal(api_version_parse("v1.31.0", &v), 0);
    assert_int_equal(v.major, 1);
    assert_int_equal(v.minor, 31);
    assert_int_equal(v.patch, 0);
    assert_int_equal(api_version_canonical("v1.20.2", out, sizeof(out)), 0);
    assert_string_equal(out, "1.20.2");
    assert_int_equal(api_version_canonical("1.21.0-rc.1+build.5", out, sizeof(out)), 0);
    assert_string_equal(out, "1.21.0-rc.1");
    assert_true(api_version_equal("v1.20.2", "1.20.2"));
    assert_false(api_version_equal("1.20.2", "1.20.3"));
}

static void test_version__rejects_partial_or_odd_forms(void **state)
{
    const char *bad[] = {"",         "1",       "1.20",    "v",       "V1.20.2",
                         "1.20.2.1", "1.20.x",  "01.2.3",  "1.20.2-", "1.20.2-rc..1",
                         "1.20.2+",  " 1.20.2", "1.20.2 ", "vv1.2.3", "1.2.3-rc_1"};
    struct api_version v;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(api_version_parse(bad[i], &v), -EINVAL);
}

static void test_version__orders_by_semver(void **state)
{
    assert_true(cmp("1.20.2", "1.21.0") < 0);
    assert_true(cmp("1.20.10", "1.20.9") > 0);
    assert_true(cmp("v1.20.2", "1.20.2") == 0);
    assert_true(cmp("1.21.0-rc.1", "1.21.0") < 0);
    assert_true(cmp("1.21.0-alpha", "1.21.0-beta") < 0);
    assert_true(cmp("1.21.0-rc.2", "1.21.0-rc.10") < 0);
    assert_true(cmp("1.21.0-1", "1.21.0-alpha") < 0);
    assert_true(cmp("1.21.0-rc", "1.21.0-rc.1") < 0);
    assert_true(cmp("3.4.13", "3.4.3") > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version__with_or_without_v),
        cmocka_unit_test(test_version__rejects_partial_or_odd_forms),
        cmocka_unit_test(test_version__orders_by_semver),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
