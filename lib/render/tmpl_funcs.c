/* Values as the template language sees them, and its built-in functions. */

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/tmpl_internal.h"
#include "lib/util/buf.h"

/* ---- values ---- */

const char *tmpl_type_name(const cJSON *v)
{
    if (!v || cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "bool";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsArray(v))
        return "list";
    return "object";
}

cJSON *tmpl_dup_value(const cJSON *v)
{
    cJSON *d = cJSON_Duplicate(v, true);

    if (d && d->string) {
        cJSON_free(d->string);
        d->string = NULL;
    }
    return d;
}

bool tmpl_truthy(const cJSON *v)
{
    if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v))
        return false;
    if (cJSON_IsNumber(v))
        return v->valuedouble != 0;
    if (cJSON_IsString(v))
        return v->valuestring[0] != '\0';
    if (cJSON_IsArray(v) || cJSON_IsObject(v))
        return v->child != NULL;
    return true;
}

int tmpl_append_text(struct exec *x, int line, const cJSON *v, struct buf *b)
{
    int r;

    if (cJSON_IsString(v)) {
        r = buf_puts(b, v->valuestring);
    } else if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == floor(d) && fabs(d) < 1e15)
            r = buf_printf(b, "%lld", (long long)d);
        else
            r = buf_printf(b, "%.17g", d);
    } else if (cJSON_IsBool(v)) {
        r = buf_puts(b, cJSON_IsTrue(v) ? "true" : "false");
    } else {
        return fail(x, line, "a %s cannot be written as text", tmpl_type_name(v));
    }
    if (r == -ENOBUFS)
        return tmpl_too_large(x, line);
    return r < 0 ? err_set(x->e, r, "out of memory") : 0;
}

int tmpl_text_value(struct exec *x, int line, const cJSON *v, cJSON **ret)
{
    struct buf b;
    int r;

    buf_init(&b, TMPL_MAX_OUTPUT);
    r = tmpl_append_text(x, line, v, &b);
    if (r == 0)
        r = tmpl_give_text(x, &b, ret);
    buf_done(&b);
    return r;
}

int tmpl_give(struct exec *x, cJSON *v, cJSON **ret)
{
    if (!v)
        return err_set(x->e, -ENOMEM, "out of memory");
    *ret = v;
    return 0;
}

int tmpl_give_text(struct exec *x, const struct buf *b, cJSON **ret)
{
    return tmpl_give(x, cJSON_CreateString(b->data ? b->data : ""), ret);
}

static int cmp_keys(const void *pa, const void *pb)
{
    return strcmp((*(const cJSON *const *)pa)->string, (*(const cJSON *const *)pb)->string);
}

const cJSON **tmpl_sorted_members(const cJSON *obj, int *ret_count)
{
    int count = cJSON_GetArraySize(obj), i = 0;
    const cJSON **items = calloc((size_t)count + 1, sizeof(*items));
    const cJSON *it;

    if (!items)
        return NULL;
    cJSON_ArrayForEach(it, obj)
        items[i++] = it;
    qsort(items, (size_t)count, sizeof(*items), cmp_keys);
    *ret_count = count;
    return items;
}

/* Appends a copy of v to list; false when out of memory. */
static bool add_copy(cJSON *list, const cJSON *v)
{
    cJSON *d = tmpl_dup_value(v);

    if (!d || !cJSON_AddItemToArray(list, d)) {
        cJSON_Delete(d);
        return false;
    }
    return true;
}

/* ---- functions ---- */

static int fn_default(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_give(x, tmpl_dup_value(tmpl_truthy(a[1]) ? a[1] : a[0]), ret);
}

static int fn_quote(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_text_value(x, line, a[0], ret);
}

static int fn_json(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    char *s = cJSON_PrintUnformatted(a[0]);
    cJSON *v;

    if (!s)
        return err_set(x->e, -ENOMEM, "out of memory");
    v = cJSON_CreateString(s);
    cJSON_free(s);
    return tmpl_give(x, v, ret);
}

