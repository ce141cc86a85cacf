#ifndef NESTCP_API_CIDR_H
#define NESTCP_API_CIDR_H

/* IPv4/IPv6 CIDR blocks ("10.96.0.0/12", "fd00:10:96::/108"), parsed with inet_pton. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define API_CIDR_STRLEN 64 /* enough for any IPv6 CIDR text plus NUL */

struct api_cidr {
    int family;             /* AF_INET or AF_INET6 */
    unsigned char addr[16]; /* network byte order; 4 bytes used for AF_INET */
    unsigned prefix;        /* 0..32 or 0..128 */
};

/* Parses "address/prefix" (both parts required). Returns 0 or -EINVAL. */
int api_cidr_parse(const char *s, struct api_cidr *ret);

/* Address length in bits: 32 or 128. */
unsigned api_cidr_bits(const struct api_cidr *c);

/* True when every bit after the prefix is zero. */
bool api_cidr_host_bits_zero(const struct api_cidr *c);

/* True when a and b are the same family and share at least one address. */
bool api_cidr_overlap(const struct api_cidr *a, const struct api_cidr *b);

/* log2 of the number of addresses in c (bits - prefix). */
unsigned api_cidr_size_log2(const struct api_cidr *c);

/* Writes c with its host bits cleared, as "address/prefix". */
void api_cidr_format_network(const struct api_cidr *c, char *out, size_t outsz);

/* Writes the n-th address of the block (n = 0 is the network address) without a prefix, e.g.
 * the first service IP is n = 1. Returns 0 or -ERANGE when n is outside the block. */
int api_cidr_host(const struct api_cidr *c, uint64_t n, char *out, size_t outsz);

/* Parses a bare IP address. Returns AF_INET, AF_INET6 or -EINVAL. */
int api_ip_family(const char *s);

#endif
