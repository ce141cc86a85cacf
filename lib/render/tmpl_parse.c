/* Parsing a template: the arena its nodes live in, splitting the text into text and actions,
 * the lexer of an action and the parser that builds the node tree. */

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/render/tmpl_internal.h"

/* ---- an arena: every parse allocation lives until tmpl_free ---- */

struct chunk {
    struct chunk *next;
    max_align_t data[];
};

static void *arena_alloc(struct tmpl *t, size_t n)
{
    struct chunk *c = calloc(1, sizeof(*c) + n + 1);

    if (!c)
        return NULL;
    c->next = t->chunks;
    t->chunks = c;
    t->bytes += sizeof(*c) + n + 1;
    return c->data;
}

static char *arena_strndup(struct tmpl *t, const char *s, size_t n)
{
    char *p = arena_alloc(t, n + 1);

    if (p)
        memcpy(p, s, n);
    return p;
}

size_t tmpl_bytes(const struct tmpl *t)
{
    return sizeof(*t) + t->bytes;
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
    /* the items of the whole template, freed when the parse ends */
    struct item *items;
    size_t nitems, capitems, at;
};

/* Records "<file>:<line>: <what>" and returns -EINVAL. */
#define perr(ps, line, ...) tmpl_error((ps)->e, (ps)->t->name, (line), __VA_ARGS__)

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
            ex->fn = tmpl_func_find(t.s, t.n);
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
        ex->fn = tmpl_func_find(ps->tok.s, ps->tok.n);
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
    if (ps->nitems == ps->capitems) {
        size_t cap = ps->capitems ? 2 * ps->capitems : 64;
        struct item *it = reallocarray(ps->items, cap, sizeof(*it));
        if (!it)
            return err_set(ps->e, -ENOMEM, "out of memory");
        ps->items = it;
        ps->capitems = cap;
    }
    ps->items[ps->nitems++] = (struct item){action, s, n, line};
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

/* The rest of the action that opens if or range n (its condition or collection; `missing` is
 * the message when there is none), then its body up to the end or else that stops it. */
static int parse_block(struct parser *ps, int line, const char *missing, struct node *n,
                       enum stop *ret_stop)
{
    int r;

    if (ps->tok.kind == T_EOF)
        return perr(ps, line, "%s", missing);
    if ((r = parse_pipeline(ps, &n->pipe)) < 0 || (r = expect_end_of_action(ps)) < 0)
        return r;
    return parse_list(ps, &n->body, ret_stop);
}

static int parse_if(struct parser *ps, int line, struct node **ret)
{
    struct node *n = new_node(ps, N_IF, line);
    enum stop stop;
    int r;

    if (!n)
        return -ENOMEM;
    if ((r = parse_block(ps, line, "if needs a condition", n, &stop)) < 0)
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
    if ((r = parse_block(ps, line, "range needs a list or object", n, &stop)) < 0)
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
    free(ps.items);
    tmpl_free(t);
    return r;
}
