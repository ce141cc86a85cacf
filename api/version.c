#include "api/version.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

static int read_part(const char **p, unsigned *ret)
{
    const char *s = *p;
    unsigned long v = 0;

    if (!isdigit((unsigned char)*s))
        return -EINVAL;
    if (s[0] == '0' && isdigit((unsigned char)s[1]))
        return -EINVAL; /* no leading zeros */
    while (isdigit((unsigned char)*s)) {
        v = v * 10 + (unsigned long)(*s++ - '0');
        if (v > 999999)
            return -EINVAL;
    }
    *ret = (unsigned)v;
    *p = s;
    return 0;
}

static bool ident_ok(const char *s, size_t n)
{
    /* Dot-separated non-empty identifiers of [0-9A-Za-z-]. */
    size_t run = 0;

    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '.') {
            if (run == 0)
                return false;
            run = 0;
        } else if (isalnum((unsigned char)s[i]) || s[i] == '-') {
            run++;
        } else {
            return false;
        }
    }
    return run > 0;
}

int api_version_parse(const char *s, struct api_version *ret)
{
    struct api_version v;
    const char *p = s, *plus;
    size_t prelen = 0;

    if (!s || strlen(s) >= API_VERSION_MAX_LEN)
        return -EINVAL;
    memset(&v, 0, sizeof(v));
    if (*p == 'v')
        p++;
    if (read_part(&p, &v.major) < 0 || *p++ != '.' || read_part(&p, &v.minor) < 0 || *p++ != '.' ||
        read_part(&p, &v.patch) < 0)
        return -EINVAL;
    plus = strchr(p, '+');
    if (*p == '-') {
        p++;
        prelen = plus ? (size_t)(plus - p) : strlen(p);
        if (!ident_ok(p, prelen))
            return -EINVAL;
        memcpy(v.pre, p, prelen);
        v.pre[prelen] = '\0';
        p += prelen;
    }
    if (*p == '+') {
        if (!ident_ok(p + 1, strlen(p + 1)))
            return -EINVAL;
    } else if (*p != '\0') {
        return -EINVAL;
    }
    *ret = v;
    return 0;
}

static int cmp_pre(const char *a, const char *b)
{
    /* No pre-release ranks above any pre-release; otherwise compare identifier by identifier. */
    if (!*a || !*b)
        return !*a - !*b;
    while (*a && *b) {
        size_t la = strcspn(a, "."), lb = strcspn(b, ".");
        bool na = true, nb = true;
        for (size_t i = 0; i < la; i++)
            na = na && isdigit((unsigned char)a[i]);
        for (size_t i = 0; i < lb; i++)
            nb = nb && isdigit((unsigned char)b[i]);
        if (na && nb && la != lb)
            return la < lb ? -1 : 1;
        if (na != nb)
            return na ? -1 : 1;
        int c = strncmp(a, b, la < lb ? la : lb);
        if (c != 0)
            return c < 0 ? -1 : 1;
        if (la != lb)
            return la < lb ? -1 : 1;
        a += la + (a[la] == '.');
        b += lb + (b[lb] == '.');
    }
    return (*a != '\0') - (*b != '\0');
}

int api_version_cmp(const struct api_version *a, const struct api_version *b)
{
    if (a->major != b->major)
        return a->major < b->major ? -1 : 1;
    if (a->minor != b->minor)
        return a->minor < b->minor ? -1 : 1;
    if (a->patch != b->patch)
        return a->patch < b->patch ? -1 : 1;
    return cmp_pre(a->pre, b->pre);
}

void api_version_format(const struct api_version *v, char *out, size_t outsz)
{
    snprintf(out, outsz, "%u.%u.%u%s%s", v->major, v->minor, v->patch, v->pre[0] ? "-" : "",
             v->pre);
}

int api_version_canonical(const char *s, char *out, size_t outsz)
{
    struct api_version v;
    int r = api_version_parse(s, &v);

    if (r < 0)
        return r;
    api_version_format(&v, out, outsz);
    return 0;
}

bool api_version_equal(const char *a, const char *b)
{
    struct api_version va, vb;

    if (!a || !b || api_version_parse(a, &va) < 0 || api_version_parse(b, &vb) < 0)
        return false;
    return api_version_cmp(&va, &vb) == 0;
}
