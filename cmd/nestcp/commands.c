#include "cmd/nestcp/commands.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/nestcp/cmd.h"
#include "cmd/nestcp/flags.h"
#include "nestcp_version.h"

const char cmd_completion_help[] =
    "Prints a completion script for bash or zsh: nestcp's commands, their flags, and file\n"
    "names where a flag takes a file or directory. Load it in the current shell with\n"
    "  source <(nestcp completion bash)\n"
    "or install it where the shell finds completions, e.g.\n"
    "  nestcp completion bash > /usr/share/bash-completion/completions/nestcp\n"
    "  nestcp completion zsh > \"${fpath[1]}/_nestcp\"";

const char cmd_help_help[] =
    "Prints nestcp's commands, or with COMMAND that command's help. With --man, prints the\n"
    "manual page nestcp(1) in roff, made from the same help text (man -l <(nestcp help --man)).";

static const struct command commands[] = {
    {"manager", NULL, "run the controllers, with metrics and health endpoints", cmd_manager_help,
     cmd_manager, cmd_manager_flags, NULL},
    {"render", NULL, "print the objects the controllers would create, without a cluster",
     cmd_render_help, cmd_render, cmd_render_flags, NULL},
    {"get kubeconfig", "NAME", "print a tenant cluster's admin kubeconfig", cmd_get_kubeconfig_help,
     cmd_get_kubeconfig, cmd_get_kubeconfig_flags, NULL},
    {"describe", "NAME", "show a tenant control plane and its objects as a tree", cmd_describe_help,
     cmd_describe, cmd_describe_flags, NULL},
    {"plan", NULL,
     "list which components of which control planes would roll with this nestcp, and why",
     cmd_plan_help, cmd_plan, cmd_plan_flags, NULL},
    {"completion", "bash|zsh", "print a shell completion script", cmd_completion_help,
     cmd_completion, NULL, "bash zsh"},
    {"help", "[COMMAND]", "print help, or the man page with --man", cmd_help_help, cmd_help,
     cmd_help_flags, NULL},
    {"version", NULL, "print the version and build information", NULL, cmd_version, NULL, NULL},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

const struct command *commands_all(size_t *ret_n)
{
    *ret_n = NCOMMANDS;
    return commands;
}

void commands_usage(FILE *out)
{
    fprintf(out, "Usage: nestcp <command> [flags]\n\n"
                 "nestcp runs tenant Kubernetes control planes (etcd, kube-apiserver,\n"
                 "kube-controller-manager) as workloads in a management cluster.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-16s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'nestcp <command> --help' for a command's flags.\n");
}

/* How many words of name argv (argc entries) starts with, all of them, else 0. */
static int match(const char *name, int argc, char **argv)
{
    int words = 0;
    const char *p = name;

    while (*p) {
        size_t len = strcspn(p, " ");
        if (words >= argc || strlen(argv[words]) != len || strncmp(argv[words], p, len) != 0)
            return 0;
        words++;
        p += len;
        p += *p == ' ';
    }
    return words;
}

static const struct command *find(int argc, char **argv, int *ret_words)
{
    const struct command *best = NULL;
    int best_words = 0;

    for (size_t i = 0; i < NCOMMANDS; i++) {
        int w = match(commands[i].name, argc, argv);
        if (w > best_words) {
            best = &commands[i];
            best_words = w;
        }
    }
    *ret_words = best_words;
    return best;
}

/* The commands whose first word is word ("get" -> "get kubeconfig"), as "a, b". */
static bool group_members(const char *word, char *out, size_t size)
{
    bool any = false;

    out[0] = '\0';
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const char *sp = strchr(commands[i].name, ' ');
        size_t len = strlen(out);
        if (sp && (size_t)(sp - commands[i].name) == strlen(word) &&
            strncmp(commands[i].name, word, strlen(word)) == 0) {
            snprintf(out + len, size - len, "%s%s", any ? ", " : "", sp + 1);
            any = true;
        }
    }
    return any;
}

int commands_main(int argc, char **argv)
{
    const struct command *c;
    char members[256];
    int words;

    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        commands_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv + 1);
    c = find(argc - 1, argv + 1, &words);
    if (c)
        return c->run(argc - words, argv + words);
    if (group_members(argv[1], members, sizeof(members))) {
        if (argc > 2)
            fprintf(stderr, "nestcp %s: unknown resource '%s' (nestcp %s takes: %s)\n", argv[1],
                    argv[2], argv[1], members);
        else
            fprintf(stderr, "nestcp %s: what to %s? (nestcp %s takes: %s)\n", argv[1], argv[1],
                    argv[1], members);
        return 2;
    }
    fprintf(stderr, "nestcp: unknown command '%s'\n\n", argv[1]);
    commands_usage(stderr);
    return 2;
}

