/* nestcp: a Cluster API control-plane provider for nested Kubernetes control planes. */

#include <stdio.h>
#include <string.h>

#include "cmd/nestcp/cmd.h"
#include "nestcp_version.h"

struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
};

static const struct subcommand subcommands[] = {
    {"manager", cmd_manager, "run the controllers, with metrics and health endpoints"},
    {"render", cmd_render, "print the objects the controllers would create, without a cluster"},
    {"version", cmd_version, "print the version and build information"},
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: nestcp <command> [flags]\n\n"
                 "nestcp runs tenant Kubernetes control planes (etcd, kube-apiserver,\n"
                 "kube-controller-manager) as workloads in a management cluster.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        fprintf(out, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\nRun 'nestcp <command> --help' for a command's flags.\n");
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

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0)
        return cmd_version(1, argv + 1);
    for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "nestcp: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
