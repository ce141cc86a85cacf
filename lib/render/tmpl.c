#include "lib/render/tmpl.h"
#include "lib/util/jsonpatch.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/buf.h"
#include "lib/util/yamlconv.h"

/* What a `{{ expr }}` leaves in the text until the YAML is parsed: MARK, a slot number, "__".
 * Letters, digits and underscores keep it one plain scalar wherever it stands. */
#define MARK "__nestcp_v"
#define MARK_LEN (sizeof(MARK) - 1)

#define MAX_VARS 64
#define MAX_ARGS 16

/* ---- an arena: every parse allocation lives until tmpl_free ---- */

struct chunk {
    struct chunk *next;
    max_align_t data[];
};

struct func;
struct expr;
struct node;

struct tmpl {
    char *name;
    struct chunk *chunks;
    struct node *root;
};

static void *arena_alloc(struct tmpl *t, size_t n)
{
    struct chunk *c = calloc(1, sizeof(*c) + n + 1);

    if (!c)
        return NULL;
    c->next = t->chunks;
    t->chunks = c;
    return c->data;
}

static char *arena_strndup(struct tmpl *t, const char *s, size_t n)
{
    char *p = arena_alloc(t, n + 1);

    if (p)
        memcpy(p, s, n);
    return p;
}

void tmpl_free(struct tmpl *t)
{
    if (!t)
        return;
    while (t->chunks) {
        struct chunk *c = t->chunks;
        t->chunks = c->next;
        free(c);
    }
    free(t->name);
    free(t);
}

/* ---- syntax tree ---- */

enum expr_kind { E_FIELD, E_VAR, E_STRING, E_NUMBER, E_BOOL, E_NULL, E_CALL, E_PIPE };

struct expr {
    enum expr_kind kind;
    int line;
    const char *spelling; /* source text of a field or variable reference, for messages */
    const char *var;      /* E_VAR: the name after '$' ("" for "$" itself) */
    const char **fields;  /* E_FIELD, E_VAR: the field chain */
    int nfields;
    const char *str;       /* E_STRING */
    double num;            /* E_NUMBER */
    bool b;                /* E_BOOL */
    const struct func *fn; /* E_CALL */
    struct expr **args;    /* E_CALL: arguments; E_PIPE: commands */
    int nargs;
};

enum node_kind { N_TEXT, N_OUTPUT, N_IF, N_RANGE, N_ASSIGN };

struct node {
    enum node_kind kind;
    int line;
    struct node *next;
    const char *text; /* N_TEXT */
    size_t len;
    struct expr *pipe;   /* N_OUTPUT, N_IF, N_RANGE, N_ASSIGN */
    struct node *body;   /* N_IF, N_RANGE */
    struct node *alt;    /* N_IF: the else branch */
    const char *key_var; /* N_RANGE: "$i" of "$i, $v :=" (NULL if absent) */
    const char *val_var; /* N_RANGE: "$v"; N_ASSIGN: the variable */
};

/* ---- execution state (declared early: functions need it) ---- */

struct exec {
    const struct tmpl *t;
    struct err *e;
    struct buf out;
    int *linemap; /* template line of each output line */
    size_t nlines, caplines;
    bool at_line_start;
    cJSON *slots; /* the value of each placeholder */
    int *slot_lines;
    const cJSON **slot_values; /* the elements of slots, indexed (a cJSON array is a list) */
    size_t nslots, capslots;
    size_t values; /* values held by the slots, bounded by TMPL_MAX_VALUES */
    cJSON *keep; /* values that variables point into */
    struct {
        const char *name;
        const cJSON *value;
    } vars[MAX_VARS];
    int nvars;
};

static int fail(struct exec *x, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct exec *x, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(x->e, -EINVAL, "%s:%d: %s", x->t->name, line, msg);
}

static const char *type_name(const cJSON *v)
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

/* A deep copy of v as a value: without the member name v may have in its object. */
static cJSON *dup_value(const cJSON *v)
{
    cJSON *d = cJSON_Duplicate(v, true);

    if (d && d->string) {
        cJSON_free(d->string);
        d->string = NULL;
    }
    return d;
}

static bool truthy(const cJSON *v)
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

/* Appends the text form of a scalar: strings as they are, integers without a fraction. */
static int append_text(struct exec *x, int line, const cJSON *v, struct buf *b)
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
        return fail(x, line, "a %s cannot be written as text", type_name(v));
    }
    if (r == -ENOBUFS)
        return err_set(x->e, -ENOBUFS, "%s:%d: output exceeds %d bytes", x->t->name, line,
                       TMPL_MAX_OUTPUT);
    return r < 0 ? err_set(x->e, r, "out of memory") : 0;
}

static int text_value(struct exec *x, int line, const cJSON *v, cJSON **ret)
{
    struct buf b;
    cJSON *s;
    int r;

    buf_init(&b, TMPL_MAX_OUTPUT);
    r = append_text(x, line, v, &b);
    if (r == 0) {
        s = cJSON_CreateString(b.data ? b.data : "");
        if (!s)
            r = err_set(x->e, -ENOMEM, "out of memory");
        else
            *ret = s;
    }
    buf_done(&b);
    return r;
}

