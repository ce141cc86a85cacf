#ifndef NESTCP_RENDER_TMPL_INTERNAL_H
#define NESTCP_RENDER_TMPL_INTERNAL_H

/*
 * What lib/render/tmpl*.c share; not for other modules.
 *
 *   tmpl_parse.c  the template's arena, splitting the text into text and actions, the lexer and
 *                 the parser that builds the node tree (tmpl_parse, tmpl_free)
 *   tmpl_funcs.c  values as the language sees them (truth, text form, copies) and the built-in
 *                 functions
 *   tmpl.c        running the tree into text with placeholders, parsing that text as YAML and
 *                 putting the values in (tmpl_execute)
 */

#include <stdbool.h>
#include <stddef.h>

#include "lib/render/tmpl.h"
#include "lib/util/buf.h"

/* What a `{{ expr }}` leaves in the text until the YAML is parsed: MARK, a slot number, "__".
 * Letters, digits and underscores keep it one plain scalar wherever it stands. */
#define MARK "__nestcp_v"
#define MARK_LEN (sizeof(MARK) - 1)

#define MAX_VARS 64
#define MAX_ARGS 16

struct chunk;
struct func;
struct expr;
struct node;

struct tmpl {
    char *name;
    struct chunk *chunks; /* the arena: every parse allocation lives until tmpl_free */
    size_t bytes;         /* what the arena holds */
    struct node *root;
};

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

/* ---- execution state ---- */

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
    cJSON *keep;   /* values that variables point into */
    struct {
        const char *name;
        const cJSON *value;
    } vars[MAX_VARS];
    int nvars;
};

/* ---- errors ---- */

/* Records "<name>:<line>: <what>" in e and returns -EINVAL. */
int tmpl_error(struct err *e, const char *name, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same for an error found while running template x. */
#define fail(x, line, ...) tmpl_error((x)->e, (x)->t->name, (line), __VA_ARGS__)

/* Records that the output passed TMPL_MAX_OUTPUT at template line `line`; returns -ENOBUFS. */
int tmpl_too_large(struct exec *x, int line);

/* ---- values (tmpl_funcs.c) ---- */

/* "null", "bool", "number", "string", "list" or "object". */
const char *tmpl_type_name(const cJSON *v);

/* A deep copy of v as a value: without the member name v may have in its object. NULL when out
 * of memory. */
cJSON *tmpl_dup_value(const cJSON *v);

/* False for null, false, 0, "" and an empty list or object; true otherwise. */
bool tmpl_truthy(const cJSON *v);

/* Appends the text form of a scalar to b: strings as they are, integers without a fraction.
 * Returns 0, -EINVAL (not a scalar), -ENOBUFS (b is full), -ENOMEM; x->e says which. */
int tmpl_append_text(struct exec *x, int line, const cJSON *v, struct buf *b);

/* A new string value holding the text form of the scalar v (caller frees). Returns as
 * tmpl_append_text. */
int tmpl_text_value(struct exec *x, int line, const cJSON *v, cJSON **ret);

/* Hands v to *ret, or returns -ENOMEM (with x->e set) when v is NULL. */
int tmpl_give(struct exec *x, cJSON *v, cJSON **ret);

/* tmpl_give of a new string value holding b's text ("" when b is empty). */
int tmpl_give_text(struct exec *x, const struct buf *b, cJSON **ret);

/* The members of object obj sorted by key in byte order, in a new array the caller frees (the
 * members stay borrowed), and their number in *ret_count. NULL when out of memory. */
const cJSON **tmpl_sorted_members(const cJSON *obj, int *ret_count);

/* ---- functions (tmpl_funcs.c) ---- */

typedef int (*func_impl)(struct exec *x, int line, cJSON **args, int n, cJSON **ret);

struct func {
    const char *name;
    int min_args, max_args; /* max -1: any number */
    func_impl impl;
};

/* The built-in function called name (n bytes, not NUL-terminated), or NULL. */
const struct func *tmpl_func_find(const char *name, size_t n);

#endif
