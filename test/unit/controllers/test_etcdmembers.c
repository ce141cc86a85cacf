#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "controllers/etcdmembers.h"

/*
 * The decisions are applied to a small model of one tenant's etcd: its StatefulSet (pods,
 * scheduling gates, claims with their retention policy), etcd's member list (quorum, learners,
 * members that start when their pod does) and the status the caller keeps (cluster ID, adding
 * record, recorded data UIDs). The model fails the test when a decision would lose data or
 * quorum: a started member restarted without its data, two learners, a change below quorum, a
 * running pod released again.
 */

#define URL(i) "https://c-etcd-" #i ".c-etcd.ns.svc:2380"

struct mpod {
    bool exists, gated, ready;
    char uid[32];
    char recorded[32]; /* the status record of the ordinal; "" none */
    uint64_t data;     /* emptyDir: the member whose data it holds; 0 none */
};

struct mclaim {
    bool exists;
    char uid[32];
    uint64_t data;
};

struct mmember {
    uint64_t id;
    char name[32];
    char url[ETCD_MEMBERS_URL_MAX];
    bool learner;
};

struct model {
    enum api_storage_kind storage;
    int desired;
    bool sts_exists;
    int replicas;
    struct mpod pod[ETCD_MEMBERS_REPLICAS_MAX];
    struct mclaim claim[ETCD_MEMBERS_REPLICAS_MAX];
    struct mmember mem[16];
    int n_mem;
    uint64_t next_id;
    int next_uid;
    char boot[ETCD_MEMBERS_INITIAL_CLUSTER_MAX];
    /* The caller's status and memory. */
    char cluster_id[32];
    char adding[ETCD_MEMBERS_URL_MAX];
    bool have_list;
    struct etcd_member lm[16];
    char lname[16][32], lurl[16][ETCD_MEMBERS_URL_MAX];
    char *lurlp[16];
    struct etcd_member_list list;
    double list_time, changed_time, now;
    int lists; /* LIST calls answered */
    char trace[1024];
    struct etcd_members_decision d;
};

static struct model M;

static void url_of(int i, char *buf, size_t size)
{
    snprintf(buf, size, "https://c-etcd-%d.c-etcd.ns.svc:2380", i);
}

static int ordinal_of(const char *url)
{
    char u[80];

    for (int i = 0; i < ETCD_MEMBERS_REPLICAS_MAX; i++) {
        url_of(i, u, sizeof(u));
        if (strcmp(u, url) == 0)
            return i;
    }
    return -1;
}

static void new_uid(char *buf, size_t size, const char *prefix)
{
    snprintf(buf, size, "%s%d", prefix, ++M.next_uid);
}

static uint64_t *data_of(int i)
{
    return M.storage == API_STORAGE_PVC ? &M.claim[i].data : &M.pod[i].data;
}

static struct mmember *mem_by_url(const char *url)
{
    for (int k = 0; k < M.n_mem; k++)
        if (strcmp(M.mem[k].url, url) == 0)
            return &M.mem[k];
    return NULL;
}

static struct mmember *mem_by_id(uint64_t id)
{
    for (int k = 0; k < M.n_mem; k++)
        if (M.mem[k].id == id)
            return &M.mem[k];
    return NULL;
}

static bool mem_healthy(const struct mmember *m)
{
    int i = ordinal_of(m->url);

    return m->name[0] && i >= 0 && M.pod[i].exists && !M.pod[i].gated && M.pod[i].ready;
}

static void count(int *voters, int *healthy, int *learners)
{
    *voters = *healthy = *learners = 0;
    for (int k = 0; k < M.n_mem; k++) {
        if (M.mem[k].learner) {
            (*learners)++;
            continue;
        }
        (*voters)++;
        if (mem_healthy(&M.mem[k]))
            (*healthy)++;
    }
}

static void assert_quorum(void)
{
    int v, h, l;

    count(&v, &h, &l);
    assert_true(h >= v / 2 + 1);
    assert_true(l <= 1);
}

