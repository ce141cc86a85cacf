#ifndef NESTCP_UTIL_BUF_H
#define NESTCP_UTIL_BUF_H

/*
 * A growable byte buffer with an optional size cap, for anything a peer or a user sends.
 * The contents are always NUL-terminated (the terminator is not counted in len).
 */

#include <stdarg.h>
#include <stddef.h>

struct buf {
    char *data; /* NULL until the first append */
    size_t len;
    size_t cap; /* allocated bytes */
    size_t max; /* 0: unbounded; otherwise appends past max bytes fail with -ENOBUFS */
};

#define BUF_INIT                                                                                   \
    {                                                                                              \
        NULL, 0, 0, 0                                                                              \
    }

void buf_init(struct buf *b, size_t max);
void buf_done(struct buf *b);
void buf_reset(struct buf *b);

/* Makes room for extra more bytes (and the terminator) without changing the contents, so that
 * appends that follow do not grow the buffer. Returns 0, -ENOBUFS, -ENOMEM. */
int buf_reserve(struct buf *b, size_t extra);

/* Appends len bytes. Returns 0, -ENOBUFS when the cap would be passed, -ENOMEM. */
int buf_append(struct buf *b, const void *data, size_t len);
int buf_puts(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(struct buf *b, const char *fmt, va_list ap);

/* Removes the first n bytes (n <= len). */
void buf_consume(struct buf *b, size_t n);

/* Hands the contents to the caller (free() them), in an allocation the size of the text, and
 * leaves b empty. Never NULL unless out of memory: an empty buffer yields "". */
char *buf_steal(struct buf *b);

#endif