static int join_into(struct exec *x, int line, const cJSON *list, const char *sep, struct buf *b)
{
    const cJSON *it;
    int r;

    cJSON_ArrayForEach(it, list) {
        if (it != list->child && (r = buf_puts(b, sep)) < 0)
            return err_set(x->e, r, "%s:%d: join result too large", x->t->name, line);
        if ((r = tmpl_append_text(x, line, it, b)) < 0)
            return r;
    }
    return 0;
}

static int fn_join(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    struct buf b;
    int r;

    if (!cJSON_IsString(a[0]) || !cJSON_IsArray(a[1]))
        return fail(x, line, "join wants a string and a list, not a %s and a %s",
                    tmpl_type_name(a[0]), tmpl_type_name(a[1]));
    buf_init(&b, TMPL_MAX_OUTPUT);
    r = join_into(x, line, a[1], a[0]->valuestring, &b);
    if (r == 0)
        r = tmpl_give_text(x, &b, ret);
    buf_done(&b);
    return r;
}

/* joinMap SEP KVSEP MAP: "a=1,b=2" with the keys in byte order. */
static int fn_joinmap(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    const cJSON **items;
    struct buf b;
    int count = 0, r = 0;

    if (!cJSON_IsString(a[0]) || !cJSON_IsString(a[1]) || !cJSON_IsObject(a[2]))
        return fail(x, line, "joinMap wants two strings and an object");
    if (!(items = tmpl_sorted_members(a[2], &count)))
        return err_set(x->e, -ENOMEM, "out of memory");
    buf_init(&b, TMPL_MAX_OUTPUT);
    for (int i = 0; i < count && r == 0; i++) {
        if (i > 0)
            r = buf_puts(&b, a[0]->valuestring);
        if (r == 0)
            r = buf_printf(&b, "%s%s", items[i]->string, a[1]->valuestring);
        if (r == 0)
            r = tmpl_append_text(x, line, items[i], &b);
    }
    if (r == 0)
        r = tmpl_give_text(x, &b, ret);
    else if (!x->e || x->e->code == 0)
        r = fail(x, line, "joinMap result too large");
    buf_done(&b);
    free(items);
    return r;
}

/* printf FMT ARGS...: %s, %d and %v take the next argument; %% is a percent sign. */
static int fn_printf(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    struct buf b;
    int next = 1, r = 0;

    if (!cJSON_IsString(a[0]))
        return fail(x, line, "printf wants a format string");
    buf_init(&b, TMPL_MAX_OUTPUT);
    for (const char *p = a[0]->valuestring; *p && r == 0; p++) {
        if (*p != '%') {
            r = buf_append(&b, p, 1);
            continue;
        }
        p++;
        if (*p == '%') {
            r = buf_append(&b, "%", 1);
        } else if (*p == 's' || *p == 'd' || *p == 'v') {
            if (next >= n) {
                r = fail(x, line, "printf: too few arguments for the format");
                break;
            }
            if (*p == 'd' && !cJSON_IsNumber(a[next])) {
                r = fail(x, line, "printf: %%d wants a number, not a %s", tmpl_type_name(a[next]));
                break;
            }
            r = tmpl_append_text(x, line, a[next++], &b);
        } else {
            r = fail(x, line, "printf: unsupported verb %%%c", *p ? *p : ' ');
            break;
        }
    }
    if (r == 0 && next != n)
        r = fail(x, line, "printf: %d arguments left over", n - next);
    if (r == 0)
        r = tmpl_give_text(x, &b, ret);
    buf_done(&b);
    return r;
}

static int fn_eq(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_give(x, cJSON_CreateBool(cJSON_Compare(a[0], a[1], true)), ret);
}

static int fn_ne(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_give(x, cJSON_CreateBool(!cJSON_Compare(a[0], a[1], true)), ret);
}

static int fn_not(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_give(x, cJSON_CreateBool(!tmpl_truthy(a[0])), ret);
}

static int fn_and(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    int i = 0;

    while (i < n - 1 && tmpl_truthy(a[i]))
        i++;
    return tmpl_give(x, tmpl_dup_value(a[i]), ret);
}

