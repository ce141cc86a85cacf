/* Base64 through OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock (pki_base64_*). */

#include "lib/pki/base64.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

int pki_base64_encode(const void *data, size_t len, char **ret_text)
{
    size_t out_len;
    char *out;

    if (len > (size_t)INT_MAX / 4 * 3 - 3)
        return -ENOMEM;
    out_len = (len + 2) / 3 * 4;
    out = malloc(out_len + 1);
    if (!out)
        return -ENOMEM;
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    out[out_len] = '\0';
    *ret_text = out;
    return 0;
}

static int is_b64(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

int pki_base64_decode(const char *text, size_t len, size_t max, unsigned char **ret_data,
                      size_t *ret_len)
{
    size_t pad = 0, out_len;
    unsigned char *out;
    int n;

    if (len % 4 != 0)
        return -EINVAL;
    if (len > 0 && text[len - 1] == '=')
        pad++;
    if (len > 1 && text[len - 2] == '=')
        pad++;
    /* EVP_DecodeBlock skips surrounding whitespace and accepts '=' anywhere near the end;
     * Kubernetes does neither, so check the alphabet here. */
    for (size_t i = 0; i < len - pad; i++)
        if (!is_b64(text[i]))
            return -EINVAL;
    out_len = len / 4 * 3 - pad;
    if (out_len > max)
        return -ENOBUFS;
    if (len > (size_t)INT_MAX)
        return -ENOBUFS;
    out = malloc(len / 4 * 3 + 1);
    if (!out)
        return -ENOMEM;
    n = len ? EVP_DecodeBlock(out, (const unsigned char *)text, (int)len) : 0;
    if (n < 0 || (size_t)n != len / 4 * 3) {
        OPENSSL_clear_free(out, len / 4 * 3 + 1);
        return -EINVAL;
    }
    out[out_len] = '\0';
    *ret_data = out;
    *ret_len = out_len;
    return 0;
}
