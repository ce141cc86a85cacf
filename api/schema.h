#ifndef NESTCP_API_SCHEMA_H
#define NESTCP_API_SCHEMA_H

/*
 * The schema of each kind, written once as data (api/kinds.c). From it come:
 *   - the OpenAPI v3 schemas in the CRDs (api/crd.c), descriptions included for kubectl explain;
 *   - the type check every parse starts with (api_schema_check): wrong JSON types, enums,
 *     ranges and required fields, each reported with its field path and the bad value;
 *   - the static defaults (api_schema_default), the same ones the apiserver applies from the CRD.
 * Checks that span fields or need context (CIDR overlaps, versions, name lengths) are in
 * api/validate.c.
 */

#include <cjson/cJSON.h>

#include "api/errors.h"

enum api_schema_type {
    API_SCHEMA_OBJECT = 1, /* fixed properties (props) */
    API_SCHEMA_MAP,        /* free keys, each value described by items */
    API_SCHEMA_ARRAY,      /* elements described by items */
    API_SCHEMA_STRING,
    API_SCHEMA_INTEGER,
    API_SCHEMA_BOOLEAN,
    API_SCHEMA_QUANTITY, /* a resource quantity: integer or string (api/quantity.h) */
    API_SCHEMA_FREEFORM, /* any object; unknown fields are kept */
};

#define API_SCHEMA_REQUIRED (1u << 0)
#define API_SCHEMA_INT32 (1u << 1)    /* integer, format int32 */
#define API_SCHEMA_INT64 (1u << 2)    /* integer, format int64 */
#define API_SCHEMA_DATETIME (1u << 3) /* string, format date-time (RFC 3339) */
#define API_SCHEMA_MIN (1u << 4)      /* min applies: minimum, or minItems for arrays */
#define API_SCHEMA_MAX (1u << 5)      /* max applies: maximum, or maxItems for arrays */
#define API_SCHEMA_PRESERVE (1u << 6) /* object keeps fields it does not list */

/* A CEL rule the API server evaluates at admission (x-kubernetes-validations), for checks that
 * need no catalog; the C validation (api/validate.c) makes the same check for `nestcp render`
 * and older objects. A NULL rule ends a list. */
struct api_schema_rule {
    const char *rule;
    const char *message;
};

struct api_schema {
    const char *name; /* property name; a NULL name ends a props list */
    enum api_schema_type type;
    unsigned flags;
    const char *description;
    const char *const *enums; /* NULL-terminated allowed strings, or NULL */
    const char *def;          /* default value as JSON text, or NULL */
    long long min, max;
    unsigned max_length;                 /* strings; 0: no limit */
    const struct api_schema *props;      /* OBJECT */
    const struct api_schema *items;      /* ARRAY, MAP */
    const struct api_schema_rule *rules; /* CEL rules on this value, or NULL */
};

/* Finds a property of an OBJECT schema by name; NULL when it has none. */
const struct api_schema *api_schema_prop(const struct api_schema *s, const char *name);

/* Type-checks v against s. path names v ("spec"). Every problem is appended to errs; the
 * return value is the number of problems found. JSON null counts as absent. Unknown fields
 * are tolerated. */
int api_schema_check(const struct api_schema *s, const cJSON *v, const char *path,
                     struct api_errors *errs);

/* Fills absent properties that have a default, top-down the way the apiserver does: a default
 * object is itself defaulted. v must already pass api_schema_check. Returns 0 or -ENOMEM. */
int api_schema_default(const struct api_schema *s, cJSON *v);

/* Name of a type as the error messages say it: "an integer", "a string", ... */
const char *api_schema_type_phrase(enum api_schema_type t);

#endif