int cmd_version(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("Usage: nestcp version\n\nPrints the nestcp version and the commit it was built "
               "from.\n");
        return 0;
    }
    printf("nestcp %s (%s)\n", NESTCP_VERSION, NESTCP_GIT_VERSION);
    return 0;
}

/* ---- completion ---- */

/* Appends the flags of c as "--name -x ...", and those that take a value to values. */
static int flag_words(const struct command *c, struct buf *all, struct buf *values,
                      struct buf *files, struct buf *dirs)
{
    struct flag flags[FLAGS_MAX];
    int n = c->flags ? c->flags(flags, FLAGS_MAX) : 0;

    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        struct buf *kind = NULL;
        if (buf_printf(all, "--%s ", flags[i].name) < 0 ||
            (flags[i].shorthand && buf_printf(all, "-%c ", flags[i].shorthand) < 0))
            return -ENOMEM;
        if (!flags[i].arg)
            continue;
        if (strcmp(flags[i].arg, "FILE") == 0)
            kind = files;
        else if (strcmp(flags[i].arg, "DIR") == 0)
            kind = dirs;
        else
            kind = values;
        if (buf_printf(kind, "%s--%s", kind->len ? "|" : "", flags[i].name) < 0 ||
            (flags[i].shorthand && buf_printf(kind, "|-%c", flags[i].shorthand) < 0))
            return -ENOMEM;
    }
    return buf_puts(all, "--help -h");
}

/* Whether command i is the first whose first word is that of command i. */
static bool first_of_word(size_t i, size_t *ret_len)
{
    size_t len = strcspn(commands[i].name, " ");

    *ret_len = len;
    for (size_t j = 0; j < i; j++)
        if (strcspn(commands[j].name, " ") == len &&
            strncmp(commands[j].name, commands[i].name, len) == 0)
            return false;
    return true;
}

/* The case branch of one command: file, directory and value completion after its flags, and
 * its words. */
static int command_case(const struct command *c, const char *top, struct buf *out)
{
    struct buf all = BUF_INIT, values = BUF_INIT, files = BUF_INIT, dirs = BUF_INIT;
    const char *arg_words = c->arg_words;
    int r = flag_words(c, &all, &values, &files, &dirs);

    if (r < 0)
        goto out;
    r = -ENOMEM;
    if (buf_printf(out, "    \"%s\")\n", c->name) < 0 ||
        (values.len + files.len + dirs.len && buf_puts(out, "        case \"$prev\" in\n") < 0))
        goto out;
    if (files.len && buf_printf(out,
                                "            %s) COMPREPLY=($(compgen -f -- \"$cur\")); "
                                "return ;;\n",
                                files.data) < 0)
        goto out;
    if (dirs.len && buf_printf(out,
                               "            %s) COMPREPLY=($(compgen -d -- \"$cur\")); "
                               "return ;;\n",
                               dirs.data) < 0)
        goto out;
    if (values.len && buf_printf(out, "            %s) return ;;\n", values.data) < 0)
        goto out;
    if (values.len + files.len + dirs.len && buf_puts(out, "        esac\n") < 0)
        goto out;
    /* `nestcp help` takes a command. */
    if (c->run == cmd_help)
        arg_words = top;
    if (buf_printf(out, "        opts=\"%s%s%s\" ;;\n", all.data, arg_words ? " " : "",
                   arg_words ? arg_words : "") < 0)
        goto out;
    r = 0;
out:
    buf_done(&all);
    buf_done(&values);
    buf_done(&files);
    buf_done(&dirs);
    return r;
}

/* The bash function; zsh runs the same one through bashcompinit. */
static int bash_function(struct buf *out)
{
    struct buf top = BUF_INIT, scan = BUF_INIT, cases = BUF_INIT;
    int r = -ENOMEM;

    for (size_t i = 0; i < NCOMMANDS; i++) {
        size_t len;

        if (first_of_word(i, &len) &&
            buf_printf(&top, "%s%.*s", top.len ? " " : "", (int)len, commands[i].name) < 0)
            goto out;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const char *name = commands[i].name;
        size_t len;
        char members[256];

        if (first_of_word(i, &len)) {
            if (name[len] == ' ') {
                char word[64];
                snprintf(word, sizeof(word), "%.*s", (int)len, name);
                group_members(word, members, sizeof(members));
                /* "a, b" -> "a b" */
                for (char *p = members; (p = strstr(p, ", "));)
                    memmove(p, p + 1, strlen(p + 1) + 1);
                if (buf_printf(&scan, "            %s) cmd=\"%s $w\" ;;\n", word, word) < 0 ||
                    buf_printf(&cases, "    %s) opts=\"%s\" ;;\n", word, members) < 0)
                    goto out;
            }
        }
        if ((r = command_case(&commands[i], top.data, &cases)) < 0)
            goto out;
        r = -ENOMEM;
    }
    if (buf_printf(out,
                   "_nestcp() {\n"
                   "    local cur prev cmd opts i w\n"
                   "    COMPREPLY=()\n"
                   "    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
                   "    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
                   "    # The command so far: the words before the cursor that are not flags.\n"
                   "    cmd=\n"
                   "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
                   "        w=\"${COMP_WORDS[i]}\"\n"
                   "        case \"$w\" in -*) continue ;; esac\n"
                   "        case \"$cmd\" in\n"
                   "            \"\") cmd=$w ;;\n"
                   "%s"
                   "        esac\n"
                   "    done\n"
                   "    case \"$cmd\" in\n"
                   "    \"\") opts=\"%s --help --version\" ;;\n"
                   "%s"
                   "    *) opts= ;;\n"
                   "    esac\n"
                   "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
                   "}\n",
                   scan.data ? scan.data : "", top.data, cases.data) < 0)
        goto out;
    r = 0;
out:
    buf_done(&top);
    buf_done(&scan);
    buf_done(&cases);
    return r;
}

