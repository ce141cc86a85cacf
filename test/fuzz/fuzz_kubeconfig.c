/* libFuzzer target for the kubeconfig parser (YAML, base64 fields, the context/cluster/user
 * lookups). File references resolve under a directory that does not exist, so nothing on the
 * machine is read.
 * hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus.
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
