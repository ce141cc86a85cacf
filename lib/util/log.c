#include "lib/util/log.h"

#include "lib/util/buf.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

static enum log_level log_threshold = LOG_LEVEL_INFO;
static enum log_format log_fmt = LOG_FORMAT_TEXT;
static FILE *log_out;

static const char *const level_names[] = {"error", "warn", "info", "debug", "trace"};

void log_setup(enum log_level level, enum log_format format, FILE *out)
{
    log_threshold = level;
    log_fmt = format;
    log_out = out;
}

int log_parse_level(const char *s, enum log_level *ret_level)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcasecmp(s, level_names[i]) == 0 || (s[0] == (char)('0' + i) && !s[1])) {
            *ret_level = (enum log_level)i;
            return 0;
        }
    }
    if (strcasecmp(s, "warning") == 0) {
        *ret_level = LOG_LEVEL_WARN;
        return 0;
    }
    return -EINVAL;
}

int log_parse_format(const char *s, enum log_format *ret_format)
{
    if (strcmp(s, "text") == 0)
        *ret_format = LOG_FORMAT_TEXT;
    else if (strcmp(s, "json") == 0)
        *ret_format = LOG_FORMAT_JSON;
    else
        return -EINVAL;
    return 0;
}

bool log_enabled(enum log_level level)
{
    return level <= log_threshold;
}

static void json_escape(struct buf *b, const char *s, size_t n)
{
    buf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else
            buf_append(b, &s[i], 1);
    }
    buf_puts(b, "\"");
}

/* True when s[i..] starts a `key=` token: [A-Za-z_][A-Za-z0-9_.-]*= */
static size_t key_len_at(const char *s)
{
    size_t i = 0;

    if (!isalpha((unsigned char)s[0]) && s[0] != '_')
        return 0;
    while (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.' || s[i] == '-')
        i++;
    return s[i] == '=' ? i : 0;
}

static void json_kv(struct buf *b, const char *kv)
{
    const char *p = kv;

    while (*p == ' ')
        p++;
    while (*p) {
        size_t kl = key_len_at(p);
        const char *v, *end;

        if (!kl) { /* not logfmt: keep the rest as one field */
            buf_puts(b, ",\"detail\":");
            json_escape(b, p, strlen(p));
            return;
        }
        v = p + kl + 1;
        end = v;
        while (*end && !(end[0] == ' ' && key_len_at(end + 1)))
            end++;
        buf_puts(b, ",");
        json_escape(b, p, kl);
        buf_puts(b, ":");
        if (end - v >= 2 && v[0] == '"' && end[-1] == '"')
            json_escape(b, v + 1, (size_t)(end - v - 2));
        else
            json_escape(b, v, (size_t)(end - v));
        p = *end ? end + 1 : end;
    }
}

char *log_format_line(enum log_format format, double ts, enum log_level level, const char *msg,
                      const char *kv)
{
    struct buf b = BUF_INIT;
    time_t secs = (time_t)ts;
    struct tm tm;
    char tbuf[32];

    gmtime_r(&secs, &tm);
    strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%S", &tm);
    if (format == LOG_FORMAT_JSON) {
        buf_printf(&b, "{\"ts\":\"%s.%03dZ\",\"level\":\"%s\",\"msg\":", tbuf,
                   (int)((ts - (double)secs) * 1000), level_names[level]);
        json_escape(&b, msg, strlen(msg));
        json_kv(&b, kv);
        buf_puts(&b, "}\n");
    } else {
        buf_printf(&b, "%s.%03dZ %-5s %s%s%s\n", tbuf, (int)((ts - (double)secs) * 1000),
                   level_names[level], msg, *kv ? " " : "", kv);
    }
    return buf_steal(&b);
}

void log_emit(enum log_level level, const char *msg, const char *kvfmt, ...)
{
    struct buf kv = BUF_INIT;
    struct timeval tv;
    va_list ap;
    char *line;
    FILE *out = log_out ? log_out : stderr;

    if (!log_enabled(level))
        return;
    va_start(ap, kvfmt);
    buf_vprintf(&kv, kvfmt, ap);
    va_end(ap);
    gettimeofday(&tv, NULL);
    line = log_format_line(log_fmt, (double)tv.tv_sec + tv.tv_usec / 1e6, level, msg,
                           kv.data ? kv.data : "");
    if (line) {
        fputs(line, out);
        fflush(out);
    }
    free(line);
    buf_done(&kv);
}
