#ifndef NESTCP_CMD_H
#define NESTCP_CMD_H

/* Subcommands of the nestcp binary. Each returns the process exit status. */

int cmd_version(int argc, char **argv);
int cmd_manager(int argc, char **argv);
int cmd_render(int argc, char **argv);

#endif
