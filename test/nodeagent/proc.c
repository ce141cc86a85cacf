#include "test/nodeagent/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <grp.h>
#include <linux/capability.h>

/* What a child that failed before exec reports through its pipe. */
struct proc_failure {
    int err;
    char what[512];
};

void proc_child_reset_signals(void)
{
    sigset_t none;

    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            signal(s, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}

static void child_fail(int fd, int err, const char *what, const char *arg)
{
    struct proc_failure f = {.err = err};
    ssize_t n;

    snprintf(f.what, sizeof(f.what), "%s%s%s", what, arg ? " " : "", arg ? arg : "");
    n = write(fd, &f, sizeof(f));
    (void)n;
    _exit(127);
}

/* Creates the mount point for source at target: a directory, or an empty file when source is
 * a file. Creates a missing source as a directory (a subPath of an emptyDir). */
static int make_mount_point(const char *source, const char *target)
{
    struct stat st;
    int fd, r;

    if (stat(source, &st) < 0) {
        r = podvol_mkdir_p(source, 0755);
        if (r < 0)
            return r;
        if (stat(source, &st) < 0)
            return -errno;
    }
    if (access(target, F_OK) == 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return podvol_mkdir_p(target, 0755);
    {
        char parent[4096];
        char *slash;

        if ((size_t)snprintf(parent, sizeof(parent), "%s", target) >= sizeof(parent))
            return -ENAMETOOLONG;
        slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            r = podvol_mkdir_p(parent, 0755);
            if (r < 0)
                return r;
        }
    }
    fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

static void child_setup_mounts(const struct proc_spec *s, int fd)
{
    if (unshare(CLONE_NEWNS) < 0)
        child_fail(fd, errno, "unshare(CLONE_NEWNS)", NULL);
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        child_fail(fd, errno, "make / private", NULL);
    for (size_t i = 0; i < s->nmounts; i++) {
        const struct podvol_mount *m = &s->mounts[i];
        int r = make_mount_point(m->source, m->target);

        if (r < 0)
            child_fail(fd, -r, "create mount point", m->target);
        if (mount(m->source, m->target, NULL, MS_BIND | MS_REC, NULL) < 0)
            child_fail(fd, errno, "bind mount on", m->target);
        if (m->readonly && mount(NULL, m->target, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
            child_fail(fd, errno, "remount read-only", m->target);
    }
}

/* Keeps only the capabilities in keep: the bounding set (so nothing exec'd can regain the
 * others) and the ambient set now, while the effective set still allows it. */
static void child_limit_bounding(uint64_t keep, int fd)
{
    for (int n = 0; n < 64; n++) {
        if (keep & (UINT64_C(1) << n))
            continue;
        if (prctl(PR_CAPBSET_DROP, n, 0, 0, 0) < 0) {
            if (errno == EINVAL)
                break; /* past the kernel's last capability */
            child_fail(fd, errno, "drop capabilities from the bounding set", NULL);
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        child_fail(fd, errno, "clear ambient capabilities", NULL);
}

/* The effective, permitted and inheritable sets reduced to keep (for a process that stays
 * root; a change to another uid has emptied the first two already). */
static void child_limit_caps(uint64_t keep, int fd)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];

    if (syscall(SYS_capget, &h, d) < 0)
        child_fail(fd, errno, "capget", NULL);
    for (int i = 0; i < 2; i++) {
        uint32_t k = (uint32_t)(keep >> (32 * i));
        d[i].effective &= k;
        d[i].permitted &= k;
        d[i].inheritable &= k;
    }
    if (syscall(SYS_capset, &h, d) < 0)
        child_fail(fd, errno, "capset", NULL);
}

static void child_set_ids(const struct podsec *sec, int fd)
{
    char what[64];

    if (setgroups(sec->ngroups, sec->groups) < 0)
        child_fail(fd, errno, "setgroups", NULL);
    snprintf(what, sizeof(what), "%u", (unsigned)sec->gid);
    if (setresgid(sec->gid, sec->gid, sec->gid) < 0)
        child_fail(fd, errno, "setgid", what);
    snprintf(what, sizeof(what), "%u", (unsigned)sec->uid);
    if (setresuid(sec->uid, sec->uid, sec->uid) < 0)
        child_fail(fd, errno, "setuid", what);
}

static void child_run(const struct proc_spec *s, int fd, pid_t parent)
{
    const struct podsec *sec = s->sec;
    int log, null, exe = -1;

    proc_child_reset_signals();
    if (setsid() < 0)
        child_fail(fd, errno, "setsid", NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        child_fail(fd, errno, "prctl(PR_SET_PDEATHSIG)", NULL);
    if (getppid() != parent)
        child_fail(fd, ESRCH, "parent exited", NULL);
    /* The log is opened in the agent's mount namespace: a file open for writing on the
     * container's copy of the root mount would keep it from becoming read-only (EBUSY). */
    log = open(s->log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
    if (log < 0)
        child_fail(fd, errno, "open log", s->log_path);
    null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0)
        child_fail(fd, errno, "open /dev/null", NULL);
    if (dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0)
        child_fail(fd, errno, "redirect output", NULL);
    if (s->mount_ns)
        child_setup_mounts(s, fd);
    if (sec) {
        /* The binaries live where the agent's user keeps them (a cache under root's home):
         * opened now, executed through the descriptor as an image's entrypoint would be. */
        if (sec->set_ids && sec->uid != 0 && (exe = open(s->path, O_RDONLY | O_CLOEXEC)) < 0)
            child_fail(fd, errno, "open", s->path);
        if (sec->readonly_root && s->mount_ns &&
            mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
            child_fail(fd, errno, "make the root filesystem read-only", NULL);
        if (sec->limit_caps)
            child_limit_bounding(sec->caps, fd);
        if (sec->set_ids)
            child_set_ids(sec, fd);
        if (sec->limit_caps)
            child_limit_caps(sec->caps, fd);
        /* A change of credentials clears the parent-death signal. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
            child_fail(fd, errno, "prctl(PR_SET_PDEATHSIG)", NULL);
        if (getppid() != parent)
            child_fail(fd, ESRCH, "parent exited", NULL);
        if (sec->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
            child_fail(fd, errno, "prctl(PR_SET_NO_NEW_PRIVS)", NULL);
    }
    if (chdir(s->workdir ? s->workdir : "/") < 0)
        child_fail(fd, errno, "chdir", s->workdir ? s->workdir : "/");
    /* Everything else the parent had open closes at exec (the failure pipe among them). */
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        child_fail(fd, errno, "close_range", NULL);
    if (exe >= 0)
        fexecve(exe, s->argv, s->envp);
    else
        execve(s->path, s->argv, s->envp);
    child_fail(fd, errno, "exec", s->path);
}

int proc_spawn(const struct proc_spec *spec, pid_t *ret_pid, struct err *e)
{
    struct proc_failure f;
    pid_t parent = getpid(), pid;
    int fds[2];
    ssize_t n;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return err_set(e, -errno, "pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0) {
        int r = -errno;

        close(fds[0]);
        close(fds[1]);
        return err_set(e, r, "fork: %s", strerror(-r));
    }
    if (pid == 0) {
        close(fds[0]);
        child_run(spec, fds[1], parent);
    }
    close(fds[1]);
    do
        n = read(fds[0], &f, sizeof(f));
    while (n < 0 && errno == EINTR);
    close(fds[0]);
    if (n == 0) {
        *ret_pid = pid;
        return 0;
    }
    /* The child failed before exec and exits with 127; reap it here. */
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (n != (ssize_t)sizeof(f))
        return err_set(e, -EIO, "child failed before exec");
    f.what[sizeof(f.what) - 1] = '\0';
    return err_set(e, f.err > 0 ? -f.err : -EIO, "%s: %s", f.what, strerror(f.err));
}

int proc_signal_group(pid_t pgid, int sig)
{
    if (pgid <= 1)
        return -EINVAL;
    return kill(-pgid, sig) < 0 ? -errno : 0;
}

int proc_enter_mount_ns(pid_t pid)
{
    char path[64];
    int fd, r = 0;

    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    if (setns(fd, CLONE_NEWNS) < 0 || chdir("/") < 0)
        r = -errno;
    close(fd);
    return r;
}