/* ---- functions ---- */

typedef int (*func_impl)(struct exec *x, int line, cJSON **args, int n, cJSON **ret);

struct func {
    const char *name;
    int min_args, max_args; /* max -1: any number */
    func_impl impl;
};

static cJSON *oom(struct exec *x)
{
    err_set(x->e, -ENOMEM, "out of memory");
    return NULL;
}

static int give(struct exec *x, cJSON *v, cJSON **ret)
{
    if (!v)
        return err_set(x->e, -ENOMEM, "out of memory");
    *ret = v;
    return 0;
}

static int fn_default(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return give(x, dup_value(truthy(a[1]) ? a[1] : a[0]), ret);
}

static int fn_quote(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return text_value(x, line, a[0], ret);
}

static int fn_json(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    char *s = cJSON_PrintUnformatted(a[0]);
    cJSON *v;

    if (!s)
        return err_set(x->e, -ENOMEM, "out of memory");
    v = cJSON_CreateString(s);
    cJSON_free(s);
    return give(x, v, ret);
}

static int join_into(struct exec *x, int line, const cJSON *list, const char *sep, struct buf *b)
{
    const cJSON *it;
    int r;

    cJSON_ArrayForEach(it, list)
    {
        if (it != list->child && (r = buf_puts(b, sep)) < 0)
            return err_set(x->e, r, "%s:%d: join result too large", x->t->name, line);
        if ((r = append_text(x, line, it, b)) < 0)
            return r;
    }
    return 0;
}

static int fn_join(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    struct buf b;
    int r;

    if (!cJSON_IsString(a[0]) || !cJSON_IsArray(a[1]))
        return fail(x, line, "join wants a string and a list, not a %s and a %s", type_name(a[0]),
                    type_name(a[1]));
    buf_init(&b, TMPL_MAX_OUTPUT);
    r = join_into(x, line, a[1], a[0]->valuestring, &b);
    if (r == 0)
        r = give(x, cJSON_CreateString(b.data ? b.data : ""), ret);
    buf_done(&b);
    return r;
}

static int cmp_keys(const void *pa, const void *pb)
{
    return strcmp((*(const cJSON *const *)pa)->string, (*(const cJSON *const *)pb)->string);
}

/* joinMap SEP KVSEP MAP: "a=1,b=2" with the keys in byte order. */
static int fn_joinmap(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    const cJSON *it;
    const cJSON **items;
    struct buf b;
    int count = 0, r = 0;

    if (!cJSON_IsString(a[0]) || !cJSON_IsString(a[1]) || !cJSON_IsObject(a[2]))
        return fail(x, line, "joinMap wants two strings and an object");
    count = cJSON_GetArraySize(a[2]);
    items = calloc((size_t)count + 1, sizeof(*items));
    if (!items)
        return err_set(x->e, -ENOMEM, "out of memory");
    count = 0;
    cJSON_ArrayForEach(it, a[2]) items[count++] = it;
    qsort(items, (size_t)count, sizeof(*items), cmp_keys);
    buf_init(&b, TMPL_MAX_OUTPUT);
    for (int i = 0; i < count && r == 0; i++) {
        if (i > 0)
            r = buf_puts(&b, a[0]->valuestring);
        if (r == 0)
            r = buf_printf(&b, "%s%s", items[i]->string, a[1]->valuestring);
        if (r == 0)
            r = append_text(x, line, items[i], &b);
    }
    if (r == 0)
        r = give(x, cJSON_CreateString(b.data ? b.data : ""), ret);
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
                r = fail(x, line, "printf: %%d wants a number, not a %s", type_name(a[next]));
                break;
            }
            r = append_text(x, line, a[next++], &b);
        } else {
            r = fail(x, line, "printf: unsupported verb %%%c", *p ? *p : ' ');
            break;
        }
    }
    if (r == 0 && next != n)
        r = fail(x, line, "printf: %d arguments left over", n - next);
    if (r == 0)
        r = give(x, cJSON_CreateString(b.data ? b.data : ""), ret);
    buf_done(&b);
    return r;
}

static int fn_eq(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return give(x, cJSON_CreateBool(cJSON_Compare(a[0], a[1], true)), ret);
}

static int fn_ne(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return give(x, cJSON_CreateBool(!cJSON_Compare(a[0], a[1], true)), ret);
}

static int fn_not(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return give(x, cJSON_CreateBool(!truthy(a[0])), ret);
}

static int fn_and(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    int i = 0;

    while (i < n - 1 && truthy(a[i]))
        i++;
    return give(x, dup_value(a[i]), ret);
}

static int fn_or(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    int i = 0;

    while (i < n - 1 && !truthy(a[i]))
        i++;
    return give(x, dup_value(a[i]), ret);
}

static int fn_empty(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    return give(x, cJSON_CreateBool(!truthy(a[0])), ret);
}

