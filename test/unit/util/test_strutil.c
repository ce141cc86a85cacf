#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lib/util/strutil.h"

/* str_set copies, replaces, clears, and leaves an equal value where it is. */
static void test_strutil__str_set_copies_replaces_and_clears(void **state)
{
    char *s = NULL, *before;
    char text[] = "Stopping";

    assert_int_equal(str_set(&s, text), 0);
    assert_string_equal(s, "Stopping");
    assert_ptr_not_equal(s, text);
    before = s;
    assert_int_equal(str_set(&s, "Stopping"), 0);
    assert_ptr_equal(s, before);
    assert_int_equal(str_set(&s, "Restored"), 0);
    assert_string_equal(s, "Restored");
    assert_int_equal(str_set(&s, NULL), 0);
    assert_null(s);
    assert_int_equal(str_set(&s, NULL), 0);
    assert_null(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strutil__str_set_copies_replaces_and_clears),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
