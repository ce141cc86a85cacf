#include "api/cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "lib/util/strutil.h"

int api_cidr_parse(const char *s, struct api_cidr *ret)
{
    char host[API_CIDR_STRLEN];
    struct api_cidr c;
    const char *slash;
    size_t n;
    int prefix;

    if (!s)
        return -EINVAL;
    slash = strchr(s, '/');
    if (!slash)
        return -EINVAL;
    n = (size_t)(slash - s);
    if (n == 0 || n >= sizeof(host))
        return -EINVAL;
    memcpy(host, s, n);
    host[n] = '\0';
    memset(&c, 0, sizeof(c));
    if (inet_pton(AF_INET, host, c.addr) == 1)
        c.family = AF_INET;
    else if (inet_pton(AF_INET6, host, c.addr) == 1)
        c.family = AF_INET6;
    else
        return -EINVAL;
    /* The prefix is plain decimal digits: no sign, no spaces, no leading zeros. */
    if (slash[1] < '0' || slash[1] > '9' || (slash[1] == '0' && slash[2] != '\0'))
        return -EINVAL;
    if (str_to_int(slash + 1, 0, (int)api_cidr_bits(&c), &prefix) < 0)
        return -EINVAL;
    c.prefix = (unsigned)prefix;
    *ret = c;
    return 0;
}

unsigned api_cidr_bits(const struct api_cidr *c)
{
    return c->family == AF_INET ? 32 : 128;
}

static bool bit(const unsigned char *a, unsigned i)
{
    return (a[i / 8] >> (7 - i % 8)) & 1;
}

bool api_cidr_host_bits_zero(const struct api_cidr *c)
{
    for (unsigned i = c->prefix; i < api_cidr_bits(c); i++)
        if (bit(c->addr, i))
            return false;
    return true;
}

bool api_cidr_overlap(const struct api_cidr *a, const struct api_cidr *b)
{
    unsigned common = a->prefix < b->prefix ? a->prefix : b->prefix;

    if (a->family != b->family)
        return false;
    for (unsigned i = 0; i < common; i++)
        if (bit(a->addr, i) != bit(b->addr, i))
            return false;
    return true;
}

unsigned api_cidr_size_log2(const struct api_cidr *c)
{
    return api_cidr_bits(c) - c->prefix;
}

static void network(const struct api_cidr *c, unsigned char out[16])
{
    memcpy(out, c->addr, 16);
    for (unsigned i = c->prefix; i < api_cidr_bits(c); i++)
        out[i / 8] &= (unsigned char)~(1u << (7 - i % 8));
}

void api_cidr_format_network(const struct api_cidr *c, char *out, size_t outsz)
{
    unsigned char a[16];
    char text[INET6_ADDRSTRLEN];

    network(c, a);
    if (!inet_ntop(c->family, a, text, sizeof(text)))
        text[0] = '\0';
    snprintf(out, outsz, "%s/%u", text, c->prefix);
}

int api_cidr_host(const struct api_cidr *c, uint64_t n, char *out, size_t outsz)
{
    unsigned char a[16];
    char text[INET6_ADDRSTRLEN];
    unsigned len = api_cidr_bits(c) / 8;
    unsigned size = api_cidr_size_log2(c);

    if (size < 64 && n >= ((uint64_t)1 << size))
        return -ERANGE;
    network(c, a);
    /* Add n to the address, big-endian, with carry. */
    for (unsigned i = len; i-- > 0 && n;) {
        unsigned sum = a[i] + (unsigned)(n & 0xff);
        a[i] = (unsigned char)sum;
        n = (n >> 8) + (sum >> 8);
    }
    if (!inet_ntop(c->family, a, text, sizeof(text)))
        return -EINVAL;
    snprintf(out, outsz, "%s", text);
    return 0;
}

int api_ip_family(const char *s)
{
    unsigned char a[16];

    if (!s)
        return -EINVAL;
    if (inet_pton(AF_INET, s, a) == 1)
        return AF_INET;
    if (inet_pton(AF_INET6, s, a) == 1)
        return AF_INET6;
    return -EINVAL;
}
