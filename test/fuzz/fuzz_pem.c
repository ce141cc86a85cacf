/* Fuzz target for the PEM and Secret readers of lib/pki. The input is read as a certificate, as
 * a private key, as both halves of a CA pair and of a service-account pair, as a CA Secret
 * (once base64-encoded the way the API server returns it, once used as the base64 text itself),
 * as a kubeconfig Secret and as a kubeconfig. A bundle "certificate + key" exercises every
 * path at once. Nothing may crash, leak or return an undocumented code, and every failure
 * carries a message. hack/fuzz.sh builds it with libFuzzer; test/fuzz/CMakeLists.txt replays the
 * corpus. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/pki/base64.h"
#include "lib/pki/cert.h"
#include "lib/pki/key.h"
#include "lib/pki/kubeconfig.h"
#include "lib/pki/secret.h"
#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fixed "now" inside the validity of the corpus certificates (2030-01-01). */
#define FUZZ_NOW ((int64_t)1893456000)

static void check_code(int r, const struct err *e, const char *what)
{
    fuzz_check(r <= 0, "fuzz_pem", what, "positive return");
    fuzz_check(r == 0 || r == -ENOMEM || e->msg[0] != '\0', "fuzz_pem", what,
               "failed without a message");
    fuzz_check(r == 0 || r == -EINVAL || r == -ENOENT || r == -ENOBUFS || r == -ENOMEM ||
                   r == -ENOTSUP || r == -EKEYREJECTED || r == -EKEYEXPIRED,
               "fuzz_pem", what, "undocumented code");
}

/* A Secret whose data holds `value` (already base64 text) under each of keys. */
static cJSON *secret_with(const char *value, const char *const *keys)
{
    cJSON *s = cJSON_CreateObject(), *meta, *d;

    if (!s || !cJSON_AddStringToObject(s, "apiVersion", "v1") ||
        !cJSON_AddStringToObject(s, "kind", "Secret") ||
        !(meta = cJSON_AddObjectToObject(s, "metadata")) ||
        !cJSON_AddStringToObject(meta, "name", "c1-ca") ||
        !cJSON_AddStringToObject(meta, "namespace", "fuzz") ||
        !(d = cJSON_AddObjectToObject(s, "data"))) {
        cJSON_Delete(s);
        return NULL;
    }
    for (; *keys; keys++)
        if (!cJSON_AddStringToObject(d, *keys, value)) {
            cJSON_Delete(s);
            return NULL;
        }
    return s;
}

static void secrets(const char *b64)
{
    static const char *const tls[] = {PKI_SECRET_TLS_CRT, PKI_SECRET_TLS_KEY, NULL};
    static const char *const kc[] = {PKI_SECRET_KUBECONFIG_KEY, NULL};
    cJSON *s = secret_with(b64, tls);
    char *crt = NULL, *key = NULL, *text = NULL;
    size_t len = 0;
    struct err e;
    int r;

    if (s) {
        err_clear(&e);
        r = pki_secret_check_ca(s, FUZZ_NOW, &e);
        check_code(r, &e, "pki_secret_check_ca");
        err_clear(&e);
        r = pki_secret_check_sa(s, &e);
        check_code(r, &e, "pki_secret_check_sa");
        err_clear(&e);
        r = pki_secret_read_tls(s, &crt, &key, &e);
        check_code(r, &e, "pki_secret_read_tls");
        if (r == 0)
            fuzz_check(strlen(crt) <= PKI_PEM_MAX && strlen(key) <= PKI_PEM_MAX, "fuzz_pem",
                       "pki_secret_read_tls", "larger than PKI_PEM_MAX");
        free(crt);
        free(key);
        cJSON_Delete(s);
    }
    s = secret_with(b64, kc);
    if (s) {
        err_clear(&e);
        r = pki_secret_read_kubeconfig(s, &text, &len, &e);
        check_code(r, &e, "pki_secret_read_kubeconfig");
        if (r == 0)
            fuzz_check(strlen(text) == len && len <= PKI_KUBECONFIG_MAX, "fuzz_pem",
                       "pki_secret_read_kubeconfig", "bad length");
        free(text);
        cJSON_Delete(s);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *pem = malloc(size + 1), *pub = NULL, *b64 = NULL;
    struct pki_cert_info *info = NULL;
    struct pki_kubeconfig_creds *creds = NULL;
    enum pki_key_alg alg;
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    struct err e;
    int r;

    if (!pem)
        return 0;
    memcpy(pem, data, size);
    pem[size] = '\0'; /* PEM text stops at the first NUL, as it does when read from a Secret */

    err_clear(&e);
    r = pki_cert_info_read(pem, "fuzz.crt", &info, &e);
    check_code(r, &e, "pki_cert_info_read");
    pki_cert_info_free(info);

    err_clear(&e);
    r = pki_key_alg_of(pem, &alg, &e);
    check_code(r, &e, "pki_key_alg_of");
    err_clear(&e);
    r = pki_key_public_pem(pem, &pub, &e);
    check_code(r, &e, "pki_key_public_pem");
    err_clear(&e);
    r = pki_key_check_match(pem, pub ? pub : pem, "fuzz.key", "fuzz.crt", &e);
    check_code(r, &e, "pki_key_check_match");
    free(pub);
    err_clear(&e);
    r = pki_cert_check_ca(pem, pem, FUZZ_NOW, "fuzz.crt", "fuzz.key", &e);
    check_code(r, &e, "pki_cert_check_ca");

    if (pki_base64_encode(data, size, &b64) == 0) {
        secrets(b64);
        free(b64);
    }
    secrets(pem);
    r = pki_base64_decode(pem, strlen(pem), PKI_PEM_MAX, &raw, &raw_len);
    fuzz_check(r == 0 || r == -EINVAL || r == -ENOBUFS || r == -ENOMEM, "fuzz_pem",
               "pki_base64_decode", "undocumented code");
    if (r == 0)
        fuzz_check(raw_len <= PKI_PEM_MAX && raw[raw_len] == '\0', "fuzz_pem", "pki_base64_decode",
                   "bad length or terminator");
    free(raw);

    err_clear(&e);
    r = pki_kubeconfig_read((const char *)data, size, "fuzz", &creds, &e);
    check_code(r, &e, "pki_kubeconfig_read");
    pki_kubeconfig_creds_free(creds);
    free(pem);
    return 0;
}
