/* Fuzz target for lib/util/textpack: the input packed must unpack to itself byte for byte, and
 * the input read as a packed form must unpack or be refused with -EINVAL, never read past its
 * end. The seeds are Secrets' texts: base64 of PEM, and of a kubeconfig. hack/fuzz.sh builds it
 * with libFuzzer; test/fuzz/CMakeLists.txt replays the corpus. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/textpack.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf packed = BUF_INIT, back = BUF_INIT;
    int r = textpack_pack(data, size, &packed);

    fuzz_check(r == 0 || r == 1 || r == -ENOMEM, "fuzz_textpack", "pack", "undocumented code");
    fuzz_check(r == 1 || packed.len == 0, "fuzz_textpack", "pack", "wrote what it did not pack");
    if (r == 1) {
        r = textpack_unpack(packed.data, packed.len, &back);
        fuzz_check(r == 0 || r == -ENOMEM, "fuzz_textpack", "unpack", "refused its own form");
        fuzz_check(r < 0 || (back.len == size && memcmp(back.data, data, size) == 0),
                   "fuzz_textpack", "round trip", "text differs");
    }
    buf_reset(&back);
    r = textpack_unpack(data, size, &back);
    fuzz_check(r == 0 || r == -EINVAL || r == -ENOMEM, "fuzz_textpack", "unpack input",
               "undocumented code");
    buf_done(&packed);
    buf_done(&back);
    return 0;
}
