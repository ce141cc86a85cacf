/* Packing text that carries base64 and PEM (lib/util/textpack.h); base64 by OpenSSL's
 * EVP_EncodeBlock and EVP_DecodeBlock. */

#include "lib/util/textpack.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

/* How many layers of decoded parts are packed again: a Secret's value, the kubeconfig in it,
 * the PEM in that, the DER in that. */
#define MAX_DEPTH 4
/* Bytes a PEM line encodes: 64 characters of base64. */
#define PEM_LINE_BYTES 48
/* The longest label of a PEM block this packs ("ENCRYPTED PRIVATE KEY" and the like). */
#define PEM_LABEL_MAX 64
/* Bytes encoded per call: a multiple of 3, so that the pieces' base64 is the whole's. */
#define CHUNK_BYTES 768

enum { TAG_TEXT = 'T', TAG_BASE64 = 'B', TAG_PEM = 'P' };

static const char PEM_BEGIN[] = "-----BEGIN ";
static const char PEM_END[] = "-----END ";
static const char PEM_DASHES[] = "-----";

static bool is_b64(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
           c == '/';
}

static bool is_label(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == ' ';
}

static bool starts_with(const unsigned char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);

    return n >= k && memcmp(p, prefix, k) == 0;
}

/* Appends the base64 of p[0..n), encoded straight into out. */
static int b64_append(struct buf *out, const unsigned char *p, size_t n)
{
    int r = buf_reserve(out, (n + 2) / 3 * 4);

    if (r < 0)
        return r;
    while (n) {
        size_t take = n < CHUNK_BYTES ? n : CHUNK_BYTES;
        int k = EVP_EncodeBlock((unsigned char *)out->data + out->len, p, (int)take);

        out->len += (size_t)k;
        p += take;
        n -= take;
    }
    out->data[out->len] = '\0';
    return 0;
}

/* Appends the bytes of the base64 s[0..n) (n a multiple of 4, padded, nothing but the
 * alphabet): 0, -EINVAL, -ENOMEM. Whether they encode back to s is the caller's check. */
static int b64_decode(const unsigned char *s, size_t n, struct buf *out)
{
    unsigned char chunk[CHUNK_BYTES + 3];

    while (n) {
        size_t take = n < CHUNK_BYTES / 3 * 4 ? n : CHUNK_BYTES / 3 * 4;
        int k = EVP_DecodeBlock(chunk, s, (int)take);
        int r;

        if (k < 0)
            return -EINVAL;
        /* EVP_DecodeBlock counts the bytes that padding stands for. */
        if (take == n && s[n - 1] == '=')
            k -= s[n - 2] == '=' ? 2 : 1;
        r = buf_append(out, chunk, (size_t)k);
        if (r < 0)
            return r;
        s += take;
        n -= take;
    }
    return 0;
}

static int put_len(struct buf *out, size_t n)
{
    unsigned char v[10];
    size_t k = 0;

    do {
        v[k] = (unsigned char)(n & 0x7f);
        n >>= 7;
        if (n)
            v[k] |= 0x80;
        k++;
    } while (n);
    return buf_append(out, v, k);
}

static int put_part(struct buf *out, char tag, const void *p, size_t n)
{
    int r = buf_append(out, &tag, 1);

    if (r >= 0)
        r = put_len(out, n);
    if (r >= 0)
        r = buf_append(out, p, n);
    return r;
}

/* Appends the PEM block of label and der as this packing writes one: the header line, lines
 * of 64 characters, the footer without a line break after it. */