static void members_string(char *out, size_t size)
{
    size_t len = 0;

    out[0] = '\0';
    for (int k = 0; k < M.n_mem; k++) {
        int n = snprintf(out + len, size - len, "%sc-etcd-%d=%s", k ? "," : "",
                         ordinal_of(M.mem[k].url), M.mem[k].url);
        len += (size_t)n;
    }
}

/* A model of desired members on the given storage, nothing created yet. */
static void model_init(int desired, enum api_storage_kind storage)
{
    memset(&M, 0, sizeof(M));
    M.desired = desired;
    M.storage = storage;
    M.next_id = 0x1000;
    M.now = 100;
}

static void build_list(void)
{
    for (int k = 0; k < M.n_mem; k++) {
        snprintf(M.lname[k], sizeof(M.lname[k]), "%s", M.mem[k].name);
        snprintf(M.lurl[k], sizeof(M.lurl[k]), "%s", M.mem[k].url);
        M.lurlp[k] = M.lurl[k];
        M.lm[k] = (struct etcd_member){.id = M.mem[k].id,
                                       .name = M.lname[k],
                                       .peer_urls = &M.lurlp[k],
                                       .n_peer_urls = 1,
                                       .is_learner = M.mem[k].learner};
    }
    M.list = (struct etcd_member_list){.members = M.lm, .n_members = (size_t)M.n_mem};
}

static struct etcd_members_input input(void)
{
    struct etcd_members_input in = {
        .cluster = "c",
        .ns = "ns",
        .desired = M.desired,
        .storage = M.storage,
        .sts_exists = M.sts_exists,
        .sts_replicas = M.replicas,
        .cluster_id = M.cluster_id[0] ? M.cluster_id : NULL,
        .adding = M.adding[0] ? M.adding : NULL,
        .list = M.have_list ? &M.list : NULL,
        .list_time = M.list_time,
        .changed_time = M.changed_time,
        .now = M.now,
    };

    for (int i = 0; i < ETCD_MEMBERS_REPLICAS_MAX; i++) {
        const struct mpod *p = &M.pod[i];
        in.pods[i] = (struct etcd_members_pod){
            .exists = p->exists,
            .gated = p->gated,
            .ready = p->ready,
            .data_uid =
                M.storage == API_STORAGE_PVC ? (M.claim[i].exists ? M.claim[i].uid : NULL) : p->uid,
            .recorded_data_uid = p->recorded[0] ? p->recorded : NULL,
        };
    }
    return in;
}

static const struct etcd_members_decision *decide(void)
{
    struct etcd_members_input in = input();

    etcd_members_decide(&in, &M.d);
    return &M.d;
}

static void create_pod(int i)
{
    M.pod[i].exists = M.pod[i].gated = true;
    M.pod[i].ready = false;
    M.pod[i].data = 0;
    new_uid(M.pod[i].uid, sizeof(M.pod[i].uid), "pod-");
    if (M.storage == API_STORAGE_PVC && !M.claim[i].exists) {
        M.claim[i].exists = true;
        M.claim[i].data = 0;
        new_uid(M.claim[i].uid, sizeof(M.claim[i].uid), "claim-");
    }
}

/* The StatefulSet controller replaces pod i (eviction, node loss). */
static void replace_pod(int i)
{
    create_pod(i);
}

/* The claim of pod i is deleted and recreated with the pod: its data is gone. */
static void replace_claim(int i)
{
    M.claim[i].exists = false;
    create_pod(i);
}

/* The manager restarts: it keeps its status, not its memory. */
static void restart(void)
{
    M.have_list = false;
    M.changed_time = 0;
}

