#include "api/schema.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/quantity.h"
#include "lib/util/strutil.h"

#define PATH_MAX_LEN 512

const struct api_schema *api_schema_prop(const struct api_schema *s, const char *name)
{
    if (!s || s->type != API_SCHEMA_OBJECT || !s->props)
        return NULL;
    for (const struct api_schema *p = s->props; p->name; p++)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

const char *api_schema_type_phrase(enum api_schema_type t)
{
    switch (t) {
    case API_SCHEMA_OBJECT:
    case API_SCHEMA_MAP:
    case API_SCHEMA_FREEFORM:
        return "an object";
    case API_SCHEMA_ARRAY:
        return "an array";
    case API_SCHEMA_STRING:
        return "a string";
    case API_SCHEMA_INTEGER:
        return "an integer";
    case API_SCHEMA_BOOLEAN:
        return "a boolean";
    case API_SCHEMA_QUANTITY:
        return "a valid quantity";
    }
    return "valid";
}

static void child_path(char *out, const char *path, const char *name)
{
    if (path && *path)
        snprintf(out, PATH_MAX_LEN, "%s.%s", path, name);
    else
        snprintf(out, PATH_MAX_LEN, "%s", name);
}

static bool in_enum(const char *const *enums, const char *s)
{
    for (; *enums; enums++)
        if (strcmp(*enums, s) == 0)
            return true;
    return false;
}

static void add_enum_error(struct api_errors *errs, const char *path, const cJSON *v,
                           const char *const *enums)
{
    struct buf b;

    buf_init(&b, 0);
    for (const char *const *e = enums; *e; e++)
        buf_printf(&b, "%s%s", e == enums ? "" : ", ", *e);
    api_errors_add_value(errs, path, v, "is not one of %s", b.data ? b.data : "");
    buf_done(&b);
}

static bool is_integral(const cJSON *v)
{
    double d = v->valuedouble;

    return isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740991.0;
}

static int check_scalar(const struct api_schema *s, const cJSON *v, const char *path,
                        struct api_errors *errs)
{
    double q;

    switch (s->type) {
    case API_SCHEMA_STRING:
        if (!cJSON_IsString(v))
            break;
        if (s->enums && !in_enum(s->enums, v->valuestring)) {
            add_enum_error(errs, path, v, s->enums);
            return 1;
        }
        if (s->max_length && strlen(v->valuestring) > s->max_length) {
            api_errors_add_value(errs, path, v, "is longer than %u characters", s->max_length);
            return 1;
        }
        if ((s->flags & API_SCHEMA_DATETIME) && time_parse_rfc3339(v->valuestring, &q) < 0) {
            api_errors_add_value(errs, path, v, "is not an RFC 3339 date-time");
            return 1;
        }
        return 0;
    case API_SCHEMA_BOOLEAN:
        if (!cJSON_IsBool(v))
            break;
        return 0;
    case API_SCHEMA_INTEGER: {
        double lo = (s->flags & API_SCHEMA_INT32) ? -2147483648.0 : -9007199254740991.0;
        double hi = (s->flags & API_SCHEMA_INT32) ? 2147483647.0 : 9007199254740991.0;
        if (!cJSON_IsNumber(v) || !is_integral(v))
            break;
        if (v->valuedouble < lo || v->valuedouble > hi) {
            api_errors_add_value(errs, path, v, "is out of range for a %s integer",
                                 (s->flags & API_SCHEMA_INT32) ? "32-bit" : "64-bit");
            return 1;
        }
        if ((s->flags & API_SCHEMA_MIN) && v->valuedouble < (double)s->min) {
            api_errors_add_value(errs, path, v, "is less than the minimum %lld", s->min);
            return 1;
        }
        if ((s->flags & API_SCHEMA_MAX) && v->valuedouble > (double)s->max) {
            api_errors_add_value(errs, path, v, "is more than the maximum %lld", s->max);
            return 1;
        }
        return 0;
    }
    case API_SCHEMA_QUANTITY:
        if (api_quantity_from_json(v, &q) < 0)
            break;
        return 0;
    default:
        break;
    }
    api_errors_add_value(errs, path, v, "is not %s", api_schema_type_phrase(s->type));
    return 1;
}

int api_schema_check(const struct api_schema *s, const cJSON *v, const char *path,
                     struct api_errors *errs)
{
    char sub[PATH_MAX_LEN];
    const cJSON *c;
    int n = 0, i = 0;

    if (!v || cJSON_IsNull(v))
        return 0;
    switch (s->type) {
    case API_SCHEMA_OBJECT:
        if (!cJSON_IsObject(v)) {
            api_errors_add_value(errs, path, v, "is not an object");
            return 1;
        }
        for (const struct api_schema *p = s->props; p && p->name; p++) {
            const cJSON *pv = cJSON_GetObjectItemCaseSensitive(v, p->name);
            child_path(sub, path, p->name);
            if ((!pv || cJSON_IsNull(pv)) && (p->flags & API_SCHEMA_REQUIRED) && !p->def) {
                api_errors_add(errs, sub, "is required");
                n++;
                continue;
            }
            n += api_schema_check(p, pv, sub, errs);
        }
        return n;
    case API_SCHEMA_FREEFORM:
        if (!cJSON_IsObject(v)) {
            api_errors_add_value(errs, path, v, "is not an object");
            return 1;
        }
        return 0;
    case API_SCHEMA_MAP:
        if (!cJSON_IsObject(v)) {
            api_errors_add_value(errs, path, v, "is not an object");
            return 1;
        }
        cJSON_ArrayForEach(c, v) {
            snprintf(sub, sizeof(sub), "%s[%s]", path, c->string);
            if (cJSON_IsNull(c)) {
                api_errors_add_value(errs, sub, c, "is not %s",
                                     api_schema_type_phrase(s->items->type));
                n++;
                continue;
            }
            n += api_schema_check(s->items, c, sub, errs);
        }
        return n;
    case API_SCHEMA_ARRAY:
        if (!cJSON_IsArray(v)) {
            api_errors_add_value(errs, path, v, "is not an array");
            return 1;
        }
        if ((s->flags & API_SCHEMA_MAX) && cJSON_GetArraySize(v) > s->max) {
            api_errors_add(errs, path, "has %d items, more than the maximum %lld",
                           cJSON_GetArraySize(v), s->max);
            n++;
        }
        if ((s->flags & API_SCHEMA_MIN) && cJSON_GetArraySize(v) < s->min) {
            api_errors_add(errs, path, "has %d items, fewer than the minimum %lld",
                           cJSON_GetArraySize(v), s->min);
            n++;
        }
        cJSON_ArrayForEach(c, v) {
            snprintf(sub, sizeof(sub), "%s[%d]", path, i++);
            if (cJSON_IsNull(c)) {
                api_errors_add_value(errs, sub, c, "is not %s",
                                     api_schema_type_phrase(s->items->type));
                n++;
                continue;
            }
            n += api_schema_check(s->items, c, sub, errs);
        }
        return n;
    default:
        return check_scalar(s, v, path, errs);
    }
}

int api_schema_default(const struct api_schema *s, cJSON *v)
{
    cJSON *c;

    if (!v)
        return 0;
    switch (s->type) {
    case API_SCHEMA_OBJECT:
        if (!cJSON_IsObject(v))
            return 0;
        for (const struct api_schema *p = s->props; p && p->name; p++) {
            cJSON *pv = cJSON_GetObjectItemCaseSensitive(v, p->name);
            if ((!pv || cJSON_IsNull(pv)) && p->def) {
                cJSON *d = cJSON_Parse(p->def);
                if (!d)
                    return -ENOMEM;
                if (pv)
                    cJSON_ReplaceItemInObjectCaseSensitive(v, p->name, d);
                else if (!cJSON_AddItemToObject(v, p->name, d)) {
                    cJSON_Delete(d);
                    return -ENOMEM;
                }
                pv = d;
            }
            if (pv && api_schema_default(p, pv) < 0)
                return -ENOMEM;
        }
        return 0;
    case API_SCHEMA_ARRAY:
    case API_SCHEMA_MAP:
        if (!cJSON_IsArray(v) && !cJSON_IsObject(v))
            return 0;
        cJSON_ArrayForEach(c, v) {
            if (api_schema_default(s->items, c) < 0)
                return -ENOMEM;
        }
        return 0;
    default:
        return 0;
    }
}