static int pem_append(struct buf *out, const char *label, size_t label_len,
                      const unsigned char *der, size_t der_len)
{
    int r = buf_puts(out, PEM_BEGIN);

    if (r >= 0)
        r = buf_append(out, label, label_len);
    if (r >= 0)
        r = buf_puts(out, "-----\n");
    for (size_t at = 0; r >= 0 && at < der_len; at += PEM_LINE_BYTES) {
        size_t take = der_len - at < PEM_LINE_BYTES ? der_len - at : PEM_LINE_BYTES;

        r = b64_append(out, der + at, take);
        if (r >= 0)
            r = buf_append(out, "\n", 1);
    }
    if (r >= 0)
        r = buf_puts(out, PEM_END);
    if (r >= 0)
        r = buf_append(out, label, label_len);
    if (r >= 0)
        r = buf_puts(out, PEM_DASHES);
    return r;
}

/* The length of the PEM block at the start of p[0..n) (which starts with PEM_BEGIN), its
 * part ('P') appended to out; 0 when it is none this packing writes back exactly (out
 * unchanged); -ENOMEM. */
static long pem_pack(const unsigned char *p, size_t n, struct buf *out)
{
    const unsigned char *label = p + strlen(PEM_BEGIN);
    size_t label_len = 0, at, end;
    struct buf body = BUF_INIT, part = BUF_INIT, again = BUF_INIT;
    long ret = 0;
    int r = 0;

    while (label + label_len < p + n && is_label(label[label_len]) && label_len < PEM_LABEL_MAX)
        label_len++;
    at = (size_t)(label - p) + label_len;
    if (!label_len || !starts_with(p + at, n - at, "-----\n"))
        return 0;
    at += strlen("-----\n");
    /* The body: lines of base64 up to the footer. */
    while (r >= 0 && at < n && !starts_with(p + at, n - at, PEM_END)) {
        size_t k = at;

        while (k < n && (is_b64(p[k]) || p[k] == '='))
            k++;
        if (k == at || k == n || p[k] != '\n')
            goto out;
        r = buf_append(&body, p + at, k - at);
        at = k + 1;
    }
    if (r < 0 || !body.len || body.len % 4 || !starts_with(p + at, n - at, PEM_END))
        goto out;
    at += strlen(PEM_END);
    if (n - at < label_len + strlen(PEM_DASHES) || memcmp(p + at, label, label_len) ||
        memcmp(p + at + label_len, PEM_DASHES, strlen(PEM_DASHES)))
        goto out;
    end = at + label_len + strlen(PEM_DASHES);
    r = buf_append(&part, label, label_len);
    if (r >= 0)
        r = buf_append(&part, "", 1);
    if (r >= 0)
        r = b64_decode((const unsigned char *)body.data, body.len, &part);
    if (r == -EINVAL) {
        r = 0;
        goto out;
    }
    if (r >= 0)
        r = pem_append(&again, (const char *)label, label_len,
                       (const unsigned char *)part.data + label_len + 1, part.len - label_len - 1);
    if (r >= 0 && (again.len != end || memcmp(again.data, p, end)))
        goto out;
    if (r >= 0)
        r = put_part(out, TAG_PEM, part.data, part.len);
    ret = r < 0 ? r : (long)end;
out:
    buf_done(&body);
    buf_done(&part);
    buf_done(&again);
    return r < 0 ? r : ret;
}

static long pack_level(const unsigned char *p, size_t n, int depth, struct buf *out);

/* The base64 run s[0..n): its part ('B') appended to out, 1; 0 when it does not encode back to
 * exactly s (out unchanged); -ENOMEM. */
static int b64_pack(const unsigned char *s, size_t n, int depth, struct buf *out)
{
    struct buf raw = BUF_INIT, again = BUF_INIT, inner = BUF_INIT;
    int r = b64_decode(s, n, &raw);

    if (r >= 0)
        r = b64_append(&again, (const unsigned char *)raw.data, raw.len);
    if (r >= 0 && (again.len != n || memcmp(again.data, s, n)))
        r = -EINVAL;
    if (r >= 0) {
        long found = pack_level((const unsigned char *)raw.data, raw.len, depth + 1, &inner);

        r = found < 0 ? (int)found : put_part(out, TAG_BASE64, inner.data, inner.len);
    }
    buf_done(&raw);
    buf_done(&again);
    buf_done(&inner);
    return r == -EINVAL ? 0 : r < 0 ? r : 1;
}

