#ifndef NESTCP_NODEAGENT_PROC_H
#define NESTCP_NODEAGENT_PROC_H

/*
 * Starting a container's process: a new session and process group (so the whole group can be
 * signalled), a private mount namespace holding the container's bind mounts, stdout and stderr
 * appended to a log file, and SIGKILL when the starting process dies (PR_SET_PDEATHSIG).
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "lib/util/err.h"
#include "test/nodeagent/podsec.h"
#include "test/nodeagent/podvol.h"

struct proc_spec {
    const char *path;  /* the executable, absolute */
    char *const *argv; /* argv[0] is what the process sees as its name */
    char *const *envp;
    const char *workdir;  /* NULL: "/" */
    const char *log_path; /* stdout and stderr are appended here */
    /* When mount_ns is set, the process gets its own mount namespace (propagation private)
     * with these bind mounts; missing mount points are created on the host first (a directory,
     * or an empty file when the source is a file), and missing sources as directories. */
    bool mount_ns;
    const struct podvol_mount *mounts;
    size_t nmounts;
    /* The securityContext to apply (NULL: run as the agent does, root with every capability):
     * after the mounts, the root mount is made read-only, capabilities are dropped, the ids
     * changed (the executable is opened first, so a directory only root may search on its way
     * does not stop it) and no_new_privs set, in that order. Needs mount_ns for a read-only
     * root. */
    const struct podsec *sec;
};

/* Forks and executes spec; returns once the process runs the new program or failed to.
 * Returns 0 and the pid (also its process group id), or a negative errno with e naming the
 * step that failed ("mount /etc/kubernetes/pki: ...", "setuid 65532: ...", "exec
 * /usr/bin/etcd: ..."). */
int proc_spawn(const struct proc_spec *spec, pid_t *ret_pid, struct err *e);

/* Sends sig to the process group pgid. Returns 0, -ESRCH when no process is left in it. */
int proc_signal_group(pid_t pgid, int sig);

/* In a freshly forked child only: joins the mount namespace of pid and changes to "/".
 * Returns 0 or a negative errno. */
int proc_enter_mount_ns(pid_t pid);

/* In a freshly forked child only: restores default signal dispositions and an empty mask. */
void proc_child_reset_signals(void);

#endif
