#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strmap.h"

static void test_strmap__put_get_remove_across_growth(void **state)
{
    struct strmap m = STRMAP_INIT;
    static char keys[2000][24];

    for (int i = 0; i < 2000; i++) {
        snprintf(keys[i], sizeof(keys[i]), "ns/obj-%d", i);
        assert_int_equal(strmap_put(&m, keys[i], keys[i]), 0);
    }
    assert_int_equal(strmap_size(&m), 2000);
    for (int i = 0; i < 2000; i++)
        assert_ptr_equal(strmap_get(&m, keys[i]), keys[i]);
    assert_null(strmap_get(&m, "ns/obj-2000"));
    for (int i = 0; i < 2000; i += 2)
        assert_ptr_equal(strmap_remove(&m, keys[i]), keys[i]);
    assert_int_equal(strmap_size(&m), 1000);
    assert_null(strmap_get(&m, "ns/obj-0"));
    assert_ptr_equal(strmap_get(&m, "ns/obj-1"), keys[1]);
    assert_null(strmap_remove(&m, "ns/obj-0"));
    strmap_done(&m, NULL);
    assert_null(strmap_get(&m, "ns/obj-1"));
}

static void test_strmap__put_replaces_value_and_done_frees_values(void **state)
{
    struct strmap m = STRMAP_INIT;
    char *a = strdup("first"), *b = strdup("second");

    assert_int_equal(strmap_put(&m, "k", a), 0);
    assert_int_equal(strmap_put(&m, "k", b), 0);
    assert_int_equal(strmap_size(&m), 1);
    assert_ptr_equal(strmap_get(&m, "k"), b);
    free(a);
    strmap_done(&m, free); /* frees b; ASan reports a leak otherwise */
    assert_int_equal(strmap_size(&m), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strmap__put_get_remove_across_growth),
        cmocka_unit_test(test_strmap__put_replaces_value_and_done_frees_values),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
