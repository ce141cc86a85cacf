#include "lib/util/err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void err_clear(struct err *e)
{
    if (!e)
        return;
    e->code = 0;
    e->msg[0] = '\0';
}

int err_set(struct err *e, int code, const char *fmt, ...)
{
    va_list ap;

    if (!e)
        return code;
    e->code = code;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    return code;
}

int err_prefix(struct err *e, const char *fmt, ...)
{
    char prefix[256];
    char old[ERR_MSG_MAX];
    va_list ap;

    if (!e)
        return 0;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, e->msg, sizeof(old));
    size_t n = strlen(prefix);
    if (n >= sizeof(e->msg))
        n = sizeof(e->msg) - 1;
    memcpy(e->msg, prefix, n);
    size_t m = strnlen(old, sizeof(old) - 1);
    if (m > sizeof(e->msg) - 1 - n)
        m = sizeof(e->msg) - 1 - n;
    memcpy(e->msg + n, old, m);
    e->msg[n + m] = '\0';
    return e->code;
}

const char *err_code_name(int code)
{
    switch (code) {
    case 0:
        return "ok";
    case -ENOENT:
        return "not found";
    case -EEXIST:
        return "already exists";
    case -EBUSY:
        return "busy";
    case -ESTALE:
        return "stale";
    case -EINVAL:
        return "invalid";
    case -EACCES:
        return "access denied";
    case -EPERM:
        return "not permitted";
    case -EAGAIN:
        return "try again";
    case -EIO:
        return "input/output error";
    case -ENOMEM:
        return "out of memory";
    case -ETIMEDOUT:
        return "timed out";
    case -ECONNREFUSED:
        return "connection refused";
    case -ENOBUFS:
        return "too large";
    case -ENOTSUP:
        return "not supported";
    case -ECANCELED:
        return "canceled";
    case -ERANGE:
        return "out of range";
    default:
        return "error";
    }
}
