#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/nestcp/commands.h"
#include "cmd/nestcp/flags.h"

/* Every word a user types to reach a command, and each flag, is in both scripts. */
static void test_commands__completion_offers_every_command_and_flag(void **state)
{
    static const char *const shells[] = {"bash", "zsh"};
    size_t n;
    const struct command *cmds = commands_all(&n);

    assert_true(n >= 7);
    for (size_t s = 0; s < 2; s++) {
        struct buf out = BUF_INIT;

        assert_int_equal(commands_completion(shells[s], &out), 0);
        assert_non_null(strstr(out.data, "complete -F _nestcp nestcp\n"));
        for (size_t i = 0; i < n; i++) {
            struct flag flags[FLAGS_MAX];
            char quoted[128], word[64];
            int nf = cmds[i].flags ? cmds[i].flags(flags, FLAGS_MAX) : 0;

            /* The command's own branch, and its first word among the top-level words. */
            const char *branch;

            snprintf(quoted, sizeof(quoted), "    \"%s\")\n", cmds[i].name);
            branch = strstr(out.data, quoted);
            if (!branch)
                fail_msg("%s: no branch for %s", shells[s], cmds[i].name);
            snprintf(word, sizeof(word), "%.*s", (int)strcspn(cmds[i].name, " "), cmds[i].name);
            snprintf(quoted, sizeof(quoted), " %s ", word);
            if (!strstr(strstr(out.data, "\"\") opts=\""), quoted) &&
                !strstr(strstr(out.data, "\"\") opts=\""), word))
                fail_msg("%s: %s is not a top-level word", shells[s], word);
            assert_true(nf >= 0);
            for (int f = 0; f < nf; f++) {
                snprintf(quoted, sizeof(quoted), "--%s ", flags[f].name);
                if (!strstr(branch, quoted))
                    fail_msg("%s: %s has no --%s", shells[s], cmds[i].name, flags[f].name);
            }
        }
        /* The second word of `get kubeconfig`, and the shells `completion` takes. */
        assert_non_null(strstr(out.data, "get) opts=\"kubeconfig\""));
        assert_non_null(strstr(out.data, "--help -h bash zsh"));
        /* `nestcp help` takes a command. */
        assert_non_null(strstr(out.data, "--man --help -h manager render get describe"));
        /* Flags that take a file complete file names. */
        assert_non_null(strstr(out.data, "--kubeconfig) COMPREPLY=($(compgen -f"));
        buf_done(&out);
    }
}

static void test_commands__completion_refuses_other_shells(void **state)
{
    struct buf out = BUF_INIT;

    assert_int_equal(commands_completion("fish", &out), -EINVAL);
    buf_done(&out);
}

static void test_commands__man_page_documents_every_command_and_flag(void **state)
{
    struct buf out = BUF_INIT;
    size_t n;
    const struct command *cmds = commands_all(&n);

    assert_int_equal(commands_man(&out), 0);
    assert_true(strncmp(out.data, ".\\\"", 3) == 0);
    assert_non_null(strstr(out.data, "\n.TH NESTCP 1 "));
    assert_non_null(strstr(out.data, "\n.SH SYNOPSIS\n"));
    assert_non_null(strstr(out.data, ".SS \"nestcp get kubeconfig NAME\"\n"));
    assert_non_null(strstr(out.data, ".SS \"nestcp describe NAME\"\n"));
    for (size_t i = 0; i < n; i++) {
        struct flag flags[FLAGS_MAX];
        char want[128];
        int nf = cmds[i].flags ? cmds[i].flags(flags, FLAGS_MAX) : 0;
        char name[64];
        size_t k = 0;

        /* Hyphens are escaped in roff. */
        for (const char *p = cmds[i].name; *p && k + 3 < sizeof(name); p++) {
            if (*p == '-')
                name[k++] = '\\';
            name[k++] = *p;
        }
        name[k] = '\0';
        snprintf(want, sizeof(want), ".SS \"nestcp %s", name);
        if (!strstr(out.data, want))
            fail_msg("no section for %s", cmds[i].name);
        for (int f = 0; f < nf; f++) {
            char fname[96];
            k = 0;
            for (const char *p = flags[f].name; *p && k + 3 < sizeof(fname); p++) {
                if (*p == '-')
                    fname[k++] = '\\';
                fname[k++] = *p;
            }
            fname[k] = '\0';
            snprintf(want, sizeof(want), "\\-\\-%s", fname);
            if (!strstr(out.data, want))
                fail_msg("no entry for --%s of %s", flags[f].name, cmds[i].name);
        }
    }
    /* No line starts with a control character by accident: help text lines that begin with
     * a dot are protected. */
    for (const char *p = out.data; (p = strstr(p, "\n.")); p++) {
        static const char *const requests[] = {".TH ", ".SH ", ".SS ",  ".TP\n", ".B ",
                                               ".I ",  ".RI ", ".PP\n", ".BR "};
        bool known = false;
        for (size_t r = 0; r < sizeof(requests) / sizeof(requests[0]); r++)
            known = known || strncmp(p + 1, requests[r], strlen(requests[r])) == 0;
        if (!known)
            fail_msg("unexpected request: %.20s", p + 1);
    }
    buf_done(&out);
}

static void test_commands__dispatch_and_usage_errors(void **state)
{
    char *none[] = {"nestcp", NULL};
    char *group[] = {"nestcp", "get", NULL};
    char *unknown_resource[] = {"nestcp", "get", "pods", NULL};
    char *unknown[] = {"nestcp", "frobnicate", NULL};
    char *no_name[] = {"nestcp", "get", "kubeconfig", NULL};
    char *two_names[] = {"nestcp", "describe", "a", "b", NULL};
    char *bad_flag[] = {"nestcp", "describe", "a", "--nope", NULL};
    char *bad_shell[] = {"nestcp", "completion", "fish", NULL};
    char *bad_server[] = {"nestcp", "get", "kubeconfig", "a", "--server", "http://x", NULL};

    assert_int_equal(commands_main(1, none), 2);
    assert_int_equal(commands_main(2, group), 2);
    assert_int_equal(commands_main(3, unknown_resource), 2);
    assert_int_equal(commands_main(2, unknown), 2);
    assert_int_equal(commands_main(3, no_name), 2);
    assert_int_equal(commands_main(4, two_names), 2);
    assert_int_equal(commands_main(4, bad_flag), 2);
    assert_int_equal(commands_main(3, bad_shell), 2);
    assert_int_equal(commands_main(5, bad_server), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_commands__completion_offers_every_command_and_flag),
        cmocka_unit_test(test_commands__completion_refuses_other_shells),
        cmocka_unit_test(test_commands__man_page_documents_every_command_and_flag),
        cmocka_unit_test(test_commands__dispatch_and_usage_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
