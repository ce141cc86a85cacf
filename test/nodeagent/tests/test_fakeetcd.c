/* nestcp-fake-etcd's server against nestcp's own etcd client (lib/etcd/client.h): TLS picked
 * by SNI from the Pod's certs Secret, client certificates verified against its CA, and the
 * membership calls answered as etcd answers them. Pods and Secrets are handed to it in stores,
 * as its informers would hold them. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "lib/etcd/client.h"
#include "lib/kube/store.h"
#include "lib/kube/transport.h"
#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "test/nodeagent/fakeetcd.h"

struct fx {
    struct ev_loop *loop;
    struct kube_transport *t;
    struct kube_store pods, secrets;
    struct fake_etcd *fe;
    struct etcd_client *c;
    char *ca, *ca_key, *server, *server_key, *client, *client_key;
    char *other_ca, *other_ca_key, *other_client, *other_client_key;
};

/* What one call's callback saw; members copied out as "id name peer client learner" lines. */
struct seen {
    int calls, code;
    uint64_t cluster_id, member_id, added_id, leader;
    size_t n;
    uint64_t id[8];
    char line[8][512];
    char version[32];
};

static void on_done(void *userdata, const struct etcd_result *res)
{
    struct seen *s = userdata;

    s->calls++;
    s->code = res->code;
    if (res->members) {
        s->cluster_id = res->members->header.cluster_id;
        s->member_id = res->members->header.member_id;
        s->added_id = res->members->added ? res->members->added->id : 0;
        s->n = res->members->n_members;
        for (size_t i = 0; i < s->n && i < 8; i++) {
            const struct etcd_member *m = &res->members->members[i];
            s->id[i] = m->id;
            snprintf(s->line[i], sizeof(s->line[i]), "%s %s %s%s", m->name,
                     m->n_peer_urls ? m->peer_urls[0] : "-",
                     m->n_client_urls ? m->client_urls[0] : "-", m->is_learner ? " learner" : "");
        }
    }
    if (res->status) {
        s->cluster_id = res->status->header.cluster_id;
        s->member_id = res->status->header.member_id;
        s->leader = res->status->leader;
        snprintf(s->version, sizeof(s->version), "%s", res->status->version);
    }
}

static void issue(const char *ca, const char *ca_key, const char *cn, bool is_ca, unsigned eku,
                  const char *const *dns, char **ret_cert, char **ret_key)
{
    struct pki_cert_spec s;
    struct err e;

    pki_cert_spec_init(&s);
    assert_int_equal(pki_cert_spec_set_cn(&s, cn, &e), 0);
    for (; dns && *dns; dns++)
        assert_int_equal(pki_cert_spec_add_dns(&s, *dns, &e), 0);
    s.is_ca = is_ca;
    s.ext_usage = eku;
    assert_int_equal(pki_cert_issue(ca, ca_key, &s, ret_cert, ret_key, &e), 0);
    pki_cert_spec_done(&s);
}

static void add_b64(cJSON *data, const char *key, const char *pem)
{
    char *b64;

    assert_int_equal(pki_base64_encode(pem, strlen(pem), &b64), 0);
    cJSON_AddStringToObject(data, key, b64);
    free(b64);
}

/* Puts obj in place of any object of its name, as a watch event does. */
static void store_put(struct kube_store *st, cJSON *obj)
{
    cJSON *old = NULL;

    assert_non_null(obj);
    assert_int_equal(kube_store_put(st, obj, &old), 0);
    cJSON_Delete(old);
}

/* The certs Secret of cluster c in namespace ns, as nestcp writes it (the keys served). */
static void put_secret(struct fx *f, const char *c)
{
    cJSON *s = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(s, "metadata");
    cJSON *data = cJSON_AddObjectToObject(s, "data");
    char name[64];

    snprintf(name, sizeof(name), "%s-etcd-certs", c);
    cJSON_AddStringToObject(meta, "name", name);
    cJSON_AddStringToObject(meta, "namespace", "ns");
    cJSON_AddStringToObject(meta, "resourceVersion", "7");
    add_b64(data, "ca.crt", f->ca);
    add_b64(data, "server.crt", f->server);
    add_b64(data, "server.key", f->server_key);
    store_put(&f->secrets, s);
}