int commands_completion(const char *shell, struct buf *out)
{
    if (strcmp(shell, "bash") == 0) {
        if (buf_puts(out, "# bash completion for nestcp, made by `nestcp completion "
                          "bash`.\n") < 0 ||
            bash_function(out) < 0 || buf_puts(out, "complete -F _nestcp nestcp\n") < 0)
            return -ENOMEM;
        return 0;
    }
    if (strcmp(shell, "zsh") == 0) {
        if (buf_puts(out, "#compdef nestcp\n"
                          "# zsh completion for nestcp, made by `nestcp completion zsh`: the bash\n"
                          "# completion, run by zsh's bashcompinit.\n"
                          "autoload -U +X bashcompinit && bashcompinit\n") < 0 ||
            bash_function(out) < 0 || buf_puts(out, "complete -F _nestcp nestcp\n") < 0)
            return -ENOMEM;
        return 0;
    }
    return -EINVAL;
}

int cmd_completion(int argc, char **argv)
{
    struct buf out = BUF_INIT;
    int status = 1;

    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("Usage: nestcp completion bash|zsh\n\n%s\n", cmd_completion_help);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "nestcp completion: which shell? (usage: nestcp completion bash|zsh)\n");
        return 2;
    }
    switch (commands_completion(argv[1], &out)) {
    case 0:
        status = fwrite(out.data, 1, out.len, stdout) == out.len && fflush(stdout) == 0 ? 0 : 1;
        break;
    case -EINVAL:
        fprintf(stderr, "nestcp completion: \"%s\" is not a shell nestcp completes (bash, zsh)\n",
                argv[1]);
        status = 2;
        break;
    default:
        fprintf(stderr, "nestcp completion: out of memory\n");
    }
    buf_done(&out);
    return status;
}

/* ---- the man page ---- */

