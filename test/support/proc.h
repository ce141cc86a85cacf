#ifndef NESTCP_TEST_SUPPORT_PROC_H
#define NESTCP_TEST_SUPPORT_PROC_H

/*
 * Processes that integration tests start themselves (etcd, kube-apiserver, nestcp): started
 * with their output appended to a log, stopped with SIGTERM and, after a grace period,
 * SIGKILL; and shell commands whose output a test reads.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Starts argv (argv[0] a path) with stdin from /dev/null and stdout and stderr appended to
 * logpath. Returns its pid, or -1 with errno set. */
pid_t proc_spawn(const char *logpath, char *const argv[]);

/* Stops *pid: SIGTERM, then SIGKILL once grace seconds have passed without it exiting; waits
 * for it (polling waitpid: a bounded wait for the exit) and clears *pid. Nothing for *pid <= 0. */
void proc_stop(pid_t *pid, double grace);

/* Whether *pid still runs; reaps it and clears *pid when it has exited. */
bool proc_alive(pid_t *pid);

/* Runs the printf-style shell command (sh -c) and keeps what it writes to stdout in out (at
 * most size - 1 bytes, NUL-terminated; redirect stderr in the command to keep it too). Returns
 * its exit status, or -1 when it could not start or did not exit normally. */
int proc_run(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
