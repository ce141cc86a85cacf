#ifndef NESTCP_CMD_H
#define NESTCP_CMD_H

/*
 * Subcommands of the nestcp binary. Each cmd_<name> returns the process exit status (0, 1 for
 * a failure, 2 for bad usage) and gets argv with argv[0] the command's last word. Its help text
 * (cmd_<name>_help) and its flags over their defaults (cmd_<name>_flags, as flags_copy returns)
 * also make the usage lines, the completion scripts and the man page (commands.h).
 */

struct flag;

int cmd_version(int argc, char **argv);

int cmd_manager(int argc, char **argv);
extern const char cmd_manager_help[];
int cmd_manager_flags(struct flag *out, int cap);

int cmd_render(int argc, char **argv);
extern const char cmd_render_help[];
int cmd_render_flags(struct flag *out, int cap);

int cmd_get_kubeconfig(int argc, char **argv);
extern const char cmd_get_kubeconfig_help[];
int cmd_get_kubeconfig_flags(struct flag *out, int cap);

int cmd_describe(int argc, char **argv);
extern const char cmd_describe_help[];
int cmd_describe_flags(struct flag *out, int cap);

int cmd_plan(int argc, char **argv);
extern const char cmd_plan_help[];
int cmd_plan_flags(struct flag *out, int cap);

int cmd_completion(int argc, char **argv);
extern const char cmd_completion_help[];

int cmd_help(int argc, char **argv);
extern const char cmd_help_help[];
int cmd_help_flags(struct flag *out, int cap);

#endif
