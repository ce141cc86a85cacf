#include "api/errors.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTE_MAX 96

void api_errors_init(struct api_errors *errs)
{
    errs->lines = NULL;
    errs->n = 0;
    errs->dropped = 0;
    errs->oom = false;
    errs->reason = NULL;
}

void api_errors_done(struct api_errors *errs)
{
    if (!errs)
        return;
    for (size_t i = 0; i < errs->n; i++)
        free(errs->lines[i]);
    free(errs->lines);
    api_errors_init(errs);
}

static void push(struct api_errors *errs, char *line)
{
    char **grown;

    if (!line) {
        errs->oom = true;
        return;
    }
    if (errs->n >= API_ERRORS_MAX) {
        errs->dropped++;
        free(line);
        return;
    }
    grown = realloc(errs->lines, (errs->n + 1) * sizeof(*grown));
    if (!grown) {
        errs->oom = true;
        free(line);
        return;
    }
    errs->lines = grown;
    errs->lines[errs->n++] = line;
}

static void vadd(struct api_errors *errs, const char *path, const char *value, const char *fmt,
                 va_list ap)
{
    struct buf b;

    buf_init(&b, 0);
    if (path && *path)
        buf_printf(&b, "%s: ", path);
    if (value)
        buf_printf(&b, "%s ", value);
    buf_vprintf(&b, fmt, ap);
    push(errs, buf_steal(&b));
}

void api_errors_add(struct api_errors *errs, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vadd(errs, path, NULL, fmt, ap);
    va_end(ap);
}

void api_errors_quote(const cJSON *v, char *out, size_t outsz)
{
    char *text = NULL;
    size_t len;

    if (outsz == 0)
        return;
    if (v)
        text = cJSON_PrintUnformatted(v);
    if (!text) {
        snprintf(out, outsz, "%s", v ? "?" : "null");
        return;
    }
    len = strlen(text);
    if (len < outsz && len <= QUOTE_MAX) {
        memcpy(out, text, len + 1);
    } else if (outsz > 4) {
        size_t keep = outsz - 4 < QUOTE_MAX ? outsz - 4 : QUOTE_MAX;
        snprintf(out, outsz, "%.*s...", (int)keep, text);
    } else {
        out[0] = '\0';
    }
    free(text);
}

void api_errors_add_value(struct api_errors *errs, const char *path, const cJSON *value,
                          const char *fmt, ...)
{
    char q[QUOTE_MAX + 8];
    va_list ap;

    api_errors_quote(value, q, sizeof(q));
    va_start(ap, fmt);
    vadd(errs, path, q, fmt, ap);
    va_end(ap);
}

void api_errors_add_str(struct api_errors *errs, const char *path, const char *value,
                        const char *fmt, ...)
{
    char q[QUOTE_MAX + 8];
    cJSON *s = cJSON_CreateString(value ? value : "");
    va_list ap;

    if (!s) {
        errs->oom = true;
        return;
    }
    api_errors_quote(s, q, sizeof(q));
    cJSON_Delete(s);
    va_start(ap, fmt);
    vadd(errs, path, q, fmt, ap);
    va_end(ap);
}

bool api_errors_contains(const struct api_errors *errs, const char *s)
{
    for (size_t i = 0; i < errs->n; i++)
        if (strcmp(errs->lines[i], s) == 0)
            return true;
    return false;
}

int api_errors_format(const struct api_errors *errs, struct buf *out)
{
    int r = 0;

    for (size_t i = 0; i < errs->n && r == 0; i++)
        r = buf_printf(out, "%s\n", errs->lines[i]);
    if (r == 0 && errs->dropped)
        r = buf_printf(out, "... and %zu more\n", errs->dropped);
    if (r == 0 && errs->oom)
        r = buf_puts(out, "out of memory while collecting errors\n");
    return r;
}

int api_errors_to_err(const struct api_errors *errs, const char *what, struct err *e)
{
    struct buf b;
    int r;

    if (errs->oom)
        return err_set(e, -ENOMEM, "%s%sout of memory", what ? what : "", what ? ": " : "");
    if (api_errors_count(errs) == 0)
        return 0;
    buf_init(&b, 0);
    r = api_errors_format(errs, &b);
    if (r < 0) {
        buf_done(&b);
        return err_set(e, -ENOMEM, "out of memory");
    }
    if (b.len > 0 && b.data[b.len - 1] == '\n')
        b.data[--b.len] = '\0';
    if (what)
        err_set(e, -EINVAL, "%s: %s", what, b.data);
    else
        err_set(e, -EINVAL, "%s", b.data);
    buf_done(&b);
    return -EINVAL;
}