static int fn_len(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (cJSON_IsString(a[0]))
        return give(x, cJSON_CreateNumber((double)strlen(a[0]->valuestring)), ret);
    if (cJSON_IsArray(a[0]) || cJSON_IsObject(a[0]))
        return give(x, cJSON_CreateNumber(cJSON_GetArraySize(a[0])), ret);
    return fail(x, line, "len of a %s", type_name(a[0]));
}

static int fn_list(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    cJSON *l = cJSON_CreateArray();

    for (int i = 0; l && i < n; i++) {
        cJSON *d = dup_value(a[i]);
        if (!d || !cJSON_AddItemToArray(l, d)) {
            cJSON_Delete(d);
            cJSON_Delete(l);
            l = NULL;
        }
    }
    return give(x, l, ret);
}

static int fn_concat(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    cJSON *l = cJSON_CreateArray();
    const cJSON *it;

    for (int i = 0; i < n; i++)
        if (!cJSON_IsArray(a[i])) {
            cJSON_Delete(l);
            return fail(x, line, "concat wants lists, not a %s", type_name(a[i]));
        }
    for (int i = 0; l && i < n; i++)
        cJSON_ArrayForEach(it, a[i])
        {
            cJSON *d = dup_value(it);
            if (!d || !cJSON_AddItemToArray(l, d)) {
                cJSON_Delete(d);
                cJSON_Delete(l);
                return give(x, oom(x), ret);
            }
        }
    return give(x, l, ret);
}

static int fn_haskey(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (!cJSON_IsObject(a[0]) || !cJSON_IsString(a[1]))
        return fail(x, line, "hasKey wants an object and a string");
    return give(x, cJSON_CreateBool(cJSON_HasObjectItem(a[0], a[1]->valuestring)), ret);
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
        return fail(x, line, "index of a %s by a %s", type_name(a[0]), type_name(a[1]));
    if (!v)
        return fail(x, line, "index: no element %s",
                    cJSON_IsString(a[1]) ? a[1]->valuestring : "at that position");
    return give(x, dup_value(v), ret);
}

static int fn_add(struct exec *x, int line, cJSON **a, int n, cJSON **ret)
{
    if (!cJSON_IsNumber(a[0]) || !cJSON_IsNumber(a[1]))
        return fail(x, line, "add wants numbers");
    return give(x, cJSON_CreateNumber(a[0]->valuedouble + a[1]->valuedouble), ret);
}

static const struct func funcs[] = {
    {"add", 2, 2, fn_add},         {"and", 1, -1, fn_and},       {"concat", 1, -1, fn_concat},
    {"default", 2, 2, fn_default}, {"empty", 1, 1, fn_empty},    {"eq", 2, 2, fn_eq},
    {"hasKey", 2, 2, fn_haskey},   {"index", 2, 2, fn_index},    {"join", 2, 2, fn_join},
    {"joinMap", 3, 3, fn_joinmap}, {"json", 1, 1, fn_json},      {"len", 1, 1, fn_len},
    {"list", 0, -1, fn_list},      {"ne", 2, 2, fn_ne},          {"not", 1, 1, fn_not},
    {"or", 1, -1, fn_or},          {"printf", 1, -1, fn_printf}, {"quote", 1, 1, fn_quote},
};

static const struct func *func_find(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
        if (strlen(funcs[i].name) == n && memcmp(funcs[i].name, name, n) == 0)
            return &funcs[i];
    return NULL;
}

/* ---- lexing the inside of an action ---- */

enum tok_kind {
    T_EOF,
    T_FIELD,
    T_VAR,
    T_STRING,
    T_NUMBER,
    T_IDENT,
    T_LPAREN,
    T_RPAREN,
    T_PIPE,
    T_ASSIGN,
    T_COMMA,
    T_BAD
};

struct tok {
    enum tok_kind kind;
    const char *s; /* start in the source */
    size_t n;
};

struct parser {
    struct tmpl *t;
    struct err *e;
    const char *p, *end; /* the action being parsed */
    int line;
    struct tok tok; /* lookahead */
    /* the items of the whole template */
    struct item *items;
    size_t nitems, at;
};

