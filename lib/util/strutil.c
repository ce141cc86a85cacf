#include "lib/util/strutil.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int str_to_int64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
    char *end;
    long long v;

    if (!s || !*s || isspace((unsigned char)*s))
        return -EINVAL;
    errno = 0;
    v = strtoll(s, &end, 10);
    if (*end != '\0')
        return -EINVAL;
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *ret = v;
    return 0;
}

int str_to_int(const char *s, int min, int max, int *ret)
{
    int64_t v;
    int r = str_to_int64(s, min, max, &v);

    if (r == 0)
        *ret = (int)v;
    return r;
}

bool str_has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_has_suffix(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);

    return a >= b && memcmp(s + a - b, suffix, b) == 0;
}

char *str_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

void str_printf(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}

double time_mono(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double time_wall(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void time_format_rfc3339(double t, char out[static 32])
{
    time_t secs = (time_t)t;
    struct tm tm;

    gmtime_r(&secs, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int time_parse_rfc3339(const char *s, double *ret)
{
    struct tm tm = {0};
    const char *p;
    double frac = 0;
    int off = 0;

    p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -EINVAL;
    if (*p == '.') {
        char *end;
        frac = strtod(p, &end);
        p = end;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int hh, mm;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return -EINVAL;
        off = (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return -EINVAL;
    }
    if (*p)
        return -EINVAL;
    *ret = (double)timegm(&tm) - off + frac;
    return 0;
}

int str_set(char **dst, const char *src)
{
    char *d;

    if ((!*dst && !src) || (*dst && src && strcmp(*dst, src) == 0))
        return 0;
    d = src ? strdup(src) : NULL;
    if (src && !d)
        return -ENOMEM;
    free(*dst);
    *dst = d;
    return 0;
}
