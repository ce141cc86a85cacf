/* Running a parsed template: the tree becomes text with a placeholder for each value, the text
 * is parsed as YAML, and each placeholder in the parsed documents is replaced by its value. The
 * syntax is parsed in tmpl_parse.c; values and built-in functions are in tmpl_funcs.c. */

#include "lib/render/tmpl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/tmpl_internal.h"
#include "lib/util/buf.h"
#include "lib/util/jsonpatch.h"
#include "lib/util/yamlconv.h"

/* ---- errors ---- */

int tmpl_error(struct err *e, const char *name, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(e, -EINVAL, "%s:%d: %s", name, line, msg);
}

int tmpl_too_large(struct exec *x, int line)
{
    return err_set(x->e, -ENOBUFS, "%s:%d: output exceeds %d bytes", x->t->name, line,
                   TMPL_MAX_OUTPUT);
}

/* ---- execution ---- */

static int note_line(struct exec *x, int line)
{
    if (x->nlines == x->caplines) {
        size_t ncap = x->caplines ? x->caplines * 2 : 256;
        int *n = realloc(x->linemap, ncap * sizeof(*n));
        if (!n)
            return err_set(x->e, -ENOMEM, "out of memory");
        x->linemap = n;
        x->caplines = ncap;
    }
    x->linemap[x->nlines++] = line;
    return 0;
}

/* Appends text that starts at template line `line`, noting the template line where each output
 * line starts (for YAML errors). */
static int emit(struct exec *x, const char *s, size_t n, int line)
{
    int r;

    while (n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl ? (size_t)(nl - s) + 1 : n;
        if (x->at_line_start && (r = note_line(x, line)) < 0)
            return r;
        x->at_line_start = false;
        r = buf_append(&x->out, s, k);
        if (r == -ENOBUFS)
            return tmpl_too_large(x, line);
        if (r < 0)
            return err_set(x->e, r, "out of memory");
        if (nl) {
            x->at_line_start = true;
            line++;
        }
        s += k;
        n -= k;
    }
    return 0;
}

static const cJSON *var_get(const struct exec *x, const char *name)
{
    for (int i = x->nvars - 1; i >= 0; i--)
        if (strcmp(x->vars[i].name, name) == 0)
            return x->vars[i].value;
    return NULL;
}

static int var_push(struct exec *x, int line, const char *name, const cJSON *v)
{
    if (x->nvars == MAX_VARS)
        return fail(x, line, "too many variables");
    x->vars[x->nvars].name = name;
    x->vars[x->nvars++].value = v;
    return 0;
}

/* Keeps v alive until the execution ends and returns it borrowed. */
static const cJSON *keep(struct exec *x, cJSON *v)
{
    if (!cJSON_AddItemToArray(x->keep, v)) {
        cJSON_Delete(v);
        return NULL;
    }
    return v;
}

static int eval(struct exec *x, const struct expr *ex, const cJSON *dot, const cJSON *piped,
                cJSON **ret);

static int eval_ref(struct exec *x, const struct expr *ex, const cJSON *dot, cJSON **ret)
{
    const cJSON *cur = dot;

    if (ex->kind == E_VAR) {
        cur = var_get(x, ex->var);
        if (!cur)
            return fail(x, ex->line, "undefined variable $%s", ex->var);
    }
    for (int i = 0; i < ex->nfields; i++) {
        const cJSON *next;
        if (!cJSON_IsObject(cur))
            return fail(x, ex->line, "undefined variable %s: cannot read \"%s\" of a %s",
                        ex->spelling, ex->fields[i], tmpl_type_name(cur));
        next = cJSON_GetObjectItemCaseSensitive(cur, ex->fields[i]);
        if (!next)
            return fail(x, ex->line, "undefined variable %s", ex->spelling);
        cur = next;
    }
    return tmpl_give(x, tmpl_dup_value(cur), ret);
}

static int eval_call(struct exec *x, const struct expr *ex, const cJSON *dot, const cJSON *piped,
                     cJSON **ret)
{
    cJSON *args[MAX_ARGS] = {0};
    int n = 0, r = 0;

    for (; n < ex->nargs && r == 0; n++)
        r = eval(x, ex->args[n], dot, NULL, &args[n]);
    if (r == 0 && piped) {
        args[n] = tmpl_dup_value(piped);
        if (!args[n++])
            r = err_set(x->e, -ENOMEM, "out of memory");
    }
    if (r == 0)
        r = ex->fn->impl(x, ex->line, args, n, ret);
    for (int i = 0; i < n; i++)
        cJSON_Delete(args[i]);
    return r;
}

