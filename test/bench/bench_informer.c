/* Informer and client figures against a real API server ($KUBECONFIG):
 *   - heap bytes per cached ConfigMap (mallinfo2 before and after an informer syncs N objects);
 *   - create and GET requests per second with several requests in flight.
 * Prints figures; asserts nothing about speed.
 *
 *   bench_informer [objects (default 5000)] [seconds per GET run (default 3)]
 */

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "lib/kube/client.h"
#include "lib/kube/config.h"
#include "lib/kube/informer.h"
#include "lib/util/strutil.h"

static struct ev_loop *loop;
static struct kube_client *client;
static char ns[64];

struct pump {
    int next, total, in_flight, max_in_flight, failures;
    bool get; /* GETs of one object until deadline, else creates of total objects */
    double deadline;
    long done;
};

static void pump_fill(struct pump *p);

static void pump_done(void *ud, const struct kube_result *res)
{
    struct pump *p = ud;

    p->in_flight--;
    p->done++;
    if (res->code < 0 && p->failures++ < 3)
        fprintf(stderr, "request failed: %s\n", res->message);
    pump_fill(p);
}

static void pump_fill(struct pump *p)
{
    char json[512], name[32];

    while (p->in_flight < p->max_in_flight) {
        struct kube_request req = {.resource = &KUBE_CONFIGMAPS, .namespace_ = ns};
        cJSON *body = NULL;
        int r;

        if (p->get) {
            if (time_mono() >= p->deadline)
                return;
            req.verb = KUBE_GET;
            req.name = "cm-0";
        } else {
            if (p->next >= p->total)
                return;
            snprintf(name, sizeof(name), "cm-%d", p->next++);
            snprintf(json, sizeof(json),
                     "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":"
                     "\"%s\",\"labels\":{\"app\":\"bench\",\"tier\":\"cache\"},\"annotations\":"
                     "{\"nestcp.io/hash\":\"0123456789abcdef\"}},\"data\":{\"config\":"
                     "\"key=value\\nother=thing\\n\",\"mode\":\"fast\"}}",
                     name);
            body = cJSON_Parse(json);
            req.verb = KUBE_CREATE;
            req.body = body;
        }
        r = kube_request_send(client, &req, pump_done, p);
        cJSON_Delete(body);
        if (r < 0) {
            fprintf(stderr, "send: %s\n", strerror(-r));
            return;
        }
        p->in_flight++;
    }
}

static double run_pump(struct pump *p)
{
    double start = time_mono();

    pump_fill(p);
    while (p->in_flight > 0)
        ev_run(loop, EVRUN_ONCE);
    return time_mono() - start;
}

static bool synced;

static void on_synced(void *ud)
{
    synced = true;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

int main(int argc, char **argv)
{
    int objects = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 5000;
    double get_seconds = argc > 2 ? strtod(argv[2], NULL) : 3.0;
    struct kube_informer_handlers h = {.on_synced = on_synced};
    struct kube_informer_opts o = {.resource = &KUBE_CONFIGMAPS};
    struct kube_informer *inf = NULL;
    struct kube_config *cfg = NULL;
    struct kube_informer_stats st;
    size_t before, after, json_bytes = 0;
    struct pump p;
    cJSON *nsobj;
    char json[128];
    double t;
    struct err e;
    static const int in_flight[] = {1, 16, 64};

    if (objects <= 0 || kube_config_load(NULL, &cfg, &e) < 0) {
        fprintf(stderr, "bench_informer: %s\n", objects <= 0 ? "bad object count" : e.msg);
        return 2;
    }
    loop = ev_default_loop(0);
    if (kube_client_new(loop, cfg, &client, &e) < 0) {
        fprintf(stderr, "bench_informer: %s\n", e.msg);
        return 2;
    }
    snprintf(ns, sizeof(ns), "bench-%d", (int)getpid());
    snprintf(json, sizeof(json),
             "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":"
             "{\"name\":\"%s\"}}",
             ns);
    nsobj = cJSON_Parse(json);
    if (kube_request_sync(client,
                          &(struct kube_request){
                              .verb = KUBE_CREATE, .resource = &KUBE_NAMESPACES, .body = nsobj},
                          NULL, &e) < 0) {
        fprintf(stderr, "bench_informer: namespace: %s\n", e.msg);
        return 2;
    }
    cJSON_Delete(nsobj);

    p = (struct pump){.total = objects, .max_in_flight = 32};
    t = run_pump(&p);
    printf("create: %d ConfigMaps in %.2f s, %.0f req/s with 32 in flight (%d failed)\n", objects,
           t, objects / t, p.failures);

    /* Memory per cached object. */
    o.namespace_ = ns;
    malloc_trim(0);
    before = heap_in_use();
    if (kube_informer_new(client, &o, &h, NULL, &inf) < 0 || kube_informer_start(inf) < 0)
        return 2;
    t = time_mono();
    while (!synced)
        ev_run(loop, EVRUN_ONCE);
    t = time_mono() - t;
    malloc_trim(0);
    after = heap_in_use();
    {
        const cJSON *one = kube_informer_get(inf, ns, "cm-0");
        char *s = one ? cJSON_PrintUnformatted(one) : NULL;

        json_bytes = s ? strlen(s) : 0;
        free(s);
    }
    kube_informer_get_stats(inf, &st);
    printf("informer: %zu objects synced in %.2f s (%lu list)\n", kube_informer_count(inf), t,
           st.lists);
    printf("informer: heap %.0f bytes per cached object (compact JSON of one object: %zu "
           "bytes; managedFields dropped)\n",
           (double)(after - before) / (double)kube_informer_count(inf), json_bytes);
    kube_informer_free(inf);

    for (size_t i = 0; i < sizeof(in_flight) / sizeof(in_flight[0]); i++) {
        p = (struct pump){
            .get = true, .max_in_flight = in_flight[i], .deadline = time_mono() + get_seconds};
        t = run_pump(&p);
        printf("get: %ld requests in %.2f s, %.0f req/s with %d in flight (%d failed)\n", p.done, t,
               p.done / t, in_flight[i], p.failures);
    }

    kube_request_sync(client,
                      &(struct kube_request){.verb = KUBE_DELETE,
                                             .resource = &KUBE_NAMESPACES,
                                             .name = ns,
                                             .propagation_policy = "Background"},
                      NULL, NULL);
    kube_client_free(client);
    kube_config_free(cfg);
    return 0;
}