static int perr(struct parser *ps, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(struct parser *ps, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return err_set(ps->e, -EINVAL, "%s:%d: %s", ps->t->name, line, msg);
}

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void lex(struct parser *ps)
{
    const char *p = ps->p;
    struct tok t = {T_EOF, p, 0};

    while (p < ps->end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
        if (*p == '\n')
            ps->line++;
        p++;
    }
    t.s = p;
    if (p >= ps->end) {
        ps->tok = t;
        ps->p = p;
        return;
    }
    if (*p == '.' || *p == '$') {
        const char *q = p;
        t.kind = *p == '.' ? T_FIELD : T_VAR;
        if (*p == '$')
            for (q = p + 1; q < ps->end && ident_char(*q); q++)
                ;
        while (q < ps->end && *q == '.' && q + 1 < ps->end && ident_char(q[1]))
            for (q++; q < ps->end && ident_char(*q); q++)
                ;
        if (q == p) /* "." on its own */
            q = p + 1;
        p = q;
    } else if (*p == '"' || *p == '`') {
        char quote = *p++;
        while (p < ps->end && *p != quote) {
            if (quote == '"' && *p == '\\' && p + 1 < ps->end)
                p++;
            else if (*p == '\n')
                break;
            p++;
        }
        if (p >= ps->end || *p != quote) {
            t.kind = T_BAD;
        } else {
            t.kind = T_STRING;
            p++;
        }
    } else if ((*p >= '0' && *p <= '9') ||
               (*p == '-' && p + 1 < ps->end && p[1] >= '0' && p[1] <= '9')) {
        p++;
        while (p < ps->end && ((*p >= '0' && *p <= '9') || *p == '.'))
            p++;
        t.kind = T_NUMBER;
    } else if (ident_char(*p)) {
        while (p < ps->end && ident_char(*p))
            p++;
        t.kind = T_IDENT;
    } else if (*p == ':' && p + 1 < ps->end && p[1] == '=') {
        p += 2;
        t.kind = T_ASSIGN;
    } else {
        t.kind = *p == '('   ? T_LPAREN
                 : *p == ')' ? T_RPAREN
                 : *p == '|' ? T_PIPE
                 : *p == ',' ? T_COMMA
                             : T_BAD;
        p++;
    }
    t.n = (size_t)(p - t.s);
    ps->tok = t;
    ps->p = p;
}

static bool tok_is(const struct tok *t, enum tok_kind k, const char *word)
{
    return t->kind == k && (!word || (strlen(word) == t->n && memcmp(word, t->s, t->n) == 0));
}

/* Splits ".a.b" or "$x.a" into the variable name and the field chain. */
static int split_ref(struct parser *ps, struct expr *ex, const struct tok *t)
{
    const char *s = t->s, *end = t->s + t->n;
    int count = 0;

    ex->spelling = arena_strndup(ps->t, t->s, t->n);
    if (*s == '$') {
        const char *q = s + 1;
        while (q < end && *q != '.')
            q++;
        ex->var = arena_strndup(ps->t, s + 1, (size_t)(q - s - 1));
        s = q;
    }
    for (const char *q = s; q < end; q++)
        count += *q == '.';
    ex->fields = arena_alloc(ps->t, sizeof(char *) * (size_t)(count + 1));
    if (!ex->spelling || !ex->fields || (t->s[0] == '$' && !ex->var))
        return err_set(ps->e, -ENOMEM, "out of memory");
    while (s < end) {
        const char *q = s + 1;
        while (q < end && *q != '.')
            q++;
        if (q > s + 1) {
            ex->fields[ex->nfields] = arena_strndup(ps->t, s + 1, (size_t)(q - s - 1));
            if (!ex->fields[ex->nfields++])
                return err_set(ps->e, -ENOMEM, "out of memory");
        }
        s = q;
    }
    return 0;
}

static int decode_string(struct parser *ps, const struct tok *t, const char **ret)
{
    char *out = arena_alloc(ps->t, t->n);
    size_t j = 0;

    if (!out)
        return err_set(ps->e, -ENOMEM, "out of memory");
    for (size_t i = 1; i + 1 < t->n; i++) {
        char c = t->s[i];
        if (t->s[0] == '"' && c == '\\') {
            c = t->s[++i];
            switch (c) {
            case 'n':
                c = '\n';
                break;
            case 't':
                c = '\t';
                break;
            case '\\':
            case '"':
                break;
            default:
                return perr(ps, ps->line, "unknown escape \\%c in string", c);
            }
        }
        out[j++] = c;
    }
    out[j] = '\0';
    *ret = out;
    return 0;
}

static struct expr *new_expr(struct parser *ps, enum expr_kind k)
{
    struct expr *ex = arena_alloc(ps->t, sizeof(*ex));

    if (!ex) {
        err_set(ps->e, -ENOMEM, "out of memory");
        return NULL;
    }
    ex->kind = k;
    ex->line = ps->line;
    return ex;
}

static int parse_pipeline(struct parser *ps, struct expr **ret);

static bool starts_operand(const struct tok *t)
{
    return t->kind == T_FIELD || t->kind == T_VAR || t->kind == T_STRING || t->kind == T_NUMBER ||
           t->kind == T_IDENT || t->kind == T_LPAREN;
}

static int parse_operand(struct parser *ps, struct expr **ret)
{
    struct tok t = ps->tok;
    struct expr *ex = NULL;
    char num[64];
    int r;

    switch (t.kind) {
    case T_FIELD:
    case T_VAR:
        if (!(ex = new_expr(ps, t.kind == T_FIELD ? E_FIELD : E_VAR)))
            return -ENOMEM;
        if ((r = split_ref(ps, ex, &t)) < 0)
            return r;
        lex(ps);
        break;
    case T_STRING:
        if (!(ex = new_expr(ps, E_STRING)))
            return -ENOMEM;
        if ((r = decode_string(ps, &t, &ex->str)) < 0)
            return r;
        lex(ps);
        break;
    case T_NUMBER: {
        char *endp;
        if (t.n >= sizeof(num))
            return perr(ps, ps->line, "number too long");
        memcpy(num, t.s, t.n);
        num[t.n] = '\0';
        if (!(ex = new_expr(ps, E_NUMBER)))
            return -ENOMEM;
        ex->num = strtod(num, &endp);
        if (*endp)
            return perr(ps, ps->line, "bad number \"%s\"", num);
        lex(ps);
        break;
    }
    case T_IDENT:
        if (tok_is(&t, T_IDENT, "true") || tok_is(&t, T_IDENT, "false")) {
            if (!(ex = new_expr(ps, E_BOOL)))
                return -ENOMEM;
            ex->b = t.s[0] == 't';
        } else if (tok_is(&t, T_IDENT, "null") || tok_is(&t, T_IDENT, "nil")) {
            if (!(ex = new_expr(ps, E_NULL)))
                return -ENOMEM;
        } else {
            /* A function name used as an argument is a call without arguments. */
            if (!(ex = new_expr(ps, E_CALL)))
                return -ENOMEM;
            ex->fn = func_find(t.s, t.n);
            if (!ex->fn)
                return perr(ps, ps->line, "unknown function \"%.*s\"", (int)t.n, t.s);
            if (ex->fn->min_args > 0)
                return perr(ps, ps->line, "%s needs arguments: write (%s ...)", ex->fn->name,
                            ex->fn->name);
        }
        lex(ps);
        break;
    case T_LPAREN:
        lex(ps);
        if ((r = parse_pipeline(ps, &ex)) < 0)
            return r;
        if (ps->tok.kind != T_RPAREN)
            return perr(ps, ps->line, "missing ')'");
        lex(ps);
        break;
    case T_BAD:
        return perr(ps, ps->line, "bad character or unterminated string at \"%.*s\"",
                    (int)(ps->end - t.s > 20 ? 20 : ps->end - t.s), t.s);
    default:
        return perr(ps, ps->line, "expected a value, found \"%.*s\"", (int)t.n, t.s);
    }
    *ret = ex;
    return 0;
}

/* A command: a function call with its arguments, or a single operand. */
static int parse_command(struct parser *ps, bool piped, struct expr **ret)
{
    struct expr *ex, *args[MAX_ARGS];
    int n = 0, r;

    if (ps->tok.kind == T_IDENT && !tok_is(&ps->tok, T_IDENT, "true") &&
        !tok_is(&ps->tok, T_IDENT, "false") && !tok_is(&ps->tok, T_IDENT, "null") &&
        !tok_is(&ps->tok, T_IDENT, "nil")) {
        if (!(ex = new_expr(ps, E_CALL)))
            return -ENOMEM;
        ex->fn = func_find(ps->tok.s, ps->tok.n);
        if (!ex->fn)
            return perr(ps, ps->line, "unknown function \"%.*s\"", (int)ps->tok.n, ps->tok.s);
        lex(ps);
        while (starts_operand(&ps->tok)) {
            if (n == MAX_ARGS - 1)
                return perr(ps, ps->line, "too many arguments to %s", ex->fn->name);
            if ((r = parse_operand(ps, &args[n++])) < 0)
                return r;
        }
        int have = n + (piped ? 1 : 0);
        if (have < ex->fn->min_args || (ex->fn->max_args >= 0 && have > ex->fn->max_args))
            return perr(ps, ex->line, "%s takes %d%s argument%s, not %d", ex->fn->name,
                        ex->fn->min_args,
                        ex->fn->max_args < 0                  ? " or more"
                        : ex->fn->max_args > ex->fn->min_args ? "+"
                                                              : "",
                        ex->fn->min_args == 1 && ex->fn->max_args == 1 ? "" : "s", have);
        ex->args = arena_alloc(ps->t, sizeof(*ex->args) * (size_t)(n + 1));
        if (!ex->args)
            return err_set(ps->e, -ENOMEM, "out of memory");
        memcpy(ex->args, args, sizeof(*args) * (size_t)n);
        ex->nargs = n;
        *ret = ex;
        return 0;
    }
    if (piped)
        return perr(ps, ps->line, "only a function can follow '|'");
    if ((r = parse_operand(ps, &ex)) < 0)
        return r;
    if (starts_operand(&ps->tok))
        return perr(ps, ps->line, "unexpected \"%.*s\": only functions take arguments",
                    (int)ps->tok.n, ps->tok.s);
    *ret = ex;
    return 0;
}

static int parse_pipeline(struct parser *ps, struct expr **ret)
{
    struct expr *cmds[MAX_ARGS], *ex;
    int n = 0, r;

    for (;;) {
        if (n == MAX_ARGS)
            return perr(ps, ps->line, "pipeline too long");
        if ((r = parse_command(ps, n > 0, &cmds[n])) < 0)
            return r;
        n++;
        if (ps->tok.kind != T_PIPE)
            break;
        lex(ps);
    }
    if (n == 1) {
        *ret = cmds[0];
        return 0;
    }
    if (!(ex = new_expr(ps, E_PIPE)))
        return -ENOMEM;
    ex->args = arena_alloc(ps->t, sizeof(*ex->args) * (size_t)n);
    if (!ex->args)
        return err_set(ps->e, -ENOMEM, "out of memory");
    memcpy(ex->args, cmds, sizeof(*cmds) * (size_t)n);
    ex->nargs = n;
    *ret = ex;
    return 0;
}

/* ---- splitting the template into text and actions ---- */

struct item {
    bool action;
    const char *s;
    size_t n;
    int line;
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int count_lines(const char *s, size_t n)
{
    int c = 0;

    for (size_t i = 0; i < n; i++)
        c += s[i] == '\n';
    return c;
}

static int push_item(struct parser *ps, bool action, const char *s, size_t n, int line)
{
    struct item *it = arena_alloc(ps->t, sizeof(*it) * (ps->nitems + 1));

    if (!it)
        return err_set(ps->e, -ENOMEM, "out of memory");
    if (ps->nitems)
        memcpy(it, ps->items, sizeof(*it) * ps->nitems);
    ps->items = it; /* the old array stays in the arena; templates are small */
    it[ps->nitems++] = (struct item){action, s, n, line};
    return 0;
}

static int scan(struct parser *ps, const char *src, size_t len)
{
    size_t pos = 0;
    int line = 1;
    bool trim_next = false;

    while (pos < len) {
        const char *open = memmem(src + pos, len - pos, "{{", 2);
        size_t text_end = open ? (size_t)(open - src) : len;
        const char *ts = src + pos;
        size_t tn = text_end - pos;
        int tline = line;
        bool trim_left = false, trim_right = false;
        size_t close = 0, cs, ce;

        line += count_lines(ts, tn);
        if (open) {
            size_t a = text_end + 2;
            char quote = 0;
            trim_left = a + 1 < len && src[a] == '-' && is_space(src[a + 1]);
            for (close = a; close + 1 < len; close++) {
                char c = src[close];
                if (quote) {
                    if (c == '\\' && quote == '"')
                        close++;
                    else if (c == quote)
                        quote = 0;
                } else if (c == '"' || c == '`') {
                    quote = c;
                } else if (c == '}' && src[close + 1] == '}') {
                    break;
                }
            }
            if (close + 1 >= len)
                return perr(ps, line, "action is not closed with }}");
            trim_right = close >= a + 2 && src[close - 1] == '-' && is_space(src[close - 2]);
        }
        if (trim_next)
            while (tn > 0 && is_space(*ts)) {
                tline += *ts == '\n';
                ts++;
                tn--;
            }
        if (trim_left)
            while (tn > 0 && is_space(ts[tn - 1]))
                tn--;
        if (tn > 0 && push_item(ps, false, ts, tn, tline) < 0)
            return -ENOMEM;
        if (!open)
            break;
        cs = text_end + 2 + (trim_left ? 1 : 0);
        ce = close - (trim_right ? 1 : 0);
        while (cs < ce && is_space(src[cs]))
            cs++;
        while (ce > cs && is_space(src[ce - 1]))
            ce--;
        if (!(ce - cs >= 4 && src[cs] == '/' && src[cs + 1] == '*' && src[ce - 2] == '*' &&
              src[ce - 1] == '/') &&
            push_item(ps, true, src + cs, ce - cs,
                      line + count_lines(src + text_end, cs - text_end)) < 0)
            return -ENOMEM;
        line += count_lines(src + text_end, close + 2 - text_end);
        trim_next = trim_right;
        pos = close + 2;
    }
    return 0;
}

/* ---- parsing items into a tree ---- */

static void begin_action(struct parser *ps, const struct item *it)
{
    ps->p = it->s;
    ps->end = it->s + it->n;
    ps->line = it->line;
    lex(ps);
}

static struct node *new_node(struct parser *ps, enum node_kind k, int line)
{
    struct node *n = arena_alloc(ps->t, sizeof(*n));

    if (!n) {
        err_set(ps->e, -ENOMEM, "out of memory");
        return NULL;
    }
    n->kind = k;
    n->line = line;
    return n;
}

static int expect_end_of_action(struct parser *ps)
{
    if (ps->tok.kind != T_EOF)
        return perr(ps, ps->line, "unexpected \"%.*s\"", (int)ps->tok.n, ps->tok.s);
    return 0;
}

enum stop { STOP_EOF, STOP_END, STOP_ELSE };

static int parse_list(struct parser *ps, struct node **ret_list, enum stop *ret_stop);

static int parse_if(struct parser *ps, int line, struct node **ret)
{
    struct node *n = new_node(ps, N_IF, line);
    enum stop stop;
    int r;

    if (!n)
        return -ENOMEM;
    if (ps->tok.kind == T_EOF)
        return perr(ps, line, "if needs a condition");
    if ((r = parse_pipeline(ps, &n->pipe)) < 0 || (r = expect_end_of_action(ps)) < 0)
        return r;
    if ((r = parse_list(ps, &n->body, &stop)) < 0)
        return r;
    if (stop == STOP_EOF)
        return perr(ps, line, "if without end");
    if (stop == STOP_ELSE) {
        if (tok_is(&ps->tok, T_IDENT, "if")) { /* else if: an if in the else branch */
            int l = ps->line;
            lex(ps);
            r = parse_if(ps, l, &n->alt);
        } else if ((r = expect_end_of_action(ps)) == 0) {
            r = parse_list(ps, &n->alt, &stop);
            if (r == 0 && stop != STOP_END)
                r = perr(ps, line,
                         stop == STOP_ELSE ? "if with two else branches" : "if without end");
        }
        if (r < 0)
            return r;
    }
    *ret = n;
    return 0;
}

static int parse_var_name(struct parser *ps, const char **ret)
{
    if (ps->tok.kind != T_VAR || ps->tok.n < 2 || memchr(ps->tok.s, '.', ps->tok.n))
        return perr(ps, ps->line, "expected a variable name like $x");
    *ret = arena_strndup(ps->t, ps->tok.s + 1, ps->tok.n - 1);
    if (!*ret)
        return err_set(ps->e, -ENOMEM, "out of memory");
    lex(ps);
    return 0;
}

static int parse_range(struct parser *ps, int line, struct node **ret)
{
    struct node *n = new_node(ps, N_RANGE, line);
    const char *save_p = ps->p;
    struct tok save = ps->tok;
    enum stop stop;
    int r;

    if (!n)
        return -ENOMEM;
    if (ps->tok.kind == T_VAR) {
        const char *a = NULL, *b = NULL;
        if ((r = parse_var_name(ps, &a)) == 0) {
            if (ps->tok.kind == T_COMMA) {
                lex(ps);
                if ((r = parse_var_name(ps, &b)) < 0)
                    return r;
            }
            if (ps->tok.kind == T_ASSIGN) {
                lex(ps);
                n->key_var = b ? a : NULL;
                n->val_var = b ? b : a;
            } else { /* "range $list": a plain operand after all */
                ps->p = save_p;
                ps->tok = save;
            }
        } else {
            err_clear(ps->e);
            ps->p = save_p;
            ps->tok = save;
        }
    }
    if (ps->tok.kind == T_EOF)
        return perr(ps, line, "range needs a list or object");
    if ((r = parse_pipeline(ps, &n->pipe)) < 0 || (r = expect_end_of_action(ps)) < 0)
        return r;
    if ((r = parse_list(ps, &n->body, &stop)) < 0)
        return r;
    if (stop != STOP_END)
        return perr(ps, line, stop == STOP_ELSE ? "range has no else branch" : "range without end");
    *ret = n;
    return 0;
}

static int parse_list(struct parser *ps, struct node **ret_list, enum stop *ret_stop)
{
    struct node *head = NULL, **tail = &head, *n = NULL;
    int r;

    while (ps->at < ps->nitems) {
        const struct item *it = &ps->items[ps->at++];
        if (!it->action) {
            if (!(n = new_node(ps, N_TEXT, it->line)))
                return -ENOMEM;
            n->text = it->s;
            n->len = it->n;
        } else {
            begin_action(ps, it);
            if (tok_is(&ps->tok, T_IDENT, "end") || tok_is(&ps->tok, T_IDENT, "else")) {
                bool is_end = ps->tok.s[1] == 'n';
                lex(ps);
                if (is_end && (r = expect_end_of_action(ps)) < 0)
                    return r;
                if (!ret_stop)
                    return perr(ps, it->line, "%s without if or range", is_end ? "end" : "else");
                *ret_list = head;
                *ret_stop = is_end ? STOP_END : STOP_ELSE;
                return 0;
            }
            if (tok_is(&ps->tok, T_IDENT, "if")) {
                lex(ps);
                r = parse_if(ps, it->line, &n);
            } else if (tok_is(&ps->tok, T_IDENT, "range")) {
                lex(ps);
                r = parse_range(ps, it->line, &n);
            } else if (ps->tok.kind == T_EOF) {
                r = perr(ps, it->line, "empty action");
            } else {
                const char *save_p = ps->p, *var = NULL;
                struct tok save = ps->tok;
                if (ps->tok.kind == T_VAR && !memchr(ps->tok.s, '.', ps->tok.n) && ps->tok.n > 1) {
                    lex(ps);
                    if (ps->tok.kind == T_ASSIGN) {
                        var = arena_strndup(ps->t, save.s + 1, save.n - 1);
                        lex(ps);
                    } else {
                        ps->p = save_p;
                        ps->tok = save;
                    }
                }
                if (!(n = new_node(ps, var ? N_ASSIGN : N_OUTPUT, it->line)))
                    return -ENOMEM;
                n->val_var = var;
                r = parse_pipeline(ps, &n->pipe);
                if (r == 0)
                    r = expect_end_of_action(ps);
            }
            if (r < 0)
                return r;
        }
        *tail = n;
        tail = &n->next;
    }
    if (ret_stop)
        *ret_stop = STOP_EOF;
    *ret_list = head;
    return 0;
}

int tmpl_parse(const char *name, const char *text, size_t len, struct tmpl **ret_tmpl,
               struct err *e)
{
    struct tmpl *t = calloc(1, sizeof(*t));
    struct parser ps = {0};
    const char *mark;
    int r = -ENOMEM;

    if (!t || !(t->name = strdup(name))) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    ps.t = t;
    ps.e = e;
    /* Text nodes point into the source, so the template keeps its own copy. */
    if (!(text = arena_strndup(t, text, len))) {
        r = err_set(e, -ENOMEM, "out of memory");
        goto out;
    }
    mark = memmem(text, len, MARK, MARK_LEN);
    if (mark) {
        r = perr(&ps, 1 + count_lines(text, (size_t)(mark - text)), "the text \"%s\" is reserved",
                 MARK);
        goto out;
    }
    if ((r = scan(&ps, text, len)) < 0 || (r = parse_list(&ps, &t->root, NULL)) < 0)
        goto out;
    *ret_tmpl = t;
    t = NULL;
out:
    tmpl_free(t);
    return r;
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
            return err_set(x->e, r, "%s:%d: output exceeds %d bytes", x->t->name, line,
                           TMPL_MAX_OUTPUT);
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
                        ex->spelling, ex->fields[i], type_name(cur));
        next = cJSON_GetObjectItemCaseSensitive(cur, ex->fields[i]);
        if (!next)
            return fail(x, ex->line, "undefined variable %s", ex->spelling);
        cur = next;
    }
    return give(x, dup_value(cur), ret);
}