/* Appends s with roff's escape character and hyphens escaped, for use inside a line. */
static int roff_inline(const char *s, struct buf *out)
{
    for (const char *p = s; *p; p++) {
        int r = *p == '\\'  ? buf_puts(out, "\\e")
                : *p == '-' ? buf_puts(out, "\\-")
                            : buf_append(out, p, 1);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Appends text with roff's special characters escaped; a line starting with . or ' is
 * protected, and a blank line starts a new paragraph. */
static int roff_text(const char *text, struct buf *out)
{
    bool line_start = true;

    for (const char *p = text; *p; p++) {
        int r = 0;
        if (line_start && *p == '\n') {
            r = buf_puts(out, ".PP\n");
            if (r < 0)
                return r;
            continue;
        }
        if (line_start && (*p == '.' || *p == '\''))
            r = buf_puts(out, "\\&");
        if (r == 0) {
            switch (*p) {
            case '\\':
                r = buf_puts(out, "\\e");
                break;
            case '-':
                r = buf_puts(out, "\\-");
                break;
            default:
                r = buf_append(out, p, 1);
            }
        }
        if (r < 0)
            return r;
        line_start = *p == '\n';
    }
    return line_start ? 0 : buf_puts(out, "\n");
}

static int man_flags(const struct command *c, struct buf *out)
{
    struct flag flags[FLAGS_MAX];
    int n = c->flags ? c->flags(flags, FLAGS_MAX) : 0;

    if (n < 0)
        return n;
    for (int i = 0; i < n; i++) {
        const struct flag *f = &flags[i];
        if (buf_puts(out, ".TP\n.B ") < 0 ||
            (f->shorthand && buf_printf(out, "\\-%c, ", f->shorthand) < 0) ||
            buf_puts(out, "\\-\\-") < 0 || roff_inline(f->name, out) < 0)
            return -ENOMEM;
        if (f->arg && buf_printf(out, " \\fI%s\\fR", f->arg) < 0)
            return -ENOMEM;
        if (buf_puts(out, "\n") < 0 || roff_text(f->help, out) < 0)
            return -ENOMEM;
        if (f->type == FLAG_STRING && *(const char **)f->value && **(const char **)f->value) {
            char d[512];
            snprintf(d, sizeof(d), "(default \"%s\")", *(const char **)f->value);
            if (roff_text(d, out) < 0)
                return -ENOMEM;
        } else if (f->type == FLAG_INT) {
            if (buf_printf(out, "(default %d)\n", *(int *)f->value) < 0)
                return -ENOMEM;
        } else if (f->type == FLAG_BOOL && *(bool *)f->value) {
            if (buf_puts(out, "(default true)\n") < 0)
                return -ENOMEM;
        }
    }
    return 0;
}

int commands_man(struct buf *out)
{
    if (buf_printf(out,
                   ".\\\" nestcp(1), made by `nestcp help --man` from the commands' help text.\n"
                   ".TH NESTCP 1 \"\" \"nestcp %s\" \"User Commands\"\n"
                   ".SH NAME\n"
                   "nestcp \\- a Cluster API control\\-plane provider for nested Kubernetes "
                   "control planes\n"
                   ".SH SYNOPSIS\n"
                   ".B nestcp\n"
                   ".I command\n"
                   ".RI [ flags ]\n"
                   ".SH DESCRIPTION\n",
                   NESTCP_VERSION) < 0 ||
        roff_text("nestcp runs tenant Kubernetes control planes (etcd, kube-apiserver and\n"
                  "kube-controller-manager) as StatefulSets in a management cluster, from\n"
                  "NestedCluster, NestedControlPlane, NestedEtcd, NestedAPIServer and\n"
                  "NestedControllerManager objects. The commands below run its controllers,\n"
                  "render what they would create, and help operators reach and inspect tenant\n"
                  "clusters.\n",
                  out) < 0 ||
        buf_puts(out, ".SH COMMANDS\n") < 0)
        return -ENOMEM;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        const struct command *c = &commands[i];
        if (buf_puts(out, ".SS \"nestcp ") < 0 || roff_inline(c->name, out) < 0 ||
            (c->args && (buf_puts(out, " ") < 0 || roff_inline(c->args, out) < 0)))
            return -ENOMEM;
        if (buf_puts(out, "\"\n") < 0 || roff_text(c->help ? c->help : c->summary, out) < 0 ||
            man_flags(c, out) < 0)
            return -ENOMEM;
    }
    if (buf_puts(out, ".SH ENVIRONMENT\n.TP\n.B KUBECONFIG\n") < 0 ||
        roff_text("The management cluster's kubeconfig files, separated by ':' and merged as\n"
                  "kubectl merges them, when --kubeconfig is not given.\n",
                  out) < 0 ||
        buf_puts(out, ".SH SEE ALSO\n.BR kubectl (1),\n.BR clusterctl (1)\n") < 0)
        return -ENOMEM;
    return 0;
}

static int help_flags(bool *man, struct flag *out, int cap)
{
    const struct flag flags[] = {
        {"man", 0, FLAG_BOOL, man, NULL, "print the manual page nestcp(1) in roff"},
    };

    return flags_copy(flags, (int)(sizeof(flags) / sizeof(flags[0])), out, cap);
}

int cmd_help_flags(struct flag *out, int cap)
{
    static bool defaults;

    return help_flags(&defaults, out, cap);
}

int cmd_help(int argc, char **argv)
{
    struct flag flags[FLAGS_MAX];
    struct buf out = BUF_INIT;
    bool man = false;
    char **rest = NULL, *help_argv[3];
    const struct command *c;
    int nflags = help_flags(&man, flags, FLAGS_MAX), nrest = 0, words, r;

    if (nflags < 0)
        return 1;
    r = flags_parse("help", "[COMMAND]", cmd_help_help, flags, nflags, argc, argv, &rest, &nrest);
    if (r != 0)
        return r > 0 ? 0 : 2;
    if (man) {
        r = commands_man(&out);
        if (r == 0 && (fwrite(out.data, 1, out.len, stdout) != out.len || fflush(stdout) != 0))
            r = -EIO;
        if (r < 0)
            fprintf(stderr, "nestcp help: cannot write the man page\n");
        buf_done(&out);
        free(rest);
        return r < 0 ? 1 : 0;
    }
    if (nrest == 0) {
        commands_usage(stdout);
        free(rest);
        return 0;
    }
    c = find(nrest, rest, &words);
    if (!c || words != nrest) {
        fprintf(stderr, "nestcp help: unknown command '%s'\n", rest[0]);
        free(rest);
        return 2;
    }
    help_argv[0] = rest[words - 1];
    help_argv[1] = "--help";
    help_argv[2] = NULL;
    free(rest);
    return c->run(2, help_argv);
}
