#ifndef NESTCP_NODEAGENT_RUNTIME_INTERNAL_H
#define NESTCP_NODEAGENT_RUNTIME_INTERNAL_H

/* Shared between runtime.c (lifecycles) and runtime_status.c (status objects). */

#include <arpa/inet.h>
#include <ev.h>

#include "test/nodeagent/podenv.h"
#include "test/nodeagent/probe.h"
#include "test/nodeagent/runtime.h"

enum rt_state {
    RT_WAITING,
    RT_RUNNING,
    RT_TERMINATED,
};

/* A finished run, for status.lastState and state.terminated. */
struct rt_exit {
    int exit_code;
    int signal;
    char *reason; /* "Completed", "Error" */
    double started_at, finished_at;
};

struct rt_container {
    struct rt_pod *pod;
    size_t index;
    char *name;
    char *image;
    const char *binary; /* from the image map (borrowed), or NULL */
    enum rt_state state;
    char *reason;        /* waiting reason */
    char *message;       /* waiting message */
    struct rt_exit term; /* state terminated */
    struct rt_exit last; /* lastState terminated, when has_last */
    bool has_last;
    bool ever_ran;
    bool image_missing; /* permanent: no local binary */
    int restarts;
    double backoff; /* the next restart delay */
    double started_at;
    pid_t pid; /* running process (and process group), or 0 */
    bool killing;
    ev_child child_w;
    ev_timer restart_w;
    ev_timer kill_w;
    struct podenv env;
    struct probe readiness, liveness, startup;
    bool has_readiness, has_liveness, has_startup;
    bool ready;
    bool started;
};

struct rt_pod {
    struct runtime *rt;
    struct rt_pod *next;
    char *ns, *name, *uid;
    cJSON *obj;
    char ip[INET_ADDRSTRLEN];
    unsigned ip_index;
    char *dir;
    char *hosts_path;
    char *hosts; /* last content written */
    double start_time;
    struct rt_container *ctrs;
    size_t nctrs;
    bool volumes_ready;
    cJSON *claims;    /* volume name -> the bound PersistentVolume's path, once set up */
    ev_timer setup_w; /* retries volume set-up */
    bool stopping, stopped, stop_notified;
    double grace;
    bool ready;
    double ready_changed; /* Ready and ContainersReady lastTransitionTime */
    double initialized_at;
    ev_timer notify_w;
};

struct runtime {
    struct ev_loop *loop;
    struct runtime_opts o;
    char *state_dir;
    char *node_name, *host_ip, *domain;
    char path_env[4096];
    struct rt_pod *pods;
    cJSON *services;
    unsigned ip_next;
    ev_timer hosts_w;
    ev_timer stop_all_w;
    bool stopping_all;
    double max_grace;
    void (*stop_all_done)(void *userdata);
    void *stop_all_data;
};

struct rt_pod *rt_pod_find(const struct runtime *rt, const char *ns, const char *name);

#endif
