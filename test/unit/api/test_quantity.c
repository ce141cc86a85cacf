#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>

#include "api/quantity.h"

static double q(const char *s)
{
    double v = -12345;

    assert_int_equal(api_quantity_parse(s, &v), 0);
    return v;
}

static void test_quantity__parses_kubernetes_forms(void **state)
{
    assert_true(q("1") == 1);
    assert_true(q("500m") == 0.5);
    assert_true(q("1.5Gi") == 1.5 * 1073741824.0);
    assert_true(q("128974848") == 128974848);
    assert_true(q("129e6") == 129e6);
    assert_true(q("129M") == 129e6);
    assert_true(q("123Mi") == 123 * 1048576.0);
    assert_true(q("1E") == 1e18);
    assert_true(q(".5") == 0.5);
    assert_true(q("2.") == 2);
    assert_true(q("-1Ki") == -1024);
    assert_true(q("+3k") == 3000);
    assert_true(fabs(q("100u") - 1e-4) < 1e-12);
}

static void test_quantity__rejects_bad_syntax(void **state)
{
    const char *bad[] = {"",
                         "Gi",
                         "1 Gi",
                         "1.5.0",
                         "1Qi",
                         "1gi",
                         "1e",
                         "1e1.5",
                         "--1",
                         "1KiB",
                         "0x10",
                         ".",
                         "1e+",
                         "123456789012345678901234567890123456789"
                         "01234567890123456789012345678"};
    double v;

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(api_quantity_parse(bad[i], &v), -EINVAL);
}

static void test_quantity__json_numbers_and_strings(void **state)
{
    cJSON *n = cJSON_CreateNumber(2), *s = cJSON_CreateString("250m"), *b = cJSON_CreateTrue();
    double v;

    assert_int_equal(api_quantity_from_json(n, &v), 0);
    assert_true(v == 2);
    assert_int_equal(api_quantity_from_json(s, &v), 0);
    assert_true(v == 0.25);
    assert_int_equal(api_quantity_from_json(b, &v), -EINVAL);
    cJSON_Delete(n);
    cJSON_Delete(s);
    cJSON_Delete(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quantity__parses_kubernetes_forms),
        cmocka_unit_test(test_quantity__rejects_bad_syntax),
        cmocka_unit_test(test_quantity__json_numbers_and_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