/* Pod <c>-etcd-<i> of a StatefulSet as nestcp renders and releases it: gated until released,
 * then with the initial cluster in its annotations and (from the kubelet) an IP. */
static void put_pod(struct fx *f, const char *c, int i, const char *initial, bool gated)
{
    char json[2048];

    snprintf(json, sizeof(json),
             "{\"metadata\":{\"name\":\"%s-etcd-%d\",\"namespace\":\"ns\",\"uid\":\"u%d\","
             "\"annotations\":{\"etcd.nestcp.x-k8s.io/initial-cluster\":\"%s\","
             "\"etcd.nestcp.x-k8s.io/initial-cluster-state\":\"new\"}},"
             "\"spec\":{\"hostname\":\"%s-etcd-%d\",\"subdomain\":\"%s-etcd\",%s"
             "\"containers\":[{\"name\":\"etcd\",\"image\":\"registry.k8s.io/etcd:3.6.17-0\","
             "\"args\":[\"--name=$(POD_NAME)\",\"--initial-cluster-token=%s-etcd\"]}],"
             "\"volumes\":[{\"name\":\"data\",\"emptyDir\":{}},{\"name\":\"certs\",\"secret\":"
             "{\"secretName\":\"%s-etcd-certs\"}}]},"
             "\"status\":{%s}}",
             c, i, i, initial, c, i, c,
             gated ? "\"schedulingGates\":[{\"name\":\"etcd.nestcp.x-k8s.io/member\"}]," : "", c, c,
             gated ? "" : "\"podIP\":\"127.0.0.1\"");
    store_put(&f->pods, cJSON_Parse(json));
}

static const char *const three =
    "c-etcd-0=https://c-etcd-0.c-etcd.ns.svc:2380,c-etcd-1=https://c-etcd-1.c-etcd.ns.svc:2380,"
    "c-etcd-2=https://c-etcd-2.c-etcd.ns.svc:2380";
static const char *const one = "d-etcd-0=https://d-etcd-0.d-etcd.ns.svc:2380";

static struct etcd_client *client_with(struct fx *f, const char *ca, const char *cert,
                                       const char *key)
{
    struct etcd_tls tls = {.ca_pem = ca, .cert_pem = cert, .key_pem = key};
    struct etcd_client *c;
    struct err e;

    assert_int_equal(etcd_client_new(f->t, &tls, &c, &e), 0);
    return c;
}

static int setup(void **state)
{
    static const char *const names[] = {"c-etcd-0.c-etcd.ns.svc", "c-etcd-1.c-etcd.ns.svc",
                                        "c-etcd-2.c-etcd.ns.svc", "d-etcd-0.d-etcd.ns.svc",
                                        "d-etcd-1.d-etcd.ns.svc", NULL};
    struct fx *f = calloc(1, sizeof(*f));
    struct err e;

    f->loop = ev_loop_new(EVFLAG_AUTO);
    assert_int_equal(kube_transport_new(f->loop, &f->t), 0);
    issue(NULL, NULL, "etcd-ca", true, 0, NULL, &f->ca, &f->ca_key);
    issue(f->ca, f->ca_key, "etcd-server", false, PKI_EKU_SERVER_AUTH | PKI_EKU_CLIENT_AUTH, names,
          &f->server, &f->server_key);
    issue(f->ca, f->ca_key, "kube-etcd-healthcheck-client", false, PKI_EKU_CLIENT_AUTH, NULL,
          &f->client, &f->client_key);
    issue(NULL, NULL, "other-ca", true, 0, NULL, &f->other_ca, &f->other_ca_key);
    issue(f->other_ca, f->other_ca_key, "stranger", false, PKI_EKU_CLIENT_AUTH, NULL,
          &f->other_client, &f->other_client_key);
    kube_store_init(&f->pods);
    kube_store_init(&f->secrets);
    put_secret(f, "c");
    put_secret(f, "d");
    for (int i = 0; i < 3; i++)
        put_pod(f, "c", i, three, false);
    put_pod(f, "d", 0, one, false);
    assert_int_equal(fake_etcd_new(f->loop, "127.0.0.1:0", &f->pods, &f->secrets, &f->fe, &e), 0);
    f->c = client_with(f, f->ca, f->client, f->client_key);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    etcd_client_free(f->c);
    kube_transport_free(f->t);
    fake_etcd_free(f->fe);
    kube_store_done(&f->pods);
    kube_store_done(&f->secrets);
    ev_loop_destroy(f->loop);
    free(f->ca);
    free(f->ca_key);
    free(f->server);
    free(f->server_key);
    free(f->client);
    free(f->client_key);
    free(f->other_ca);
    free(f->other_ca_key);
    free(f->other_client);
    free(f->other_client_key);
    free(f);
    return 0;
}

