/* libFuzzer target for the kubeconfig parser (YAML, base64 fields, the context/cluster/user
 * lookups). File references resolve under a directory that does not exist, so nothing on the
 * machine is read.
 *
 *   clang -g -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -I. test/fuzz/fuzz_kubeconfig.c \
 *       lib/kube/config.c lib/util/[a-z]*.c -lcjson -lyaml -lm -o fuzz_kubeconfig \
 *       && ./fuzz_kubeconfig -max_total_time=60
 */

#include <stddef.h>
#include <stdint.h>

#include "lib/kube/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_config *cfg = NULL;
    struct err e;

    if (kube_config_parse((const char *)data, size, "fuzz", "/nonexistent-fuzz-dir", NULL, &cfg,
                          &e) == 0)
        kube_config_free(cfg);
    return 0;
}
