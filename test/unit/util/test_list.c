#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/util/list.h"

struct item {
    int v;
    struct list_node node;
};

/* The values of the list, first to last, as digits. */
static void assert_values(struct list_node *head, const char *want)
{
    char have[16] = "";
    size_t i = 0;
    struct list_node *n;

    list_foreach(n, head) {
        assert_true(i < sizeof(have) - 1);
        have[i++] = (char)('0' + list_entry(n, struct item, node)->v);
    }
    have[i] = '\0';
    assert_string_equal(have, want);
}

static void test_list__add_at_both_ends_and_remove(void **state)
{
    struct item it[4] = {{.v = 0}, {.v = 1}, {.v = 2}, {.v = 3}};
    struct list_node head;

    list_init(&head);
    assert_true(list_empty(&head));
    assert_null(list_first(&head));
    for (int i = 0; i < 4; i++)
        list_init(&it[i].node);
    assert_false(list_linked(&it[0].node));
    list_add_tail(&head, &it[1].node);
    list_add_tail(&head, &it[2].node);
    list_add_head(&head, &it[0].node);
    list_add_tail(&head, &it[3].node);
    assert_values(&head, "0123");
    assert_ptr_equal(list_entry(list_first(&head), struct item, node), &it[0]);
    assert_true(list_linked(&it[2].node));
    list_remove(&it[2].node);
    assert_false(list_linked(&it[2].node));
    list_remove(&it[2].node); /* a second remove changes nothing */
    assert_values(&head, "013");
    list_remove(&it[0].node);
    list_remove(&it[3].node);
    assert_values(&head, "1");
    list_remove(&it[1].node);
    assert_true(list_empty(&head));
}

static void test_list__the_safe_loop_may_remove_the_current_node(void **state)
{
    struct item it[5];
    struct list_node head, *n, *tmp;

    list_init(&head);
    for (int i = 0; i < 5; i++) {
        it[i].v = i;
        list_add_tail(&head, &it[i].node);
    }
    list_foreach_safe(n, tmp, &head) {
        if (list_entry(n, struct item, node)->v % 2 == 0)
            list_remove(n);
    }
    assert_values(&head, "13");
    list_foreach_safe(n, tmp, &head)
        list_remove(n);
    assert_true(list_empty(&head));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list__add_at_both_ends_and_remove),
        cmocka_unit_test(test_list__the_safe_loop_may_remove_the_current_node),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