static void do_release(const struct etcd_members_decision *d)
{
    int i = d->ordinal;
    struct mpod *p = &M.pod[i];
    uint64_t *data = data_of(i);
    struct mmember *m;
    char u[80];

    assert_true(p->exists);
    assert_true(p->gated); /* a running pod is never released again */
    url_of(i, u, sizeof(u));
    snprintf(p->recorded, sizeof(p->recorded), "%s",
             M.storage == API_STORAGE_PVC ? M.claim[i].uid : p->uid);
    p->gated = false;
    p->ready = true;
    if (*data) {
        /* etcd reads its data directory and ignores both annotations */
        m = mem_by_id(*data);
        assert_non_null(m); /* else: a removed member restarted */
        snprintf(m->name, sizeof(m->name), "c-etcd-%d", i);
        return;
    }
    if (strcmp(d->state, "existing") == 0) {
        char want[ETCD_MEMBERS_INITIAL_CLUSTER_MAX];
        members_string(want, sizeof(want));
        assert_string_equal(d->initial_cluster, want);
        m = mem_by_url(u);
        assert_non_null(m);
        assert_string_equal(m->name, ""); /* a started member never restarts empty */
        assert_true(m->learner);
    } else {
        assert_string_equal(d->state, "new");
        if (M.n_mem == 0 || d->data_lost || strcmp(M.boot, d->initial_cluster) != 0) {
            const char *s = d->initial_cluster;
            assert_true(M.n_mem == 0 || d->data_lost); /* a new cluster replaces the old */
            snprintf(M.boot, sizeof(M.boot), "%s", s);
            M.n_mem = 0;
            while (*s) {
                const char *eq = strchr(s, '='), *end = strchr(s, ',');
                size_t n;
                assert_non_null(eq);
                if (!end)
                    end = s + strlen(s);
                n = (size_t)(end - eq - 1);
                M.mem[M.n_mem] = (struct mmember){.id = M.next_id++};
                snprintf(M.mem[M.n_mem].url, sizeof(M.mem[M.n_mem].url), "%.*s", (int)n, eq + 1);
                M.n_mem++;
                s = *end ? end + 1 : end;
            }
        }
        m = mem_by_url(u);
        assert_non_null(m);
        assert_string_equal(m->name, "");
    }
    snprintf(m->name, sizeof(m->name), "c-etcd-%d", i);
    *data = m->id;
    if (d->data_lost) {
        /* The caller warns and records the new cluster's ID from the next LIST. */
        M.cluster_id[0] = '\0';
        M.have_list = false;
    }
}

static void do_set_replicas(int n)
{
    M.sts_exists = true;
    for (int i = n; i < ETCD_MEMBERS_REPLICAS_MAX; i++) {
        M.pod[i].exists = false;
        M.claim[i].exists = false; /* persistentVolumeClaimRetentionPolicy whenScaled: Delete */
    }
    for (int i = 0; i < n; i++)
        if (!M.pod[i].exists)
            create_pod(i);
    M.replicas = n;
}

static void assert_endpoint_votes(const struct etcd_members_decision *d)
{
    char u[80];
    struct mmember *m;

    assert_true(d->endpoint >= 0);
    url_of(d->endpoint, u, sizeof(u));
    m = mem_by_url(u);
    assert_non_null(m);
    assert_false(m->learner);
    assert_true(mem_healthy(m));
}

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace(const char *fmt, ...)
{
    size_t len = strlen(M.trace);
    va_list ap;

    if (len)
        len += (size_t)snprintf(M.trace + len, sizeof(M.trace) - len, " ");
    va_start(ap, fmt);
    vsnprintf(M.trace + len, sizeof(M.trace) - len, fmt, ap);
    va_end(ap);
}

/* Applies one decision the way the caller, etcd and the StatefulSet controller would; returns
 * false for NONE. */
