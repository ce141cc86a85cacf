#include "cmd/nestcp/flags.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strutil.h"

void flags_usage(FILE *out, const char *cmd, const char *args, const char *summary,
                 const struct flag *flags, int nflags)
{
    fprintf(out, "Usage: nestcp %s%s%s [flags]\n\n%s\n\nFlags:\n", cmd, args ? " " : "",
            args ? args : "", summary);
    for (int i = 0; i < nflags; i++) {
        const struct flag *f = &flags[i];
        char left[64];

        if (f->shorthand)
            snprintf(left, sizeof(left), "-%c, --%s%s%s", f->shorthand, f->name, f->arg ? " " : "",
                     f->arg ? f->arg : "");
        else
            snprintf(left, sizeof(left), "    --%s%s%s", f->name, f->arg ? " " : "",
                     f->arg ? f->arg : "");
        fprintf(out, "  %-34s %s", left, f->help);
        switch (f->type) {
        case FLAG_STRING:
            if (*(const char **)f->value && **(const char **)f->value)
                fprintf(out, " (default \"%s\")", *(const char **)f->value);
            break;
        case FLAG_INT:
            fprintf(out, " (default %d)", *(int *)f->value);
            break;
        case FLAG_BOOL:
            if (*(bool *)f->value)
                fprintf(out, " (default true)");
            break;
        case FLAG_LIST:
            break;
        }
        fputc('\n', out);
    }
    fprintf(out, "  %-34s %s\n", "-h, --help", "show this help");
}

static struct flag *find_flag(struct flag *flags, int nflags, const char *name, size_t len)
{
    for (int i = 0; i < nflags; i++)
        if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
            return &flags[i];
    return NULL;
}

static struct flag *find_short(struct flag *flags, int nflags, char c)
{
    for (int i = 0; i < nflags; i++)
        if (flags[i].shorthand == c)
            return &flags[i];
    return NULL;
}

static int set_value(const char *cmd, struct flag *f, const char *val)
{
    switch (f->type) {
    case FLAG_STRING:
        *(const char **)f->value = val;
        return 0;
    case FLAG_INT:
        if (str_to_int(val, -1000000000, 1000000000, (int *)f->value) < 0) {
            fprintf(stderr, "nestcp %s: --%s: \"%s\" is not an integer\n", cmd, f->name, val);
            return -EINVAL;
        }
        return 0;
    case FLAG_BOOL:
        if (strcmp(val, "true") == 0 || strcmp(val, "1") == 0) {
            *(bool *)f->value = true;
        } else if (strcmp(val, "false") == 0 || strcmp(val, "0") == 0) {
            *(bool *)f->value = false;
        } else {
            fprintf(stderr, "nestcp %s: --%s: \"%s\" is not true or false\n", cmd, f->name, val);
            return -EINVAL;
        }
        return 0;
    case FLAG_LIST: {
        struct flag_list *l = f->value;
        const char **n = realloc(l->items, sizeof(*n) * (size_t)(l->n + 1));
        if (!n)
            return -ENOMEM;
        n[l->n++] = val;
        l->items = n;
        return 0;
    }
    }
    return -EINVAL;
}

int flags_parse(const char *cmd, const char *args, const char *summary, struct flag *flags,
                int nflags, int argc, char **argv, char ***ret_rest, int *ret_nrest)
{
    char **rest = calloc((size_t)argc + 1, sizeof(*rest));
    int nrest = 0, r = -EINVAL;

    if (!rest)
        return -ENOMEM;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = NULL;
        struct flag *f;

        if (strcmp(a, "--") == 0) {
            while (++i < argc)
                rest[nrest++] = argv[i];
            break;
        }
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            flags_usage(stdout, cmd, args, summary, flags, nflags);
            r = 1;
            goto out;
        }
        if (a[0] != '-' || a[1] == '\0') {
            rest[nrest++] = argv[i];
            continue;
        }
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - (a + 2)) : strlen(a + 2);
            f = find_flag(flags, nflags, a + 2, len);
            if (eq)
                val = eq + 1;
        } else {
            f = a[2] == '\0' ? find_short(flags, nflags, a[1]) : NULL;
        }
        if (!f) {
            fprintf(stderr, "nestcp %s: unknown flag %s (see 'nestcp %s --help')\n", cmd, a, cmd);
            goto out;
        }
        if (!val) {
            if (f->type == FLAG_BOOL) {
                val = "true";
            } else if (i + 1 < argc) {
                val = argv[++i];
            } else {
                fprintf(stderr, "nestcp %s: flag --%s needs a value\n", cmd, f->name);
                goto out;
            }
        }
        r = set_value(cmd, f, val);
        if (r < 0)
            goto out;
        r = -EINVAL;
    }
    *ret_rest = rest;
    *ret_nrest = nrest;
    return 0;
out:
    free(rest);
    return r;
}

void flag_list_done(struct flag_list *l)
{
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

int flags_copy(const struct flag *flags, int n, struct flag *out, int cap)
{
    if (n > cap)
        return -ENOBUFS;
    memcpy(out, flags, sizeof(*flags) * (size_t)n);
    return n;
}
