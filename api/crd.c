#include "api/crd.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/quantity.h"

/* Adds v to o under key; on failure frees v and sets *oom. Returns v or NULL. */
static cJSON *put(cJSON *o, const char *key, cJSON *v, bool *oom)
{
    if (!o || !v || !cJSON_AddItemToObject(o, key, v)) {
        cJSON_Delete(v);
        *oom = true;
        return NULL;
    }
    return v;
}

static cJSON *push(cJSON *arr, cJSON *v, bool *oom)
{
    if (!arr || !v || !cJSON_AddItemToArray(arr, v)) {
        cJSON_Delete(v);
        *oom = true;
        return NULL;
    }
    return v;
}

static cJSON *string_array(const char *const *list, bool *oom)
{
    cJSON *arr = cJSON_CreateArray();

    for (; arr && list && *list; list++)
        push(arr, cJSON_CreateString(*list), oom);
    if (!arr)
        *oom = true;
    return arr;
}

static void add_description(cJSON *o, const struct api_schema *s, bool *oom)
{
    if (s->description && *s->description)
        put(o, "description", cJSON_CreateString(s->description), oom);
}

static cJSON *schema(const struct api_schema *s, bool *oom)
{
    cJSON *o = cJSON_CreateObject(), *props, *req = NULL;

    if (!o) {
        *oom = true;
        return NULL;
    }
    add_description(o, s, oom);
    switch (s->type) {
    case API_SCHEMA_OBJECT:
        put(o, "type", cJSON_CreateString("object"), oom);
        props = put(o, "properties", cJSON_CreateObject(), oom);
        for (const struct api_schema *p = s->props; p && p->name; p++) {
            put(props, p->name, schema(p, oom), oom);
            if (p->flags & API_SCHEMA_REQUIRED) {
                if (!req)
                    req = cJSON_CreateArray();
                push(req, cJSON_CreateString(p->name), oom);
            }
        }
        if (req)
            put(o, "required", req, oom);
        if (s->flags & API_SCHEMA_PRESERVE)
            put(o, "x-kubernetes-preserve-unknown-fields", cJSON_CreateTrue(), oom);
        break;
    case API_SCHEMA_MAP:
        put(o, "type", cJSON_CreateString("object"), oom);
        put(o, "additionalProperties", schema(s->items, oom), oom);
        break;
    case API_SCHEMA_ARRAY:
        put(o, "type", cJSON_CreateString("array"), oom);
        put(o, "items", schema(s->items, oom), oom);
        if (s->flags & API_SCHEMA_MIN)
            put(o, "minItems", cJSON_CreateNumber((double)s->min), oom);
        if (s->flags & API_SCHEMA_MAX)
            put(o, "maxItems", cJSON_CreateNumber((double)s->max), oom);
        break;
    case API_SCHEMA_STRING:
        put(o, "type", cJSON_CreateString("string"), oom);
        if (s->flags & API_SCHEMA_DATETIME)
            put(o, "format", cJSON_CreateString("date-time"), oom);
        if (s->enums)
            put(o, "enum", string_array(s->enums, oom), oom);
        if (s->max_length)
            put(o, "maxLength", cJSON_CreateNumber(s->max_length), oom);
        break;
    case API_SCHEMA_INTEGER:
        put(o, "type", cJSON_CreateString("integer"), oom);
        if (s->flags & (API_SCHEMA_INT32 | API_SCHEMA_INT64))
            put(o, "format", cJSON_CreateString((s->flags & API_SCHEMA_INT32) ? "int32" : "int64"),
                oom);
        if (s->flags & API_SCHEMA_MIN)
            put(o, "minimum", cJSON_CreateNumber((double)s->min), oom);
        if (s->flags & API_SCHEMA_MAX)
            put(o, "maximum", cJSON_CreateNumber((double)s->max), oom);
        break;
    case API_SCHEMA_BOOLEAN:
        put(o, "type", cJSON_CreateString("boolean"), oom);
        break;
    case API_SCHEMA_QUANTITY: {
        cJSON *any = put(o, "anyOf", cJSON_CreateArray(), oom);
        cJSON *i = push(any, cJSON_CreateObject(), oom);
        put(i, "type", cJSON_CreateString("integer"), oom);
        i = push(any, cJSON_CreateObject(), oom);
        put(i, "type", cJSON_CreateString("string"), oom);
        put(o, "pattern", cJSON_CreateString(api_quantity_pattern), oom);
        put(o, "x-kubernetes-int-or-string", cJSON_CreateTrue(), oom);
        break;
    }
    case API_SCHEMA_FREEFORM:
        put(o, "type", cJSON_CreateString("object"), oom);
        put(o, "x-kubernetes-preserve-unknown-fields", cJSON_CreateTrue(), oom);
        break;
    }
    if (s->rules) {
        cJSON *rules = put(o, "x-kubernetes-validations", cJSON_CreateArray(), oom);

        for (const struct api_schema_rule *r = s->rules; r->rule; r++) {
            cJSON *v = push(rules, cJSON_CreateObject(), oom);

            put(v, "rule", cJSON_CreateString(r->rule), oom);
            put(v, "message", cJSON_CreateString(r->message), oom);
        }
    }
    if (s->def) {
        cJSON *d = cJSON_Parse(s->def);
        put(o, "default", d, oom);
    }
    return o;
}