static bool apply(const struct etcd_members_decision *d)
{
    struct mmember *m;
    int v, h, l;

    if (d->forget_adding)
        M.adding[0] = '\0';
    M.now += 1;
    switch (d->action) {
    case ETCD_MEMBERS_NONE:
        return false;
    case ETCD_MEMBERS_LIST:
        count(&v, &h, &l);
        if (M.n_mem && h >= v / 2 + 1) {
            build_list();
            M.have_list = true;
            M.list_time = M.now;
            M.lists++;
            if (!M.cluster_id[0])
                snprintf(M.cluster_id, sizeof(M.cluster_id), "cid-%" PRIu64, M.mem[0].id);
        }
        break;
    case ETCD_MEMBERS_RELEASE:
        trace("release:%d:%s", d->ordinal, d->state);
        do_release(d);
        break;
    case ETCD_MEMBERS_RECORD_ADDING:
        trace("record:%d", d->ordinal);
        snprintf(M.adding, sizeof(M.adding), "%s", d->peer_url);
        M.pod[d->ordinal].recorded[0] = '\0';
        break;
    case ETCD_MEMBERS_ADD_LEARNER:
        trace("add:%d", d->ordinal);
        assert_string_equal(M.adding, d->peer_url);
        assert_null(mem_by_url(d->peer_url));
        assert_endpoint_votes(d);
        M.mem[M.n_mem] = (struct mmember){.id = M.next_id++, .learner = true};
        snprintf(M.mem[M.n_mem].url, sizeof(M.mem[M.n_mem].url), "%s", d->peer_url);
        M.n_mem++;
        assert_quorum();
        M.changed_time = M.now;
        break;
    case ETCD_MEMBERS_PROMOTE:
        trace("promote:%d", d->ordinal);
        m = mem_by_id(d->member_id);
        assert_non_null(m);
        assert_true(m->learner);
        assert_true(mem_healthy(m));
        assert_endpoint_votes(d);
        m->learner = false;
        assert_quorum();
        M.changed_time = M.now;
        break;
    case ETCD_MEMBERS_REMOVE:
        trace("remove:%d", d->ordinal);
        m = mem_by_id(d->member_id);
        assert_non_null(m);
        assert_int_not_equal(d->endpoint, d->ordinal);
        *m = M.mem[--M.n_mem];
        if (d->ordinal >= 0 && M.pod[d->ordinal].exists && !M.pod[d->ordinal].gated)
            M.pod[d->ordinal].ready = false; /* a removed member's etcd exits */
        assert_quorum();
        M.changed_time = M.now;
        break;
    case ETCD_MEMBERS_SET_REPLICAS:
        trace("replicas:%d", d->replicas);
        do_set_replicas(d->replicas);
        break;
    }
    return true;
}

/* Applies decisions until one is NONE or stop_after actions (LIST excluded) were taken;
 * returns the last decision. */
static const struct etcd_members_decision *run_until(int stop_after)
{
    int actions = 0;

    M.trace[0] = '\0';
    for (int step = 0; step < 200; step++) {
        const struct etcd_members_decision *d = decide();
        if (!apply(d))
            return d;
        if (d->action != ETCD_MEMBERS_LIST && ++actions == stop_after)
            return d;
    }
    fail_msg("no convergence: %s", M.trace);
    return NULL;
}

static const struct etcd_members_decision *run(void)
{
    return run_until(-1);
}

static void assert_scaled(const struct etcd_members_decision *d, int n)
{
    if (d->phase != ETCD_MEMBERS_PHASE_SCALED)
        print_message("not scaled: %s: %s (after %s)\n", d->reason, d->message, M.trace);
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_SCALED);
    assert_string_equal(d->reason, "Scaled");
    assert_true(d->converged);
    assert_int_equal(M.n_mem, n);
    assert_int_equal(M.replicas, n);
    for (int k = 0; k < M.n_mem; k++)
        assert_false(M.mem[k].learner);
}

/* A converged cluster of n members. */
static void formed(int n, enum api_storage_kind storage)
{
    model_init(n, storage);
    assert_scaled(run(), n);
}

static void test_etcdmembers__bootstrap_of_one(void **state)
{
    const struct etcd_members_decision *d;

    model_init(1, API_STORAGE_PVC);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_SET_REPLICAS);
    assert_int_equal(d->replicas, 1);
    assert_string_equal(etcd_members_phase_name(d->phase), "Bootstrapping");
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_string_equal(d->state, "new");
    assert_string_equal(d->initial_cluster, "c-etcd-0=" URL(0));
    assert_false(d->data_lost);
    assert_false(d->converged);

    M.trace[0] = '\0';
    assert_scaled(run(), 1);
    assert_string_equal(M.trace, "release:0:new");
    assert_string_equal(M.d.message, "1 members, all voting");
    assert_string_not_equal(M.cluster_id, "");
}