static int eval_call(struct exec *x, const struct expr *ex, const cJSON *dot, const cJSON *piped,
                     cJSON **ret)
{
    cJSON *args[MAX_ARGS] = {0};
    int n = 0, r = 0;

    for (; n < ex->nargs && r == 0; n++)
        r = eval(x, ex->args[n], dot, NULL, &args[n]);
    if (r == 0 && piped) {
        args[n] = dup_value(piped);
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
        return give(x, cJSON_CreateString(ex->str), ret);
    case E_NUMBER:
        return give(x, cJSON_CreateNumber(ex->num), ret);
    case E_BOOL:
        return give(x, cJSON_CreateBool(ex->b), ret);
    case E_NULL:
        return give(x, cJSON_CreateNull(), ret);
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
        r = fail(x, n->line, "range over a %s", type_name(coll));
        cJSON_Delete(coll);
        return r;
    }
    if (!(list = keep(x, coll)))
        return err_set(x->e, -ENOMEM, "out of memory");
    if (cJSON_IsObject(list)) { /* objects iterate in key order, like Go templates */
        int count = cJSON_GetArraySize(list);
        const cJSON **items = calloc((size_t)count + 1, sizeof(*items));
        if (!items)
            return err_set(x->e, -ENOMEM, "out of memory");
        cJSON_ArrayForEach(it, list) items[i++] = it;
        qsort(items, (size_t)count, sizeof(*items), cmp_keys);
        for (i = 0, r = 0; i < count && r == 0; i++) {
            const cJSON *key = NULL;
            x->nvars = base;
            if (n->key_var && !(key = keep(x, cJSON_CreateString(items[i]->string))))
                r = err_set(x->e, -ENOMEM, "out of memory");
            if (r == 0 && n->key_var)
                r = var_push(x, n->line, n->key_var, key);
            if (r == 0 && n->val_var)
                r = var_push(x, n->line, n->val_var, items[i]);
            if (r == 0)
                r = run_list(x, n->body, items[i]);
        }
        free(items);
        x->nvars = base;
        return r;
    }
    r = 0;
    cJSON_ArrayForEach(it, list)
    {
        const cJSON *idx = NULL;
        x->nvars = base;
        if (n->key_var && !(idx = keep(x, cJSON_CreateNumber(i))))
            r = err_set(x->e, -ENOMEM, "out of memory");
        if (r == 0 && n->key_var)
            r = var_push(x, n->line, n->key_var, idx);
        if (r == 0 && n->val_var)
            r = var_push(x, n->line, n->val_var, it);
        if (r == 0)
            r = run_list(x, n->body, it);
        if (r < 0)
            break;
        i++;
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
                bool yes = truthy(v);
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
            return text_value(x, x->slot_lines[slot], v, ret);
        return give(x, dup_value(v), ret);
    }
    buf_init(&b, TMPL_MAX_OUTPUT);
    while (*s && r == 0) {
        n = placeholder_at(s, &slot);
        if (n > 0 && slot < nslots) {
            const cJSON *v = x->slot_values[slot];
            if (cJSON_IsArray(v) || cJSON_IsObject(v) || cJSON_IsNull(v))
                r = fail(x, x->slot_lines[slot],
                         "a %s can only be the whole value of a YAML scalar, not part of a text",
                         type_name(v));
            else
                r = append_text(x, x->slot_lines[slot], v, &b);
            s += n;
        } else {
            r = buf_append(&b, s++, 1) < 0
                    ? err_set(x->e, -ENOBUFS, "%s:%d: output exceeds %d bytes", x->t->name,
                              line, TMPL_MAX_OUTPUT)
                    : 0;
        }
    }
    if (r == 0)
        r = give(x, cJSON_CreateString(b.data ? b.data : ""), ret);
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
