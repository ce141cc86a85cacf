#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd/nestcp/tree.h"

static void test_tree__draws_branches_and_aligns_the_status_column(void **state)
{
    struct tree *t = tree_new();
    struct buf out = BUF_INIT;
    int root, etcd, sts, kas;

    assert_non_null(t);
    root = tree_add(t, -1, "NestedControlPlane ns/a", "Ready: True");
    etcd = tree_add(t, root, "NestedEtcd a-etcd", "Ready: True");
    sts = tree_add(t, etcd, "StatefulSet a-etcd", "1/1 ready");
    assert_true(tree_add(t, sts, "Pod a-etcd-0", "Ready: True, Running") >= 0);
    assert_true(tree_add(t, etcd, "Secret a-etcd-certs", NULL) >= 0);
    kas = tree_add(t, root, "NestedAPIServer a-apiserver", "Ready: False (Waiting): etcd");
    assert_true(tree_add(t, kas, "StatefulSet -", "not created yet") >= 0);
    assert_int_equal(tree_render(t, &out), 0);
    assert_string_equal(out.data, "OBJECT                          STATUS\n"
                                  "NestedControlPlane ns/a         Ready: True\n"
                                  "├─NestedEtcd a-etcd             Ready: True\n"
                                  "│ ├─StatefulSet a-etcd          1/1 ready\n"
                                  "│ │ └─Pod a-etcd-0              Ready: True, Running\n"
                                  "│ └─Secret a-etcd-certs\n"
                                  "└─NestedAPIServer a-apiserver   Ready: False (Waiting): etcd\n"
                                  "  └─StatefulSet -               not created yet\n");
    buf_done(&out);
    tree_free(t);
}

static void test_tree__several_roots_and_bad_parents(void **state)
{
    struct tree *t = tree_new();
    struct buf out = BUF_INIT;

    assert_int_equal(tree_add(t, -1, "a", "x"), 0);
    assert_int_equal(tree_add(t, -1, "b", "y"), 1);
    assert_int_equal(tree_add(t, 5, "c", NULL), -EINVAL);
    assert_int_equal(tree_add(t, -2, "c", NULL), -EINVAL);
    assert_int_equal(tree_render(t, &out), 0);
    assert_string_equal(out.data, "OBJECT   STATUS\n"
                                  "a        x\n"
                                  "b        y\n");
    buf_done(&out);
    tree_free(t);
    tree_free(NULL);
}

static void test_tree__is_bounded(void **state)
{
    struct tree *t = tree_new();

    for (int i = 0; i < TREE_MAX_NODES; i++)
        assert_int_equal(tree_add(t, i - 1, "n", NULL), i);
    assert_int_equal(tree_add(t, 0, "one too many", NULL), -E2BIG);
    tree_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree__draws_branches_and_aligns_the_status_column),
        cmocka_unit_test(test_tree__several_roots_and_bad_parents),
        cmocka_unit_test(test_tree__is_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