static void test_etcdmembers__bootstrap_of_three_releases_all_before_listing(void **state)
{
    const struct etcd_members_decision *d;

    model_init(3, API_STORAGE_PVC);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_SET_REPLICAS);
    apply(d);
    /* Never formed, no pod runs: no LIST is asked, every gated pod is released as "new". */
    for (int i = 0; i < 3; i++) {
        d = decide();
        assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
        assert_int_equal(d->ordinal, i);
        assert_string_equal(d->state, "new");
        assert_string_equal(d->initial_cluster,
                            "c-etcd-0=" URL(0) ",c-etcd-1=" URL(1) ",c-etcd-2=" URL(2));
        apply(d);
    }
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_BOOTSTRAPPING);
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "");
}

static void test_etcdmembers__bootstrap_waits_without_pods_and_never_lists(void **state)
{
    const struct etcd_members_decision *d;

    model_init(3, API_STORAGE_EMPTYDIR);
    M.sts_exists = true;
    M.replicas = 3; /* the StatefulSet controller has not created the pods yet */
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_string_equal(d->reason, "WaitingForPod");
    assert_string_equal(d->message, "waiting for pod c-etcd-0");
}

static void test_etcdmembers__scale_1_3_5_3_one_member_at_a_time(void **state)
{
    const struct etcd_members_decision *d;

    formed(1, API_STORAGE_PVC);
    M.desired = 3;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RECORD_ADDING);
    assert_string_equal(d->peer_url, URL(1));
    assert_string_equal(d->message, "recording member c-etcd-1 before adding it");
    assert_false(d->converged);
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_ADD_LEARNER);
    assert_string_equal(d->message, "adding member c-etcd-1 as a learner");
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_ADDING);
    assert_int_equal(d->endpoint, 0);
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST); /* after every change */
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_SET_REPLICAS); /* only after the ADD */
    assert_int_equal(d->replicas, 2);
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_string_equal(d->state, "existing");
    assert_string_equal(d->initial_cluster, "c-etcd-0=" URL(0) ",c-etcd-1=" URL(1));

    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "release:1:existing promote:1 record:2 add:2 replicas:3 "
                                 "release:2:existing promote:2");

    M.desired = 5;
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "record:3 add:3 replicas:4 release:3:existing promote:3 "
                                 "record:4 add:4 replicas:5 release:4:existing promote:4");

    M.desired = 3;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_REMOVE);
    assert_string_equal(d->message, "removing member c-etcd-4 to scale down to 3");
    assert_int_not_equal(d->endpoint, 4);
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "remove:4 replicas:4 remove:3 replicas:3");
    assert_false(M.claim[3].exists);
    assert_false(M.claim[4].exists);
}

static void test_etcdmembers__replaced_pvc_member_is_released_with_its_data(void **state)
{
    const struct etcd_members_decision *d;
    uint64_t id;

    formed(3, API_STORAGE_PVC);
    id = mem_by_url(URL(1))->id;
    replace_pod(1);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_int_equal(d->ordinal, 1);
    assert_string_equal(d->state, "existing");
    assert_string_equal(d->message, "starting member c-etcd-1 with its data");
    assert_true(d->converged); /* the membership did not change */
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "release:1:existing");
    assert_int_equal(mem_by_url(URL(1))->id, id);
}

static void test_etcdmembers__replaced_emptydir_member_is_removed_and_added_again(void **state)
{
    const struct etcd_members_decision *d;
    uint64_t id;

    formed(3, API_STORAGE_EMPTYDIR);
    id = mem_by_url(URL(1))->id;
    replace_pod(1);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_REMOVE);
    assert_int_equal(d->member_id, id);
    assert_int_not_equal(d->endpoint, 1);
    assert_string_equal(etcd_members_phase_name(d->phase), "ReplacingMember");
    assert_string_equal(d->message, "removing member c-etcd-1, which lost its data, to add it "
                                    "again");
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "remove:1 record:1 add:1 release:1:existing promote:1");
    assert_int_not_equal(mem_by_url(URL(1))->id, id);
    assert_string_equal(M.adding, ""); /* forgotten once the member votes */
}

