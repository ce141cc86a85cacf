#ifndef NESTCP_CMD_FLAGS_H
#define NESTCP_CMD_FLAGS_H

/*
 * GNU-style long flags for the subcommands: `--name value`, `--name=value`, `--bool`,
 * `--bool=false`; repeatable string flags collect every value. Each flag has a default and help
 * text, printed by flags_usage().
 */

#include <stdbool.h>
#include <stdio.h>

enum flag_type {
    FLAG_STRING, /* const char ** */
    FLAG_INT,    /* int * */
    FLAG_BOOL,   /* bool * */
    FLAG_LIST,   /* struct flag_list * (repeatable) */
};

struct flag_list {
    const char **items;
    int n;
};

struct flag {
    const char *name;  /* without the leading dashes */
    char shorthand;    /* 0 for none */
    enum flag_type type;
    void *value;       /* holds the default on entry */
    const char *arg;   /* the placeholder in help text ("DIR"), NULL for bools */
    const char *help;
};

/* Parses argv[1..] (argv[0] is the subcommand). Positional arguments are returned in
 * ret_rest (pointing into argv) and ret_nrest. Returns 0, 1 when --help was given (usage has
 * been printed to stdout), or -EINVAL after printing a message to stderr. */
int flags_parse(const char *cmd, const char *summary, struct flag *flags, int nflags, int argc,
                char **argv, char ***ret_rest, int *ret_nrest);

void flags_usage(FILE *out, const char *cmd, const char *summary, const struct flag *flags,
                 int nflags);

void flag_list_done(struct flag_list *l);

#endif
