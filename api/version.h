#ifndef NESTCP_API_VERSION_H
#define NESTCP_API_VERSION_H

/*
 * Semver-ish versions as users write them for Kubernetes and etcd: "1.20.2", "v1.31.0",
 * "1.21.0-rc.1", "v3.4.13+build". A leading "v" is optional; major, minor and patch are all
 * required.
 */

#include <stdbool.h>
#include <stddef.h>

#define API_VERSION_MAX_LEN 64

struct api_version {
    unsigned major, minor, patch;
    char pre[API_VERSION_MAX_LEN]; /* "" or the pre-release after '-' (build metadata dropped) */
};

/* Parses s. Returns 0 or -EINVAL. */
int api_version_parse(const char *s, struct api_version *ret);

/* Orders two versions by semver precedence (build metadata ignored): <0, 0, >0. */
int api_version_cmp(const struct api_version *a, const struct api_version *b);

/* Writes "MAJOR.MINOR.PATCH[-pre]" (no leading "v") into out. */
void api_version_format(const struct api_version *v, char *out, size_t outsz);

/* Writes s in canonical form "1.20.2" (no "v") into out. Returns 0 or -EINVAL. */
int api_version_canonical(const char *s, char *out, size_t outsz);

/* True when a and b name the same version once canonical ("v1.20.2" equals "1.20.2"). */
bool api_version_equal(const char *a, const char *b);

#endif