static void test_etcdmembers__only_emptydir_member_losing_data_starts_a_new_cluster(void **state)
{
    const struct etcd_members_decision *d;
    uint64_t id;

    formed(1, API_STORAGE_EMPTYDIR);
    id = M.mem[0].id;
    replace_pod(0);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_string_equal(d->state, "new");
    assert_string_equal(d->initial_cluster, "c-etcd-0=" URL(0));
    assert_true(d->data_lost);
    assert_string_equal(d->reason, "DataLost");
    assert_string_equal(d->message, "member c-etcd-0 lost its data and was the only member: it "
                                    "starts a new, empty cluster and every key is lost");
    assert_scaled(run(), 1);
    assert_string_equal(M.trace, "release:0:new");
    assert_int_not_equal(M.mem[0].id, id);

    /* The same after a restart of the manager: no list, no pod to ask. */
    replace_pod(0);
    restart();
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_true(d->data_lost);
}

static void test_etcdmembers__changed_claim_uid_means_lost_data(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    replace_claim(2);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_REMOVE);
    assert_int_equal(d->ordinal, 2);
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "remove:2 record:2 add:2 release:2:existing promote:2");

    /* A claim not seen yet is waited for, never taken for a lost one. */
    replace_claim(1);
    M.claim[1].exists = false;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_string_equal(d->reason, "WaitingForClaim");
    assert_string_equal(d->message, "waiting for the claim of pod c-etcd-1");
}

static void test_etcdmembers__scale_steps_refused_while_a_voter_is_unready(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    M.pod[1].ready = false;
    M.desired = 5;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_REFUSED);
    assert_string_equal(d->reason, "MemberUnhealthy");
    assert_string_equal(d->message, "member c-etcd-1 is not ready; membership changes wait");

    M.desired = 1;
    d = decide();
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_REFUSED);
    assert_string_equal(d->message, "member c-etcd-1 is not ready; removing member c-etcd-2 "
                                    "waits");

    M.pod[1].ready = true;
    assert_scaled(run(), 1);
    assert_string_equal(M.trace, "remove:2 replicas:2 remove:1 replicas:1");
}

static void test_etcdmembers__quorum_lost_refuses_removal(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_EMPTYDIR);
    replace_pod(1);
    replace_pod(2);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_string_equal(d->reason, "QuorumLost");
    assert_string_equal(d->message, "member c-etcd-1 is down and 1 of the other 2 voting members "
                                    "are ready, 2 needed to remove it");
}

static void test_etcdmembers__kill_after_add_releases_without_adding_again(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    M.desired = 5;
    run_until(2);
    assert_string_equal(M.trace, "record:3 add:3");
    restart();
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    assert_string_equal(d->message, "listing the members: none known");
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "replicas:4 release:3:existing promote:3 record:4 add:4 "
                                 "replicas:5 release:4:existing promote:4");

    /* Killed after the StatefulSet was scaled: the gated pod of the unstarted member. */
    M.desired = 7;
    run_until(3);
    assert_string_equal(M.trace, "record:5 add:5 replicas:6");
    restart();
    assert_scaled(run(), 7);
    assert_string_equal(M.trace, "release:5:existing promote:5 record:6 add:6 replicas:7 "
                                 "release:6:existing promote:6");
}

static void test_etcdmembers__kill_after_record_adds(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_EMPTYDIR);
    M.desired = 5;
    run_until(1);
    assert_string_equal(M.trace, "record:3");
    restart();
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_ADD_LEARNER);
    assert_string_equal(d->peer_url, URL(3));
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "add:3 replicas:4 release:3:existing promote:3 record:4 add:4 "
                                 "replicas:5 release:4:existing promote:4");
}

static void test_etcdmembers__stale_members_are_removed(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    /* A learner added for ordinal 5 by a run that died, and a member nobody knows. */
    M.mem[M.n_mem++] = (struct mmember){.id = 0xdead, .url = URL(5), .learner = true};
    M.mem[M.n_mem++] = (struct mmember){.id = 0xbeef, .name = "old", .url = "https://old:2380"};
    M.have_list = false;
    M.trace[0] = '\0';
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    apply(d);
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_REMOVE);
    assert_int_equal(d->member_id, 0xdead);
    assert_int_equal(d->ordinal, 5);
    assert_string_equal(d->message, "removing member c-etcd-5: its peer URL is no ordinal below 3");
    assert_false(d->converged);
    apply(d);
    apply(decide()); /* LIST */
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_REMOVE);
    assert_int_equal(d->member_id, 0xbeef);
    assert_int_equal(d->ordinal, -1);
    assert_string_equal(d->message,
                        "removing member old (ID beef): its peer URL is no ordinal below 3");
    assert_scaled(run(), 3);
}