static int eval(struct exec *x, const struct expr *ex, const cJSON *dot, const cJSON *piped,
                cJSON **ret)
{
    cJSON *cur = NULL, *next;
    int r;

    switch (ex->kind) {
    case E_FIELD:
    case E_VAR:
        return eval_ref(x, ex, dot, ret);
    case E_STRING:
        return tmpl_give(x, cJSON_CreateString(ex->str), ret);
    case E_NUMBER:
        return tmpl_give(x, cJSON_CreateNumber(ex->num), ret);
    case E_BOOL:
        return tmpl_give(x, cJSON_CreateBool(ex->b), ret);
    case E_NULL:
        return tmpl_give(x, cJSON_CreateNull(), ret);
    case E_CALL:
        return eval_call(x, ex, dot, piped, ret);
    case E_PIPE:
        for (int i = 0; i < ex->nargs; i++) {
            r = eval(x, ex->args[i], dot, cur, &next);
            cJSON_Delete(cur);
            if (r < 0)
                return r;
            cur = next;
        }
        *ret = cur;
        return 0;
    }
    return -EINVAL;
}

static int add_slot(struct exec *x, int line, cJSON *v)
{
    size_t n = x->nslots;
    char mark[48];
    int r;

    if (n >= TMPL_MAX_SUBSTITUTIONS) {
        cJSON_Delete(v);
        return fail(x, line, "more than %d substitutions", TMPL_MAX_SUBSTITUTIONS);
    }
    x->values += jsonpatch_count_values(v, TMPL_MAX_VALUES);
    if (x->values > TMPL_MAX_VALUES) {
        cJSON_Delete(v);
        return fail(x, line, "substitutions hold more than %d values", TMPL_MAX_VALUES);
    }
    if (n == x->capslots) {
        size_t ncap = n ? n * 2 : 64;
        int *l = realloc(x->slot_lines, ncap * sizeof(*l));
        const cJSON **vals;
        if (l)
            x->slot_lines = l;
        vals = l ? realloc(x->slot_values, ncap * sizeof(*vals)) : NULL;
        if (!vals) {
            cJSON_Delete(v);
            return err_set(x->e, -ENOMEM, "out of memory");
        }
        x->slot_values = vals;
        x->capslots = ncap;
    }
    if (!cJSON_AddItemToArray(x->slots, v)) {
        cJSON_Delete(v);
        return err_set(x->e, -ENOMEM, "out of memory");
    }
    x->slot_lines[n] = line;
    x->slot_values[n] = v;
    x->nslots = n + 1;
    r = snprintf(mark, sizeof(mark), MARK "%zu__", n);
    return emit(x, mark, (size_t)r, line);
}

static int run_list(struct exec *x, const struct node *n, const cJSON *dot);

/* One turn of range n: binds its variables to key (owned; NULL when n names no key variable)
 * and value, and runs the body with value as dot. */
static int range_step(struct exec *x, const struct node *n, int base, cJSON *key,
                      const cJSON *value)
{
    const cJSON *kept;
    int r;

    x->nvars = base;
    if (n->key_var) {
        if (!(kept = keep(x, key)))
            return err_set(x->e, -ENOMEM, "out of memory");
        if ((r = var_push(x, n->line, n->key_var, kept)) < 0)
            return r;
    }
    if (n->val_var && (r = var_push(x, n->line, n->val_var, value)) < 0)
        return r;
    return run_list(x, n->body, value);
}