enum call { LIST, STATUS, HEALTH, ADD, PROMOTE, REMOVE };

/* Sends one call to the member of pod host prefix (e.g. "c-etcd-0.c-etcd") through client c
 * and runs the loop until it is answered. */
static struct seen call(struct fx *f, struct etcd_client *c, const char *member, enum call what,
                        const char *url, uint64_t id)
{
    char host[128];
    struct etcd_endpoint ep = {host, "127.0.0.1", fake_etcd_port(f->fe), 5000};
    struct seen s = {0};
    struct err e;
    int r = -1;

    snprintf(host, sizeof(host), "%s.ns.svc", member);
    switch (what) {
    case LIST:
        r = etcd_member_list(c, &ep, on_done, &s, NULL, &e);
        break;
    case STATUS:
        r = etcd_status_get(c, &ep, on_done, &s, NULL, &e);
        break;
    case HEALTH:
        r = etcd_health_get(c, &ep, on_done, &s, NULL, &e);
        break;
    case ADD:
        r = etcd_member_add(c, &ep, &url, 1, true, on_done, &s, NULL, &e);
        break;
    case PROMOTE:
        r = etcd_member_promote(c, &ep, id, on_done, &s, NULL, &e);
        break;
    case REMOVE:
        r = etcd_member_remove(c, &ep, id, on_done, &s, NULL, &e);
        break;
    }
    assert_int_equal(r, 0);
    while (s.calls == 0)
        ev_run(f->loop, EVRUN_ONCE);
    assert_int_equal(s.calls, 1);
    return s;
}

static void test_fakeetcd__lists_the_initial_cluster_as_every_member_sees_it(void **state)
{
    struct fx *f = *state;
    struct seen a = call(f, f->c, "c-etcd-0.c-etcd", LIST, NULL, 0);
    struct seen b = call(f, f->c, "c-etcd-2.c-etcd", LIST, NULL, 0);
    struct fake_etcd_stats st;

    assert_int_equal(a.code, 0);
    assert_int_equal(a.n, 3);
    assert_string_equal(a.line[0], "c-etcd-0 https://c-etcd-0.c-etcd.ns.svc:2380 "
                                   "https://c-etcd-0.c-etcd.ns.svc:2379");
    assert_string_equal(a.line[2], "c-etcd-2 https://c-etcd-2.c-etcd.ns.svc:2380 "
                                   "https://c-etcd-2.c-etcd.ns.svc:2379");
    assert_true(a.cluster_id != 0);
    /* One cluster, whichever member answers; each answers as itself. */
    assert_int_equal(b.code, 0);
    assert_true(b.cluster_id == a.cluster_id);
    assert_memory_equal(a.id, b.id, 3 * sizeof(a.id[0]));
    assert_true(a.member_id == a.id[0]);
    assert_true(b.member_id == a.id[2]);
    assert_true(a.id[0] != a.id[1] && a.id[1] != a.id[2] && a.id[0] != a.id[2]);
    /* Another StatefulSet is another cluster. */
    b = call(f, f->c, "d-etcd-0.d-etcd", LIST, NULL, 0);
    assert_int_equal(b.n, 1);
    assert_true(b.cluster_id != a.cluster_id);
    fake_etcd_get_stats(f->fe, &st);
    assert_int_equal(st.requests, 3);
}

static void test_fakeetcd__status_and_health_of_a_member(void **state)
{
    struct fx *f = *state;
    struct seen l = call(f, f->c, "c-etcd-0.c-etcd", LIST, NULL, 0);
    struct seen s = call(f, f->c, "c-etcd-1.c-etcd", STATUS, NULL, 0);

    assert_int_equal(s.code, 0);
    assert_string_equal(s.version, "3.6.17");
    assert_true(s.cluster_id == l.cluster_id);
    assert_true(s.member_id == l.id[1]);
    assert_true(s.leader == l.id[0]);
    assert_int_equal(call(f, f->c, "c-etcd-1.c-etcd", HEALTH, NULL, 0).code, 0);
}

