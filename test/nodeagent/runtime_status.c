/* Pod status objects as the kubelet writes them (the `status` of a Pod). */

#include <stdio.h>
#include <string.h>

#include "lib/util/strutil.h"
#include "test/nodeagent/runtime_internal.h"

static cJSON *add_time(cJSON *obj, const char *name, double t)
{
    char buf[32];

    if (t <= 0)
        return cJSON_AddNullToObject(obj, name);
    time_format_rfc3339(t, buf);
    return cJSON_AddStringToObject(obj, name, buf);
}

static bool add_condition(cJSON *conds, const char *type, bool status, double since,
                          const char *reason)
{
    cJSON *c = cJSON_CreateObject();

    if (!c || !cJSON_AddItemToArray(conds, c))
        return cJSON_Delete(c), false;
    return cJSON_AddStringToObject(c, "type", type) &&
           cJSON_AddStringToObject(c, "status", status ? "True" : "False") &&
           cJSON_AddNullToObject(c, "lastProbeTime") && add_time(c, "lastTransitionTime", since) &&
           (!reason || cJSON_AddStringToObject(c, "reason", reason));
}

static bool add_terminated(cJSON *state, const struct rt_exit *x, const char *container_id)
{
    cJSON *t = cJSON_AddObjectToObject(state, "terminated");

    return t && cJSON_AddNumberToObject(t, "exitCode", x->exit_code) &&
           (!x->signal || cJSON_AddNumberToObject(t, "signal", x->signal)) &&
           cJSON_AddStringToObject(t, "reason", x->reason ? x->reason : "Error") &&
           add_time(t, "startedAt", x->started_at) && add_time(t, "finishedAt", x->finished_at) &&
           (!container_id || cJSON_AddStringToObject(t, "containerID", container_id));
}

static cJSON *container_status(const struct rt_container *c)
{
    cJSON *s = cJSON_CreateObject(), *state, *last;
    char id[64], image_id[4200];
    bool ok;

    if (!s)
        return NULL;
    snprintf(id, sizeof(id), "nestcp://%d", (int)c->pid);
    snprintf(image_id, sizeof(image_id), "nestcp://%s", c->binary ? c->binary : "");
    ok = cJSON_AddStringToObject(s, "name", c->name) &&
         (state = cJSON_AddObjectToObject(s, "state")) &&
         (last = cJSON_AddObjectToObject(s, "lastState")) &&
         cJSON_AddBoolToObject(s, "ready", c->ready) &&
         cJSON_AddNumberToObject(s, "restartCount", c->restarts) &&
         cJSON_AddStringToObject(s, "image", c->image) &&
         cJSON_AddStringToObject(s, "imageID", c->binary ? image_id : "") &&
         cJSON_AddBoolToObject(s, "started", c->started);
    if (ok && c->pid > 0)
        ok = cJSON_AddStringToObject(s, "containerID", id) != NULL;
    if (ok && c->state == RT_RUNNING) {
        cJSON *r = cJSON_AddObjectToObject(state, "running");

        ok = r && add_time(r, "startedAt", c->started_at);
    } else if (ok && c->state == RT_TERMINATED) {
        ok = add_terminated(state, &c->term, NULL);
    } else if (ok) {
        cJSON *w = cJSON_AddObjectToObject(state, "waiting");

        ok = w && (!c->reason || cJSON_AddStringToObject(w, "reason", c->reason)) &&
             (!c->message || cJSON_AddStringToObject(w, "message", c->message));
    }
    if (ok && c->has_last)
        ok = add_terminated(last, &c->last, NULL);
    if (!ok) {
        cJSON_Delete(s);
        return NULL;
    }
    return s;
}

/* The kubelet's phase: Pending until every container has run once, Running while any runs or
 * will restart, then Succeeded or Failed. */
static const char *pod_phase(const struct rt_pod *p)
{
    const char *policy = podobj_str(p->obj, "spec", "restartPolicy", NULL) ?: "Always";
    bool all_terminated = true, all_zero = true;

    for (size_t i = 0; i < p->nctrs; i++) {
        const struct rt_container *c = &p->ctrs[i];

        if (!c->ever_ran)
            return "Pending";
        if (c->state != RT_TERMINATED)
            all_terminated = false;
        else if (c->term.exit_code != 0)
            all_zero = false;
    }
    if (!all_terminated)
        return "Running";
    if (!p->stopping && strcmp(policy, "Always") == 0)
        return "Running";
    return all_zero ? "Succeeded" : "Failed";
}

cJSON *runtime_pod_status(const struct runtime *rt, const char *ns, const char *name)
{
    const struct rt_pod *p = rt_pod_find(rt, ns, name);
    cJSON *st, *conds, *ips, *ip, *ctrs;
    bool ctrs_ready = p && p->nctrs > 0, ok;

    if (!p || !(st = cJSON_CreateObject()))
        return NULL;
    for (size_t i = 0; i < p->nctrs; i++)
        ctrs_ready = ctrs_ready && p->ctrs[i].ready;
    ctrs_ready = ctrs_ready && !p->stopping;
    ok = cJSON_AddStringToObject(st, "phase", pod_phase(p)) &&
         (conds = cJSON_AddArrayToObject(st, "conditions")) &&
         add_condition(conds, "Initialized", true, p->initialized_at, NULL) &&
         add_condition(conds, "Ready", ctrs_ready, p->ready_changed,
                       ctrs_ready ? NULL : "ContainersNotReady") &&
         add_condition(conds, "ContainersReady", ctrs_ready, p->ready_changed,
                       ctrs_ready ? NULL : "ContainersNotReady") &&
         add_condition(conds, "PodScheduled", true, p->start_time, NULL) &&
         cJSON_AddStringToObject(st, "hostIP", rt->host_ip) &&
         cJSON_AddStringToObject(st, "podIP", p->ip) &&
         (ips = cJSON_AddArrayToObject(st, "podIPs")) && (ip = cJSON_CreateObject()) &&
         cJSON_AddItemToArray(ips, ip) && cJSON_AddStringToObject(ip, "ip", p->ip) &&
         add_time(st, "startTime", p->start_time) &&
         (ctrs = cJSON_AddArrayToObject(st, "containerStatuses"));
    for (size_t i = 0; ok && i < p->nctrs; i++) {
        cJSON *cs = container_status(&p->ctrs[i]);

        ok = cs && cJSON_AddItemToArray(ctrs, cs);
        if (!ok)
            cJSON_Delete(cs);
    }
    if (!ok) {
        cJSON_Delete(st);
        return NULL;
    }
    return st;
}