static int run_range(struct exec *x, const struct node *n, const cJSON *dot)
{
    cJSON *coll = NULL;
    const cJSON *list, *it;
    int base = x->nvars, i = 0, r;

    if ((r = eval(x, n->pipe, dot, NULL, &coll)) < 0)
        return r;
    if (cJSON_IsNull(coll)) {
        cJSON_Delete(coll);
        return 0;
    }
    if (!cJSON_IsArray(coll) && !cJSON_IsObject(coll)) {
        r = fail(x, n->line, "range over a %s", tmpl_type_name(coll));
        cJSON_Delete(coll);
        return r;
    }
    if (!(list = keep(x, coll)))
        return err_set(x->e, -ENOMEM, "out of memory");
    if (cJSON_IsObject(list)) { /* objects iterate in key order, like Go templates */
        int count = 0;
        const cJSON **items = tmpl_sorted_members(list, &count);
        if (!items)
            return err_set(x->e, -ENOMEM, "out of memory");
        for (i = 0; i < count && r == 0; i++)
            r = range_step(x, n, base, n->key_var ? cJSON_CreateString(items[i]->string) : NULL,
                           items[i]);
        free(items);
    } else {
        cJSON_ArrayForEach(it, list) {
            r = range_step(x, n, base, n->key_var ? cJSON_CreateNumber(i) : NULL, it);
            if (r < 0)
                break;
            i++;
        }
    }
    x->nvars = base;
    return r;
}

static int run_list(struct exec *x, const struct node *n, const cJSON *dot)
{
    int base = x->nvars, r = 0;
    cJSON *v = NULL;

    for (; n && r == 0; n = n->next) {
        switch (n->kind) {
        case N_TEXT:
            r = emit(x, n->text, n->len, n->line);
            break;
        case N_OUTPUT:
            if ((r = eval(x, n->pipe, dot, NULL, &v)) == 0)
                r = add_slot(x, n->line, v);
            break;
        case N_ASSIGN:
            if ((r = eval(x, n->pipe, dot, NULL, &v)) == 0) {
                const cJSON *kept = keep(x, v);
                r = kept ? var_push(x, n->line, n->val_var, kept)
                         : err_set(x->e, -ENOMEM, "out of memory");
            }
            break;
        case N_IF:
            if ((r = eval(x, n->pipe, dot, NULL, &v)) == 0) {
                bool yes = tmpl_truthy(v);
                cJSON_Delete(v);
                r = run_list(x, yes ? n->body : n->alt, dot);
            }
            break;
        case N_RANGE:
            r = run_range(x, n, dot);
            break;
        }
    }
    x->nvars = base;
    return r;
}

/* ---- substituting placeholders in the parsed YAML ---- */

/* Reads a placeholder at s; returns its length (0 if s does not start one). */
static size_t placeholder_at(const char *s, size_t *ret_slot)
{
    size_t i = MARK_LEN, v = 0;

    if (strncmp(s, MARK, MARK_LEN) != 0)
        return 0;
    if (s[i] < '0' || s[i] > '9')
        return 0;
    while (s[i] >= '0' && s[i] <= '9' && v < SIZE_MAX / 10)
        v = v * 10 + (size_t)(s[i++] - '0');
    if (s[i] != '_' || s[i + 1] != '_')
        return 0;
    *ret_slot = v;
    return i + 2;
}

/* The template line of the first placeholder in s; 0 when s holds none. */
static int placeholder_line(const struct exec *x, const char *s)
{
    size_t slot;

    for (s = strstr(s, MARK); s; s = strstr(s + 1, MARK))
        if (placeholder_at(s, &slot) > 0 && slot < x->nslots)
            return x->slot_lines[slot];
    return 0;
}

/* Returns the value s stands for: the slot's value when s is exactly one placeholder (typed),
 * otherwise the string with each placeholder replaced by its text. *ret is NULL when s holds
 * no placeholder. */
static int substitute(struct exec *x, const char *s, bool want_string, cJSON **ret)
{
    size_t slot, n = placeholder_at(s, &slot), nslots = x->nslots;
    int line = placeholder_line(x, s);
    struct buf b;
    int r = 0;

    *ret = NULL;
    if (!strstr(s, MARK))
        return 0;
    if (n > 0 && s[n] == '\0' && slot < nslots) {
        const cJSON *v = x->slot_values[slot];
        if (want_string && !cJSON_IsString(v))
            return tmpl_text_value(x, x->slot_lines[slot], v, ret);
        return tmpl_give(x, tmpl_dup_value(v), ret);
    }
    buf_init(&b, TMPL_MAX_OUTPUT);
    while (*s && r == 0) {
        n = placeholder_at(s, &slot);
        if (n > 0 && slot < nslots) {
            const cJSON *v = x->slot_values[slot];
            if (cJSON_IsArray(v) || cJSON_IsObject(v) || cJSON_IsNull(v))
                r = fail(x, x->slot_lines[slot],
                         "a %s can only be the whole value of a YAML scalar, not part of a text",
                         tmpl_type_name(v));
            else
                r = tmpl_append_text(x, x->slot_lines[slot], v, &b);
            s += n;
        } else {
            r = buf_append(&b, s++, 1) < 0 ? tmpl_too_large(x, line) : 0;
        }
    }
    if (r == 0)
        r = tmpl_give_text(x, &b, ret);
    buf_done(&b);
    return r;
}

