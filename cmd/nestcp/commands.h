#ifndef NESTCP_CMD_COMMANDS_H
#define NESTCP_CMD_COMMANDS_H

/*
 * The table of nestcp's commands, and everything made from it: dispatch, the usage text, the
 * bash and zsh completion scripts (`nestcp completion`) and the man page (`nestcp help
 * --man`). A command's help text and flags are written once, in its own file (cmd.h).
 */

#include <stddef.h>
#include <stdio.h>

#include "lib/util/buf.h"

struct flag;

struct command {
    const char *name;    /* the words after `nestcp`: "manager", "get kubeconfig" */
    const char *args;    /* positional arguments for the usage line ("NAME"), or NULL */
    const char *summary; /* one line */
    const char *help;    /* paragraphs, or NULL: the summary */
    int (*run)(int argc, char **argv);
    int (*flags)(struct flag *out, int cap); /* NULL: only --help */
    const char *arg_words;                   /* words the positional argument takes, or NULL */
};

/* Every command, in the order usage lists them. */
const struct command *commands_all(size_t *ret_n);

/* Runs the command argv names. Returns the exit status. */
int commands_main(int argc, char **argv);

/* The top-level usage. */
void commands_usage(FILE *out);

/* Appends the completion script for shell ("bash" or "zsh") to out. Returns 0, -EINVAL
 * (another shell), -ENOMEM. */
int commands_completion(const char *shell, struct buf *out);

/* Appends the man page nestcp(1), in roff, to out. Returns 0 or -ENOMEM. */
int commands_man(struct buf *out);

#endif
