#include "api/quantity.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

const char api_quantity_pattern[] =
    "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";

static const struct {
    const char *suffix;
    double factor;
} suffixes[] = {
    {"", 1},        {"n", 1e-9},    {"u", 1e-6},    {"m", 1e-3},    {"k", 1e3},     {"M", 1e6},
    {"G", 1e9},     {"T", 1e12},    {"P", 1e15},    {"E", 1e18},    {"Ki", 0x1p10}, {"Mi", 0x1p20},
    {"Gi", 0x1p30}, {"Ti", 0x1p40}, {"Pi", 0x1p50}, {"Ei", 0x1p60},
};

/* Reads digits ["." digits] at *p; returns the value, or -1 when there is no digit at all. */
static double read_number(const char **p)
{
    const char *s = *p;
    double v = 0, scale = 0.1;
    bool any = false;

    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (*s++ - '0');
        any = true;
    }
    if (*s == '.') {
        s++;
        while (isdigit((unsigned char)*s)) {
            v += (*s++ - '0') * scale;
            scale /= 10;
            any = true;
        }
    }
    if (!any)
        return -1;
    *p = s;
    return v;
}

int api_quantity_parse(const char *s, double *ret_value)
{
    const char *p = s;
    double sign = 1, v;

    if (!s || !*s || strlen(s) > API_QUANTITY_MAX_LEN)
        return -EINVAL;
    if (*p == '+' || *p == '-')
        sign = *p++ == '-' ? -1 : 1;
    v = read_number(&p);
    if (v < 0)
        return -EINVAL;
    if ((*p == 'e' || *p == 'E') && p[1] != '\0') {
        /* A decimal exponent: e3, E-2 ("E" alone is the exa suffix). */
        const char *q = p + 1;
        double esign = 1, ex;
        if (*q == '+' || *q == '-')
            esign = *q++ == '-' ? -1 : 1;
        ex = read_number(&q);
        if (ex < 0 || *q != '\0' || ex != floor(ex))
            return -EINVAL;
        v *= pow(10, esign * ex);
    } else {
        size_t i;
        for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
            if (strcmp(p, suffixes[i].suffix) == 0)
                break;
        if (i == sizeof(suffixes) / sizeof(suffixes[0]))
            return -EINVAL;
        v *= suffixes[i].factor;
    }
    if (!isfinite(v))
        return -EINVAL;
    *ret_value = sign * v;
    return 0;
}

int api_quantity_from_json(const cJSON *v, double *ret_value)
{
    if (cJSON_IsNumber(v)) {
        if (!isfinite(v->valuedouble))
            return -EINVAL;
        *ret_value = v->valuedouble;
        return 0;
    }
    if (cJSON_IsString(v))
        return api_quantity_parse(v->valuestring, ret_value);
    return -EINVAL;
}