static int subst_tree(struct exec *x, cJSON *node);

static int subst_child(struct exec *x, cJSON *parent, cJSON *child)
{
    cJSON *repl = NULL;
    int r;

    if (cJSON_IsString(child)) {
        if ((r = substitute(x, child->valuestring, false, &repl)) < 0)
            return r;
        if (repl) {
            cJSON_free(repl->string); /* a duplicate keeps its old member name */
            repl->string = NULL;
            if (child->string && !(repl->string = strdup(child->string))) {
                cJSON_Delete(repl);
                return err_set(x->e, -ENOMEM, "out of memory");
            }
            cJSON_ReplaceItemViaPointer(parent, child, repl);
        }
        return 0;
    }
    return subst_tree(x, child);
}

static int subst_tree(struct exec *x, cJSON *node)
{
    cJSON *c, *next;
    int r;

    for (c = node->child; c; c = next) {
        next = c->next;
        if (cJSON_IsObject(node) && strstr(c->string, MARK)) {
            cJSON *key = NULL;
            int line = placeholder_line(x, c->string);
            if ((r = substitute(x, c->string, true, &key)) < 0)
                return r;
            free(c->string);
            c->string = strdup(key->valuestring);
            cJSON_Delete(key);
            if (!c->string)
                return err_set(x->e, -ENOMEM, "out of memory");
            for (cJSON *o = node->child; o; o = o->next)
                if (o != c && strcmp(o->string, c->string) == 0)
                    return fail(x, line, "duplicate key \"%s\" after substitution", c->string);
        }
        if ((r = subst_child(x, node, c)) < 0)
            return r;
    }
    return 0;
}

/* Maps a YAML error in the rendered text ("rendered: line N, column C: what") back to the
 * template line that produced line N. */
static int yaml_error(struct exec *x, const struct err *ye)
{
    const char *p = strstr(ye->msg, "line ");
    unsigned long ln = 0;
    int tline = 0;

    if (p)
        ln = strtoul(p + 5, NULL, 10);
    if (ln >= 1 && ln <= x->nlines)
        tline = x->linemap[ln - 1];
    return err_set(x->e, -EINVAL, "%s:%d: the rendered text is not valid YAML (%s)", x->t->name,
                   tline, p ? p : ye->msg);
}

int tmpl_execute(const struct tmpl *t, const cJSON *data, cJSON **ret_docs, struct err *e)
{
    struct exec x = {.t = t, .e = e, .at_line_start = true};
    struct err ye;
    cJSON *docs = NULL, *c, *next;
    int r;

    buf_init(&x.out, TMPL_MAX_OUTPUT);
    x.slots = cJSON_CreateArray();
    x.keep = cJSON_CreateArray();
    if (!x.slots || !x.keep) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    x.vars[0].name = "";
    x.vars[0].value = data;
    x.nvars = 1;
    if ((r = run_list(&x, t->root, data)) < 0)
        goto out;
    err_clear(&ye);
    r = yamlconv_parse_all(x.out.data ? x.out.data : "", x.out.len, "rendered", &docs, &ye);
    if (r == -EINVAL) {
        r = yaml_error(&x, &ye);
        goto out;
    }
    if (r < 0) {
        r = err_set(e, r, "%s: %s", t->name, ye.msg);
        goto out;
    }
    for (c = docs->child; c; c = next) {
        next = c->next;
        if ((r = subst_child(&x, docs, c)) < 0)
            goto out;
    }
    for (c = docs->child; c; c = next) { /* a document that is only a null value is dropped */
        next = c->next;
        if (cJSON_IsNull(c))
            cJSON_Delete(cJSON_DetachItemViaPointer(docs, c));
    }
    *ret_docs = docs;
    docs = NULL;
    r = 0;
out:
    cJSON_Delete(docs);
    cJSON_Delete(x.slots);
    cJSON_Delete(x.keep);
    free(x.slot_lines);
    free(x.slot_values);
    free(x.linemap);
    buf_done(&x.out);
    return r;
}
