/*
 * How long the PKI of one tenant cluster takes to generate, per key algorithm: the whole
 * kubeadm set (3 CAs, the service-account key, 9 leaves plus server and peer certificates for
 * 3 etcd members: 17 keys), one key, and one leaf issued from an existing CA (what a renewal
 * costs). Prints figures and the RSA-2048 / ECDSA-P256 ratio; asserts nothing about speed.
 *
 *     bench_pki [runs]     (default 5)
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pki/kubeadm.h"
#include "lib/util/strutil.h"

struct stats {
    double sum, min, max;
    int n;
};

static void stats_add(struct stats *s, double v)
{
    if (s->n == 0 || v < s->min)
        s->min = v;
    if (s->n == 0 || v > s->max)
        s->max = v;
    s->sum += v;
    s->n++;
}

static double mean(const struct stats *s)
{
    return s->n ? s->sum / s->n : 0;
}

static const char *const cidrs[] = {"10.96.0.0/12", "fd00:10:96::/108"};

struct result {
    struct stats set, key, leaf;
};

static int bench(enum pki_key_alg alg, int runs, struct result *res)
{
    struct pki_cluster c = {.name = "bench",
                            .ns = "default",
                            .service_cidrs = cidrs,
                            .n_service_cidrs = 2,
                            .endpoint_host = "bench.example.com",
                            .etcd_members = 3,
                            .key_alg = alg};
    struct err e;

    memset(res, 0, sizeof(*res));
    for (int i = 0; i < runs; i++) {
        struct pki_kubeadm_set *set = NULL;
        struct pki_cert_spec spec;
        char *key = NULL, *crt = NULL;
        double t0;

        if (pki_kubeadm_set_new(3, &set) < 0)
            return -1;
        t0 = time_mono();
        if (pki_kubeadm_set_fill(&c, set, &e) < 0) {
            fprintf(stderr, "bench_pki: %s\n", e.msg);
            pki_kubeadm_set_free(set);
            return -1;
        }
        stats_add(&res->set, (time_mono() - t0) * 1000.0);

        t0 = time_mono();
        if (pki_key_generate(alg, &key, &e) < 0)
            return -1;
        stats_add(&res->key, (time_mono() - t0) * 1000.0);
        free(key);
        key = NULL;

        if (pki_kubeadm_spec(&c, PKI_KUBEADM_APISERVER, 0, &spec, &e) < 0)
            return -1;
        t0 = time_mono();
        if (pki_cert_issue(set->pairs[PKI_KUBEADM_CA].cert_pem, set->pairs[PKI_KUBEADM_CA].key_pem,
                           &spec, &crt, &key, &e) < 0)
            return -1;
        stats_add(&res->leaf, (time_mono() - t0) * 1000.0);
        free(crt);
        free(key);
        pki_cert_spec_done(&spec);
        pki_kubeadm_set_free(set);
    }
    return 0;
}

static void print(const char *what, enum pki_key_alg alg, const struct stats *s)
{
    printf("%-11s %-28s mean %9.2f ms  min %9.2f ms  max %9.2f ms  (%d runs)\n",
           pki_key_alg_name(alg), what, mean(s), s->min, s->max, s->n);
}

int main(int argc, char **argv)
{
    int runs = 5;
    struct result ec, rsa;

    if (argc > 1 && (str_to_int(argv[1], 1, 1000, &runs) < 0)) {
        fprintf(stderr, "usage: bench_pki [runs]\n");
        return 2;
    }
    if (bench(PKI_KEY_ECDSA_P256, runs, &ec) < 0 || bench(PKI_KEY_RSA_2048, runs, &rsa) < 0) {
        fprintf(stderr, "bench_pki: generation failed\n");
        return 1;
    }
    print("full set (3 etcd, 17 keys)", PKI_KEY_ECDSA_P256, &ec.set);
    print("full set (3 etcd, 17 keys)", PKI_KEY_RSA_2048, &rsa.set);
    print("one key", PKI_KEY_ECDSA_P256, &ec.key);
    print("one key", PKI_KEY_RSA_2048, &rsa.key);
    print("one apiserver leaf + key", PKI_KEY_ECDSA_P256, &ec.leaf);
    print("one apiserver leaf + key", PKI_KEY_RSA_2048, &rsa.leaf);
    printf("ratio RSA-2048/ECDSA-P256: full set %.1fx, one key %.1fx, one leaf %.1fx\n",
           mean(&rsa.set) / mean(&ec.set), mean(&rsa.key) / mean(&ec.key),
           mean(&rsa.leaf) / mean(&ec.leaf));
    return 0;
}
