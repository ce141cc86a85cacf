#include "lib/util/buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void buf_done(struct buf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

int buf_reserve(struct buf *b, size_t extra)
{
    size_t need, ncap;
    char *n;

    if (extra > SIZE_MAX - b->len - 1)
        return -ENOBUFS;
    need = b->len + extra;
    if (b->max && need > b->max)
        return -ENOBUFS;
    if (need + 1 <= b->cap)
        return 0;
    ncap = b->cap ? b->cap : 64;
    while (ncap < need + 1)
        ncap = ncap > SIZE_MAX / 2 ? need + 1 : ncap * 2;
    n = realloc(b->data, ncap);
    if (!n)
        return -ENOMEM;
    b->data = n;
    b->cap = ncap;
    return 0;
}

int buf_append(struct buf *b, const void *data, size_t len)
{
    int r = buf_reserve(b, len);

    if (r < 0)
        return r;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int buf_puts(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

int buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
    va_list cp;
    int n, r;

    va_copy(cp, ap);
    n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    if (n < 0)
        return -EINVAL;
    r = buf_reserve(b, (size_t)n);
    if (r < 0)
        return r;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = buf_vprintf(b, fmt, ap);
    va_end(ap);
    return r;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

char *buf_steal(struct buf *b)
{
    char *s = b->data, *fit;

    if (!s)
        s = strdup("");
    else if (b->cap > b->len + 1 && (fit = realloc(s, b->len + 1)))
        s = fit; /* what is stolen is usually kept: not the room it had to grow */
    b->data = NULL;
    b->len = b->cap = 0;
    return s;
}