cJSON *api_crd_schema(const struct api_schema *s)
{
    bool oom = false;
    cJSON *o = schema(s, &oom);

    if (oom) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

static cJSON *root_schema(const struct api_kind_info *ki, bool *oom)
{
    cJSON *o = cJSON_CreateObject(), *props, *p;

    put(o, "description", cJSON_CreateString(ki->description), oom);
    put(o, "type", cJSON_CreateString("object"), oom);
    props = put(o, "properties", cJSON_CreateObject(), oom);
    p = put(props, "apiVersion", cJSON_CreateObject(), oom);
    put(p, "description",
        cJSON_CreateString("APIVersion defines the versioned schema of this representation of "
                           "an object. Servers should convert recognized schemas to the latest "
                           "internal value, and may reject unrecognized values. More info: "
                           "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                           "api-conventions.md#resources"),
        oom);
    put(p, "type", cJSON_CreateString("string"), oom);
    p = put(props, "kind", cJSON_CreateObject(), oom);
    put(p, "description",
        cJSON_CreateString("Kind is a string value representing the REST resource this object "
                           "represents. Servers may infer this from the endpoint the client "
                           "submits requests to. Cannot be updated. In CamelCase. More info: "
                           "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                           "api-conventions.md#types-kinds"),
        oom);
    put(p, "type", cJSON_CreateString("string"), oom);
    p = put(props, "metadata", cJSON_CreateObject(), oom);
    put(p, "type", cJSON_CreateString("object"), oom);
    put(props, "spec", schema(ki->spec, oom), oom);
    put(props, "status", schema(ki->status, oom), oom);
    if (!o)
        *oom = true;
    return o;
}

static cJSON *version(const struct api_kind_info *ki, const char *name, bool *oom)
{
    cJSON *v = cJSON_CreateObject(), *cols, *sub;

    if (!v) {
        *oom = true;
        return NULL;
    }
    cols = put(v, "additionalPrinterColumns", cJSON_CreateArray(), oom);
    for (const struct api_printer_column *c = ki->columns; c && c->name; c++) {
        cJSON *col = push(cols, cJSON_CreateObject(), oom);
        put(col, "description", cJSON_CreateString(c->description), oom);
        put(col, "jsonPath", cJSON_CreateString(c->json_path), oom);
        put(col, "name", cJSON_CreateString(c->name), oom);
        if (c->priority)
            put(col, "priority", cJSON_CreateNumber(c->priority), oom);
        put(col, "type", cJSON_CreateString(c->type), oom);
    }
    put(v, "name", cJSON_CreateString(name), oom);
    sub = put(v, "schema", cJSON_CreateObject(), oom);
    put(sub, "openAPIV3Schema", root_schema(ki, oom), oom);
    put(v, "served", cJSON_CreateTrue(), oom);
    put(v, "storage", cJSON_CreateBool(strcmp(name, ki->storage_version) == 0), oom);
    sub = put(v, "subresources", cJSON_CreateObject(), oom);
    put(sub, "status", cJSON_CreateObject(), oom);
    return v;
}

int api_crd_build(enum api_kind k, cJSON **ret)
{
    const struct api_kind_info *ki = api_kind_info(k);
    cJSON *crd = cJSON_CreateObject(), *md, *labels, *spec, *names, *versions;
    char name[256];
    bool oom = false;

    if (!crd)
        return -ENOMEM;
    snprintf(name, sizeof(name), "%s.%s", ki->plural, ki->group);
    put(crd, "apiVersion", cJSON_CreateString("apiextensions.k8s.io/v1"), &oom);
    put(crd, "kind", cJSON_CreateString("CustomResourceDefinition"), &oom);
    md = put(crd, "metadata", cJSON_CreateObject(), &oom);
    if (ki->contract_labels) {
        labels = put(md, "labels", cJSON_CreateObject(), &oom);
        for (const struct api_contract_label *l = api_contract_labels; l->key; l++)
            put(labels, l->key, cJSON_CreateString(l->value), &oom);
    }
    put(md, "name", cJSON_CreateString(name), &oom);
    spec = put(crd, "spec", cJSON_CreateObject(), &oom);
    put(spec, "group", cJSON_CreateString(ki->group), &oom);
    names = put(spec, "names", cJSON_CreateObject(), &oom);
    put(names, "categories", string_array(ki->categories, &oom), &oom);
    put(names, "kind", cJSON_CreateString(ki->name), &oom);
    put(names, "listKind", cJSON_CreateString(ki->list_kind), &oom);
    put(names, "plural", cJSON_CreateString(ki->plural), &oom);
    put(names, "shortNames", string_array(ki->short_names, &oom), &oom);
    put(names, "singular", cJSON_CreateString(ki->singular), &oom);
    put(spec, "scope", cJSON_CreateString("Namespaced"), &oom);
    versions = put(spec, "versions", cJSON_CreateArray(), &oom);
    for (const char *const *v = ki->versions; *v; v++)
        push(versions, version(ki, *v, &oom), &oom);
    if (oom) {
        cJSON_Delete(crd);
        return -ENOMEM;
    }
    *ret = crd;
    return 0;
}

void api_crd_file_name(enum api_kind k, char *out, size_t outsz)
{
    const struct api_kind_info *ki = api_kind_info(k);

    snprintf(out, outsz, "%s_%s.yaml", ki->group, ki->plural);
}
