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
    const char *name; /* without the leading dashes */
    char shorthand;   /* 0 for none */
    enum flag_type type;
    void *value;     /* holds the default on entry */
    const char *arg; /* the placeholder in help text ("DIR"), NULL for bools */
    const char *help;
};

/* Parses argv[1..] (argv[0] is the subcommand's last word; cmd is all its words, args its
 * positional arguments for the usage line, or NULL). Positional arguments are returned in
 * ret_rest (pointing into argv) and ret_nrest. Returns 0, 1 when --help was given (usage has
 * been printed to stdout), or -EINVAL after printing a message to stderr. */
int flags_parse(const char *cmd, const char *args, const char *summary, struct flag *flags,
                int nflags, int argc, char **argv, char ***ret_rest, int *ret_nrest);

void flags_usage(FILE *out, const char *cmd, const char *args, const char *summary,
                 const struct flag *flags, int nflags);

void flag_list_done(struct flag_list *l);

/* Room for any subcommand's flags. */
#define FLAGS_MAX 32

/* Copies n flags into out (cap entries). Returns n, or -ENOBUFS when they do not fit. Commands
 * build their table with it, once over their settings and once over defaults for help text,
 * completion and the man page (cmd/nestcp/commands.h). */
int flags_copy(const struct flag *flags, int n, struct flag *out, int cap);

#endif
