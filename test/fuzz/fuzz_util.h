#ifndef NESTCP_TEST_FUZZ_UTIL_H
#define NESTCP_TEST_FUZZ_UTIL_H

/* Helpers shared by the fuzz targets (header only, so each target stays one .c file). */

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stricter than cJSON_Compare: member order counts and numbers compare exactly, so an infinity
 * (YAML's .inf) equals itself, which cJSON_Compare's tolerance test never allows. */
static inline bool fuzz_json_same(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    if ((a->type & 0xff) != (b->type & 0xff))
        return false;
    if ((a->string == NULL) != (b->string == NULL) ||
        (a->string && strcmp(a->string, b->string) != 0))
        return false;
    if (cJSON_IsNumber(a))
        return a->valuedouble == b->valuedouble || (isnan(a->valuedouble) && isnan(b->valuedouble));
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
        const cJSON *x = a->child, *y = b->child;
        for (; x && y; x = x->next, y = y->next)
            if (!fuzz_json_same(x, y))
                return false;
        return x == NULL && y == NULL;
    }
    return true;
}

/* True when some object in v has two members of the same name. cJSON's parser keeps both, but
 * nothing nestcp reads can hold them (the YAML reader refuses them, and so does the API
 * server), and cJSON_Compare cannot compare such objects. */
static inline bool fuzz_json_has_duplicate_keys(const cJSON *v)
{
    for (const cJSON *c = v ? v->child : NULL; c; c = c->next) {
        if (cJSON_IsObject(v))
            for (const cJSON *d = c->next; d; d = d->next)
                if (strcmp(c->string, d->string) == 0)
                    return true;
        if (fuzz_json_has_duplicate_keys(c))
            return true;
    }
    return false;
}

/* Stops the run (a crash libFuzzer records) when ok is false. */
static inline void fuzz_check(bool ok, const char *target, const char *what, const char *detail)
{
    if (!ok) {
        fprintf(stderr, "%s: %s%s%s\n", target, what, detail ? ": " : "", detail ? detail : "");
        abort();
    }
}

#endif
