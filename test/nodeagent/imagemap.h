#ifndef NESTCP_NODEAGENT_IMAGEMAP_H
#define NESTCP_NODEAGENT_IMAGEMAP_H

/*
 * Which host binary stands in for a container image. A rule names a repository suffix and a
 * binary: the image `registry.k8s.io/etcd:3.4.23-0` has the repository `registry.k8s.io/etcd`,
 * which ends in `etcd`, so the rule `etcd /usr/bin/etcd` runs /usr/bin/etcd for it. The
 * binary `host` means "the image has no entrypoint of its own: run the container's command as a
 * host command" (for test images such as a shell).
 *
 * A rule also answers for a container command whose first word is the rule's usual binary name
 * (the suffix's last path component, e.g. `kube-apiserver` or `/usr/local/bin/kube-apiserver`),
 * so a pod spec written for a real image runs the mapped binary.
 *
 * A rule's suffix may end in a tag, `kube-apiserver:v1.36`: then it answers only for images whose
 * tag names that line or release (`v1.36`, `v1.36.3`, `1.36.3-0`; a leading v is ignored), so
 * 1.36 and 1.37 images run their own binaries side by side.
 *
 * Rules added later win over earlier ones, so a file or a flag overrides the defaults.
 */

#include <stddef.h>

#include "lib/util/err.h"

#define IMAGEMAP_HOST "host"
#define IMAGEMAP_FILE_MAX (256u << 10)

struct imagemap;

/* Returns 0 or -ENOMEM. */
int imagemap_new(struct imagemap **ret_map);
void imagemap_free(struct imagemap *m);

/* Adds the rule suffix[:tag] -> binary (an absolute path or IMAGEMAP_HOST).
 * Returns 0, -EINVAL (empty suffix or tag, relative binary), -ENOMEM. */
int imagemap_add(struct imagemap *m, const char *suffix, const char *binary);

/* Adds rules for every release that hack/kube-build.sh cached under bin_root
 * (`kubernetes-1.36.3/bin/kube-apiserver`, `etcd-3.6.17/bin/etcd`,
 * `cluster-api-1.14.2/bin/manager` for the image `cluster-api-controller`, ...): an image tagged
 * with a release runs that release, one tagged with a line (or another patch of it) the line's
 * newest release, any other tag the newest release. NULL or a missing directory adds nothing.
 * Returns 0, -ENAMETOOLONG or -ENOMEM. */
int imagemap_add_defaults(struct imagemap *m, const char *bin_root);

/* Adds the rules of a file: one `<repository-suffix> <binary>` per line; blank lines and lines
 * starting with '#' are skipped. Returns 0, -EINVAL (line number in e), -ENOENT, -ENOMEM. */
int imagemap_load_file(struct imagemap *m, const char *path, struct err *e);

/* The repository part of an image reference (tag and digest removed) into out.
 * Returns 0, -EINVAL (empty), -ENAMETOOLONG. */
int imagemap_repository(const char *image, char *out, size_t size);

/* The binary for image (borrowed from m). Returns 0 or -ENOENT when no rule matches. */
int imagemap_resolve_image(const struct imagemap *m, const char *image, const char **ret_binary);

/* The binary for a command word whose last path component is a rule's usual binary name
 * (borrowed from m), or -ENOENT. Rules whose binary is IMAGEMAP_HOST never match. */
int imagemap_resolve_command(const struct imagemap *m, const char *word, const char **ret_binary);

/* The directories of every mapped binary, ':'-separated, into out (for a container's PATH).
 * Returns 0 or -ENAMETOOLONG. */
int imagemap_bin_dirs(const struct imagemap *m, char *out, size_t size);

#endif