static void test_etcdmembers__learner_no_longer_wanted_is_removed(void **state)
{
    formed(3, API_STORAGE_PVC);
    M.desired = 5;
    run_until(2);
    assert_string_equal(M.trace, "record:3 add:3");
    M.desired = 3;
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "remove:3");
    assert_string_equal(M.adding, "");
}

static void test_etcdmembers__list_when_older_than_the_last_change_or_stale(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    M.changed_time = M.list_time + 0.5;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    assert_int_equal(d->phase, ETCD_MEMBERS_PHASE_OBSERVING);
    assert_string_equal(d->message,
                        "listing the members: the last list is older than the last change");
    assert_false(d->converged);
    assert_true(d->endpoint >= 0);

    M.changed_time = M.list_time;
    M.now = M.list_time + ETCD_MEMBERS_STALE_AFTER;
    assert_int_equal(decide()->action, ETCD_MEMBERS_NONE);
    M.now = M.list_time + 11;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
    assert_string_equal(d->message, "listing the members: the last list is 11 s old");
    assert_true(d->converged); /* a stale list still names the members */
}

static void test_etcdmembers__whole_cluster_restarts_without_a_list(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    for (int i = 0; i < 3; i++)
        replace_pod(i);
    restart();
    /* No pod runs, so no LIST can be answered: members with their data start first. */
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_string_equal(d->state, "existing");
    assert_string_equal(d->initial_cluster,
                        "c-etcd-0=" URL(0) ",c-etcd-1=" URL(1) ",c-etcd-2=" URL(2));
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "release:0:existing release:1:existing release:2:existing");
}

static void test_etcdmembers__member_lost_during_scale_up_is_replaced(void **state)
{
    formed(3, API_STORAGE_EMPTYDIR);
    M.desired = 5;
    run_until(2);
    assert_string_equal(M.trace, "record:3 add:3");
    replace_pod(1);
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "remove:1 replicas:4 release:3:existing promote:3 record:1 "
                                 "add:1 release:1:existing promote:1 record:4 add:4 replicas:5 "
                                 "release:4:existing promote:4");
}

static void test_etcdmembers__second_replacement_waits_for_the_learner(void **state)
{
    const struct etcd_members_decision *d;

    formed(5, API_STORAGE_EMPTYDIR);
    replace_pod(1);
    replace_pod(2);
    run_until(5);
    assert_string_equal(M.trace, "remove:1 remove:2 record:1 add:1 release:1:existing");
    M.pod[1].ready = false; /* the learner is catching up */
    apply(decide());        /* LIST */
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_string_equal(d->reason, "WaitingForLearner");
    assert_string_equal(d->message, "waiting for learner c-etcd-1 to start and become ready");
    M.pod[1].ready = true;
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "promote:1 record:2 add:2 release:2:existing promote:2");
}

static void test_etcdmembers__ready_learner_no_longer_wanted_is_removed_not_promoted(void **state)
{
    formed(3, API_STORAGE_PVC);
    M.desired = 5;
    run_until(4);
    assert_string_equal(M.trace, "record:3 add:3 replicas:4 release:3:existing");
    M.desired = 3;
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "remove:3 replicas:3");
}

static void test_etcdmembers__members_without_records_keep_their_claims_data(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    for (int i = 0; i < 3; i++) {
        M.pod[i].recorded[0] = '\0'; /* made before data UIDs were recorded */
        replace_pod(i);
    }
    restart();
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_string_equal(d->state, "existing");
    assert_scaled(run(), 3);
    assert_string_equal(M.trace, "release:0:existing release:1:existing release:2:existing");

    /* With a pod running, one without a record waits for the list instead. */
    M.pod[2].recorded[0] = '\0';
    replace_pod(2);
    restart();
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_LIST);
}