static void test_fakeetcd__tls_is_verified_both_ways(void **state)
{
    struct fx *f = *state;
    struct etcd_client *stranger = client_with(f, f->ca, f->other_client, f->other_client_key);
    struct etcd_client *distrustful = client_with(f, f->other_ca, f->client, f->client_key);
    struct fake_etcd_stats st;

    /* A client certificate of another CA is refused, as etcd's --client-cert-auth does. */
    assert_int_equal(call(f, stranger, "c-etcd-0.c-etcd", LIST, NULL, 0).code, -ECONNRESET);
    /* The server's certificate is the Secret's: a client trusting another CA rejects it. */
    assert_int_equal(call(f, distrustful, "c-etcd-0.c-etcd", LIST, NULL, 0).code, -EKEYREJECTED);
    /* Neither got a request through (the server may not have seen the second close yet). */
    fake_etcd_get_stats(f->fe, &st);
    assert_int_equal(st.requests, 0);
    assert_true(st.refused >= 1);
    etcd_client_free(stranger);
    etcd_client_free(distrustful);
}

static void test_fakeetcd__no_answer_for_a_pod_that_does_not_run(void **state)
{
    struct fx *f = *state;

    /* No such Pod, a Pod of another StatefulSet under this name, a Pod still gated. */
    assert_int_equal(call(f, f->c, "c-etcd-5.c-etcd", LIST, NULL, 0).code, -ECONNRESET);
    assert_int_equal(call(f, f->c, "c-etcd-0.d-etcd", LIST, NULL, 0).code, -ECONNRESET);
    put_pod(f, "d", 1, one, true);
    assert_int_equal(call(f, f->c, "d-etcd-1.d-etcd", LIST, NULL, 0).code, -ECONNRESET);
}

static void test_fakeetcd__add_promote_remove_a_learner(void **state)
{
    struct fx *f = *state;
    const char *url = "https://d-etcd-1.d-etcd.ns.svc:2380";
    struct seen a = call(f, f->c, "d-etcd-0.d-etcd", ADD, url, 0), s;
    uint64_t id = a.added_id;

    assert_int_equal(a.code, 0);
    assert_true(id != 0);
    assert_int_equal(a.n, 2);
    /* Not started: no name, no client URL. */
    assert_string_equal(a.line[1], " https://d-etcd-1.d-etcd.ns.svc:2380 - learner");
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", ADD, url, 0).code, -EEXIST);
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", ADD, "https://x.d-etcd.ns.svc:2380", 0).code,
                     -EUSERS);
    /* Its Pod gated: not in sync; released and running: promoted. */
    put_pod(f, "d", 1, one, true);
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", PROMOTE, NULL, id).code, -EAGAIN);
    put_pod(f, "d", 1, one, false);
    s = call(f, f->c, "d-etcd-1.d-etcd", LIST, NULL, 0);
    assert_string_equal(s.line[1], "d-etcd-1 https://d-etcd-1.d-etcd.ns.svc:2380 "
                                   "https://d-etcd-1.d-etcd.ns.svc:2379 learner");
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", PROMOTE, NULL, id).code, 0);
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", PROMOTE, NULL, id).code, -EALREADY);
    s = call(f, f->c, "d-etcd-0.d-etcd", REMOVE, NULL, id);
    assert_int_equal(s.code, 0);
    assert_int_equal(s.n, 1);
    assert_int_equal(call(f, f->c, "d-etcd-0.d-etcd", REMOVE, NULL, id).code, -ENOENT);
    /* The cluster kept its ID through it all. */
    assert_true(s.cluster_id == a.cluster_id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_fakeetcd__lists_the_initial_cluster_as_every_member_sees_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fakeetcd__status_and_health_of_a_member, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fakeetcd__tls_is_verified_both_ways, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fakeetcd__no_answer_for_a_pod_that_does_not_run, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fakeetcd__add_promote_remove_a_learner, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
