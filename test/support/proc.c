#include "test/support/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

pid_t proc_spawn(const char *logpath, char *const argv[])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    int r;

    if ((r = posix_spawn_file_actions_init(&fa)) != 0) {
        errno = r;
        return -1;
    }
    r = posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (r == 0)
        r = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (r == 0)
        r = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (r == 0)
        r = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (r != 0) {
        errno = r;
        return -1;
    }
    return pid;
}

void proc_stop(pid_t *pid, double grace)
{
    int tries = (int)(grace / 0.05);

    if (*pid <= 0)
        return;
    kill(*pid, SIGTERM);
    for (int i = 0; i < tries; i++) {
        if (waitpid(*pid, NULL, WNOHANG) == *pid) {
            *pid = 0;
            return;
        }
        usleep(50 * 1000);
    }
    kill(*pid, SIGKILL);
    waitpid(*pid, NULL, 0);
    *pid = 0;
}

bool proc_alive(pid_t *pid)
{
    if (*pid <= 0)
        return false;
    if (waitpid(*pid, NULL, WNOHANG) == 0)
        return true;
    *pid = 0;
    return false;
}

int proc_run(char *out, size_t size, const char *fmt, ...)
{
    va_list ap;
    char *cmd;
    FILE *p;
    size_t n = 0;
    int len, st;

    out[0] = '\0';
    va_start(ap, fmt);
    len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (len < 0 || !(cmd = malloc((size_t)len + 1)))
        return -1;
    va_start(ap, fmt);
    vsnprintf(cmd, (size_t)len + 1, fmt, ap);
    va_end(ap);
    p = popen(cmd, "r");
    free(cmd);
    if (!p)
        return -1;
    n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    st = pclose(p);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
