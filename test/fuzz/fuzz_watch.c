/* libFuzzer target for the watch stream decoder: the input is fed in pieces whose sizes come
 * from its first bytes, with a small line bound, so splits and over-long lines are explored.
 * hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/kube/status.h"
#include "lib/kube/watch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_event(void *userdata, const char *type, cJSON *object, cJSON *event)
{
    unsigned long *n = userdata;

    (*n)++;
    if (strcmp(type, "ERROR") == 0)
        return kube_status_code(0, object) ? -1 : 0;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kube_watch_decoder d;
    unsigned long n = 0;
    size_t step = 1;
    int r = 0;

    if (size > 0) {
        step = 1 + data[0] % 64;
        data++;
        size--;
    }
    kube_watch_decoder_init(&d, 4096);
    for (size_t off = 0; off < size && r == 0; off += step) {
        size_t len = size - off < step ? size - off : step;

        r = kube_watch_decoder_feed(&d, (const char *)data + off, len, on_event, &n);
    }
    if (d.line.len > d.max_line)
        __builtin_trap(); /* the bound must hold */
    kube_watch_decoder_done(&d);
    return 0;
}
