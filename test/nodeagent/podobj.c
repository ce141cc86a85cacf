#include "test/nodeagent/podobj.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *podobj_vget(const cJSON *obj, va_list ap)
{
    const char *member;

    while (obj && (member = va_arg(ap, const char *)))
        obj = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, member) : NULL;
    return obj;
}

const cJSON *podobj_get(const cJSON *obj, ...)
{
    va_list ap;

    va_start(ap, obj);
    obj = podobj_vget(obj, ap);
    va_end(ap);
    return obj;
}

const char *podobj_str(const cJSON *obj, ...)
{
    va_list ap;

    va_start(ap, obj);
    obj = podobj_vget(obj, ap);
    va_end(ap);
    return cJSON_IsString(obj) ? obj->valuestring : NULL;
}

long podobj_long(const cJSON *obj, const char *member, long def)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, member) : NULL;

    if (!cJSON_IsNumber(v) || v->valuedouble < -1e15 || v->valuedouble > 1e15)
        return def;
    return (long)v->valuedouble;
}

bool podobj_bool(const cJSON *obj, const char *member, bool def)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, member) : NULL;

    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : def;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int podobj_base64_decode(const char *in, char **ret_data, size_t *ret_len)
{
    size_t n = strlen(in), len = 0;
    unsigned acc = 0;
    int bits = 0;
    char *out;

    while (n > 0 && in[n - 1] == '=')
        n--;
    out = malloc(n / 4 * 3 + 3);
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)in[i]);

        if (v < 0) {
            free(out);
            return -EINVAL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[len++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (bits >= 6) { /* one leftover character cannot encode a byte */
        free(out);
        return -EINVAL;
    }
    out[len] = '\0';
    *ret_data = out;
    *ret_len = len;
    return 0;
}

int podobj_data_value(const cJSON *obj, const char *kind, const char *key, char **ret_data,
                      size_t *ret_len)
{
    const char *v;

    if (strcmp(kind, "ConfigMap") == 0) {
        v = podobj_str(obj, "data", key, NULL);
        if (v) {
            char *copy = strdup(v);

            if (!copy)
                return -ENOMEM;
            *ret_data = copy;
            *ret_len = strlen(copy);
            return 0;
        }
        v = podobj_str(obj, "binaryData", key, NULL);
    } else {
        v = podobj_str(obj, "data", key, NULL);
    }
    if (!v)
        return -ENOENT;
    return podobj_base64_decode(v, ret_data, ret_len);
}

bool podobj_selector_matches(const cJSON *selector, const cJSON *labels)
{
    const cJSON *pair;

    if (!cJSON_IsObject(selector) || !selector->child)
        return false;
    cJSON_ArrayForEach(pair, selector) {
        const cJSON *l =
            cJSON_IsObject(labels) ? cJSON_GetObjectItemCaseSensitive(labels, pair->string) : NULL;

        if (!cJSON_IsString(pair) || !cJSON_IsString(l) ||
            strcmp(pair->valuestring, l->valuestring) != 0)
            return false;
    }
    return true;
}

int podobj_named_port(const cJSON *container, const char *name, int *ret_port)
{
    const cJSON *port;

    cJSON_ArrayForEach(port, podobj_get(container, "ports", NULL)) {
        const char *n = podobj_str(port, "name", NULL);
        long p = podobj_long(port, "containerPort", 0);

        if (n && strcmp(n, name) == 0 && p > 0 && p < 65536) {
            *ret_port = (int)p;
            return 0;
        }
    }
    return -ENOENT;
}