static void test_etcdmembers__bootstrap_keeps_its_size_once_a_pod_started(void **state)
{
    const struct etcd_members_decision *d;

    model_init(3, API_STORAGE_PVC);
    run_until(2);
    assert_string_equal(M.trace, "replicas:3 release:0:new");
    M.desired = 1; /* changed before the cluster formed */
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_RELEASE);
    assert_int_equal(d->ordinal, 1);
    assert_string_equal(d->initial_cluster,
                        "c-etcd-0=" URL(0) ",c-etcd-1=" URL(1) ",c-etcd-2=" URL(2));
    assert_scaled(run(), 1);
    assert_string_equal(M.trace, "release:1:new release:2:new remove:2 replicas:2 remove:1 "
                                 "replicas:1");
}

static void test_etcdmembers__scale_down_undone_drops_the_removed_pod_first(void **state)
{
    formed(5, API_STORAGE_PVC);
    M.desired = 3;
    run_until(1);
    assert_string_equal(M.trace, "remove:4");
    M.desired = 5; /* pod 4 still runs with the removed member's data */
    assert_scaled(run(), 5);
    assert_string_equal(M.trace, "replicas:4 record:4 add:4 replicas:5 release:4:existing "
                                 "promote:4");
}

static void test_etcdmembers__lost_statefulset_is_recreated_for_the_members(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    M.desired = 5;
    M.sts_exists = false;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_SET_REPLICAS);
    assert_int_equal(d->replicas, 3);
}

static void test_etcdmembers__invalid_input_is_refused(void **state)
{
    const struct etcd_members_decision *d;

    formed(3, API_STORAGE_PVC);
    M.desired = 4;
    d = decide();
    assert_int_equal(d->action, ETCD_MEMBERS_NONE);
    assert_string_equal(d->reason, "InvalidInput");
    assert_string_equal(etcd_members_action_name(ETCD_MEMBERS_SET_REPLICAS), "SetReplicas");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_etcdmembers__bootstrap_of_one),
        cmocka_unit_test(test_etcdmembers__bootstrap_of_three_releases_all_before_listing),
        cmocka_unit_test(test_etcdmembers__bootstrap_waits_without_pods_and_never_lists),
        cmocka_unit_test(test_etcdmembers__scale_1_3_5_3_one_member_at_a_time),
        cmocka_unit_test(test_etcdmembers__replaced_pvc_member_is_released_with_its_data),
        cmocka_unit_test(test_etcdmembers__replaced_emptydir_member_is_removed_and_added_again),
        cmocka_unit_test(test_etcdmembers__only_emptydir_member_losing_data_starts_a_new_cluster),
        cmocka_unit_test(test_etcdmembers__changed_claim_uid_means_lost_data),
        cmocka_unit_test(test_etcdmembers__scale_steps_refused_while_a_voter_is_unready),
        cmocka_unit_test(test_etcdmembers__quorum_lost_refuses_removal),
        cmocka_unit_test(test_etcdmembers__kill_after_add_releases_without_adding_again),
        cmocka_unit_test(test_etcdmembers__kill_after_record_adds),
        cmocka_unit_test(test_etcdmembers__stale_members_are_removed),
        cmocka_unit_test(test_etcdmembers__learner_no_longer_wanted_is_removed),
        cmocka_unit_test(test_etcdmembers__list_when_older_than_the_last_change_or_stale),
        cmocka_unit_test(test_etcdmembers__whole_cluster_restarts_without_a_list),
        cmocka_unit_test(test_etcdmembers__member_lost_during_scale_up_is_replaced),
        cmocka_unit_test(test_etcdmembers__second_replacement_waits_for_the_learner),
        cmocka_unit_test(test_etcdmembers__ready_learner_no_longer_wanted_is_removed_not_promoted),
        cmocka_unit_test(test_etcdmembers__members_without_records_keep_their_claims_data),
        cmocka_unit_test(test_etcdmembers__bootstrap_keeps_its_size_once_a_pod_started),
        cmocka_unit_test(test_etcdmembers__scale_down_undone_drops_the_removed_pod_first),
        cmocka_unit_test(test_etcdmembers__lost_statefulset_is_recreated_for_the_members),
        cmocka_unit_test(test_etcdmembers__invalid_input_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
