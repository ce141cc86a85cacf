#include "controllers/rollhealth.h"

#include <stdio.h>
#include <string.h>

#include "controllers/status.h"
#include "lib/kube/object.h"
#include "lib/kube/store.h"
#include "lib/util/strutil.h"

#define REVISION_LABEL "controller-revision-hash"

static const cJSON *get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = get(o, key);

    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int num(const cJSON *o, const char *key, int def)
{
    const cJSON *v = get(o, key);

    return cJSON_IsNumber(v) ? v->valueint : def;
}

int rollhealth_partition(const cJSON *sts)
{
    return num(get(get(get(sts, "spec"), "updateStrategy"), "rollingUpdate"), "partition", 0);
}

/* The update revision of a StatefulSet that is rolling, else NULL. */
static const char *rolling_to(const cJSON *sts)
{
    const cJSON *st = get(sts, "status");
    const char *cur = str(st, "currentRevision"), *upd = str(st, "updateRevision");

    return cur && upd && strcmp(cur, upd) != 0 ? upd : NULL;
}

void rollhealth_foreach_updated(const cJSON *sts, const struct kube_store *pods,
                                bool (*fn)(void *userdata, const cJSON *pod), void *userdata)
{
    const char *ns = kube_obj_namespace(sts), *name = kube_obj_name(sts);
    const char *upd = rolling_to(sts);
    int replicas = num(get(sts, "spec"), "replicas", 1);
    char pod_name[320];

    if (!upd || !ns || !name || !pods)
        return;
    for (int i = 0; i < replicas; i++) {
        const cJSON *pod;
        const char *rev;

        snprintf(pod_name, sizeof(pod_name), "%s-%d", name, i);
        pod = kube_store_get(pods, ns, pod_name);
        rev = pod ? kube_obj_label(pod, REVISION_LABEL) : NULL;
        if (rev && strcmp(rev, upd) == 0 && !fn(userdata, pod))
            return;
    }
}

struct check {
    double now;
    char *msg;
    size_t size;
    double recheck;
    bool failed;
};

/* The container that restarted most, and how its last run ended. */
static bool restarted(const cJSON *pod, char *msg, size_t size)
{
    const cJSON *cs, *worst = NULL;
    int most = -1;

    cJSON_ArrayForEach(cs, get(get(pod, "status"), "containerStatuses")) {
        int n = num(cs, "restartCount", 0);
        if (n > most) {
            most = n;
            worst = cs;
        }
    }
    if (!worst || most < ROLLHEALTH_RESTARTS)
        return false;
    {
        const cJSON *t = get(get(worst, "lastState"), "terminated");
        const char *name = str(worst, "name"), *why = str(t, "reason"), *text = str(t, "message");

        snprintf(msg, size, "container %s restarted %d times, last exit code %d (%s)%s%.200s",
                 name ? name : "?", most, num(t, "exitCode", -1), why ? why : "unknown",
                 text ? ": " : "", text ? text : "");
    }
    return true;
}

static bool check_pod(void *userdata, const cJSON *pod)
{
    struct check *c = userdata;
    const char *created = str(get(pod, "metadata"), "creationTimestamp");
    char why[400];
    double t, left;

    if (status_pod_ready(pod) || get(get(pod, "metadata"), "deletionTimestamp"))
        return true;
    if (restarted(pod, why, sizeof(why))) {
        snprintf(c->msg, c->size, "pod %s: %s", kube_obj_name(pod), why);
        c->failed = true;
        return false;
    }
    if (!created || time_parse_rfc3339(created, &t) < 0)
        return true;
    left = t + ROLLHEALTH_READY_DEADLINE - c->now;
    if (left <= 0) {
        snprintf(c->msg, c->size, "pod %s: not Ready %.0f s after it was created",
                 kube_obj_name(pod), c->now - t);
        c->failed = true;
        return false;
    }
    if (c->recheck == 0 || left < c->recheck)
        c->recheck = left;
    return true;
}

bool rollhealth_failed(const cJSON *sts, const struct kube_store *pods, double now, char *msg,
                       size_t size, double *ret_recheck)
{
    struct check c = {now, msg, size, 0, false};

    rollhealth_foreach_updated(sts, pods, check_pod, &c);
    *ret_recheck = c.failed ? 0 : c.recheck;
    return c.failed;
}