static int fn_or(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    int i = 0;

    while (i < n - 1 && !tmpl_truthy(a[i]))
        i++;
    return tmpl_give(x, tmpl_dup_value(a[i]), ret);
}

static int fn_empty(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return tmpl_give(x, cJSON_CreateBool(!tmpl_truthy(a[0])), ret);
}

static int fn_len(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (cJSON_IsString(a[0]))
        return tmpl_give(x, cJSON_CreateNumber((double)strlen(a[0]->valuestring)), ret);
    if (cJSON_IsArray(a[0]) || cJSON_IsObject(a[0]))
        return tmpl_give(x, cJSON_CreateNumber(cJSON_GetArraySize(a[0])), ret);
    return fail(x, line, "len of a %s", tmpl_type_name(a[0]));
}

static int fn_list(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    cJSON *l = cJSON_CreateArray();

    for (int i = 0; l && i < n; i++)
        if (!add_copy(l, a[i])) {
            cJSON_Delete(l);
            l = NULL;
        }
    return tmpl_give(x, l, ret);
}

static int fn_concat(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    cJSON *l = cJSON_CreateArray();
    const cJSON *it;

    for (int i = 0; i < n; i++)
        if (!cJSON_IsArray(a[i])) {
            cJSON_Delete(l);
            return fail(x, line, "concat wants lists, not a %s", tmpl_type_name(a[i]));
        }
    for (int i = 0; l && i < n; i++)
        cJSON_ArrayForEach(it, a[i]) {
            if (!add_copy(l, it)) {
                cJSON_Delete(l);
                return err_set(x->e, -ENOMEM, "out of memory");
            }
        }
    return tmpl_give(x, l, ret);
}

static int fn_haskey(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (!cJSON_IsObject(a[0]) || !cJSON_IsString(a[1]))
        return fail(x, line, "hasKey wants an object and a string");
    return tmpl_give(x, cJSON_CreateBool(cJSON_HasObjectItem(a[0], a[1]->valuestring)), ret);
}

static int fn_index(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    const cJSON *v = NULL;

    if (cJSON_IsObject(a[0]) && cJSON_IsString(a[1]))
        v = cJSON_GetObjectItemCaseSensitive(a[0], a[1]->valuestring);
    else if (cJSON_IsArray(a[0]) && cJSON_IsNumber(a[1]) && a[1]->valuedouble >= 0 &&
             a[1]->valuedouble < INT_MAX)
        v = cJSON_GetArrayItem(a[0], (int)a[1]->valuedouble);
    else
        return fail(x, line, "index of a %s by a %s", tmpl_type_name(a[0]), tmpl_type_name(a[1]));
    if (!v)
        return fail(x, line, "index: no element %s",
                    cJSON_IsString(a[1]) ? a[1]->valuestring : "at that position");
    return tmpl_give(x, tmpl_dup_value(v), ret);
}

static int fn_add(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (!cJSON_IsNumber(a[0]) || !cJSON_IsNumber(a[1]))
        return fail(x, line, "add wants numbers");
    return tmpl_give(x, cJSON_CreateNumber(a[0]->valuedouble + a[1]->valuedouble), ret);
}

static const struct func funcs[] = {
    {"add", 2, 2, fn_add},         {"and", 1, -1, fn_and},       {"concat", 1, -1, fn_concat},
    {"default", 2, 2, fn_default}, {"empty", 1, 1, fn_empty},    {"eq", 2, 2, fn_eq},
    {"hasKey", 2, 2, fn_haskey},   {"index", 2, 2, fn_index},    {"join", 2, 2, fn_join},
    {"joinMap", 3, 3, fn_joinmap}, {"json", 1, 1, fn_json},      {"len", 1, 1, fn_len},
    {"list", 0, -1, fn_list},      {"ne", 2, 2, fn_ne},          {"not", 1, 1, fn_not},
    {"or", 1, -1, fn_or},          {"printf", 1, -1, fn_printf}, {"quote", 1, 1, fn_quote},
};

const struct func *tmpl_func_find(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
        if (strlen(funcs[i].name) == n && memcmp(funcs[i].name, name, n) == 0)
            return &funcs[i];
    return NULL;
}
