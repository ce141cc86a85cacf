/* nestcp: a Cluster API control-plane provider for nested Kubernetes control planes. */

#include "cmd/nestcp/commands.h"

int main(int argc, char **argv)
{
    return commands_main(argc, argv);
}