/* Appends the packed form of p[0..n) and returns how many parts of it are not text. Below
 * MAX_DEPTH, nothing is looked for: it is one part of text. */
static long pack_level(const unsigned char *p, size_t n, int depth, struct buf *out)
{
    size_t i = 0, lit = 0;
    long found = 0, r;

    while (depth < MAX_DEPTH && i < n) {
        size_t j, k;

        if (p[i] == '-' && (i == 0 || p[i - 1] == '\n') && starts_with(p + i, n - i, PEM_BEGIN)) {
            size_t mark = out->len;

            r = i > lit ? put_part(out, TAG_TEXT, p + lit, i - lit) : 0;
            if (r >= 0)
                r = pem_pack(p + i, n - i, out);
            if (r < 0)
                return r;
            if (r > 0) {
                i += (size_t)r;
                lit = i;
                found++;
                continue;
            }
            out->len = mark;
        }
        if (!is_b64(p[i])) {
            i++;
            continue;
        }
        for (j = i; j < n && is_b64(p[j]); j++)
            ;
        for (k = j; k < n && k - j < 2 && p[k] == '='; k++)
            ;
        if (k - i >= TEXTPACK_MIN_RUN && (k - i) % 4 == 0 && (k == n || p[k] != '=')) {
            size_t mark = out->len;

            r = i > lit ? put_part(out, TAG_TEXT, p + lit, i - lit) : 0;
            if (r >= 0)
                r = b64_pack(p + i, k - i, depth, out);
            if (r < 0)
                return r;
            if (r > 0) {
                i = k;
                lit = i;
                found++;
                continue;
            }
            out->len = mark;
        }
        i = j;
    }
    if (n > lit && (r = put_part(out, TAG_TEXT, p + lit, n - lit)) < 0)
        return r;
    return found;
}

int textpack_pack(const void *text, size_t len, struct buf *out)
{
    size_t mark = out->len;
    long found = pack_level(text, len, 0, out);

    if (found > 0)
        return 1;
    /* Nothing packed, or out of memory: out as it was. */
    out->len = mark;
    if (out->data)
        out->data[mark] = '\0';
    return found < 0 ? (int)found : 0;
}

static int unpack_level(const unsigned char *p, size_t n, int depth, struct buf *out)
{
    int r = 0;

    while (r >= 0 && n) {
        unsigned char tag = *p++;
        size_t len = 0;
        const unsigned char *nul;
        struct buf inner = BUF_INIT;

        n--;
        for (unsigned shift = 0;; shift += 7) {
            if (!n || shift > 28)
                return -EINVAL;
            len |= (size_t)(*p & 0x7f) << shift;
            n--;
            if (!(*p++ & 0x80))
                break;
        }
        if (len > n)
            return -EINVAL;
        switch (tag) {
        case TAG_TEXT:
            r = buf_append(out, p, len);
            break;
        case TAG_BASE64:
            if (depth >= MAX_DEPTH)
                return -EINVAL;
            /* What a part unpacks to is about its length, a third more where it holds DER: room
             * for that at once rather than growing from nothing. */
            r = buf_reserve(&inner, len + len / 2 + 64);
            if (r >= 0)
                r = unpack_level(p, len, depth + 1, &inner);
            if (r >= 0)
                r = b64_append(out, (const unsigned char *)inner.data, inner.len);
            buf_done(&inner);
            break;
        case TAG_PEM:
            nul = memchr(p, '\0', len);
            if (!nul)
                return -EINVAL;
            r = pem_append(out, (const char *)p, (size_t)(nul - p), nul + 1,
                           len - (size_t)(nul - p) - 1);
            break;
        default:
            return -EINVAL;
        }
        p += len;
        n -= len;
    }
    return r;
}

int textpack_unpack(const void *packed, size_t len, struct buf *out)
{
    return unpack_level(packed, len, 0, out);
}
