#ifndef NESTCP_RENDER_CATALOG_H
#define NESTCP_RENDER_CATALOG_H

/*
 * The templates directory: channels and packages, laid out the way kubebuilder-declarative-pattern
 * lays out its `channels/` tree (docs/templates.md):
 *
 *     <dir>/stable, <dir>/rapid, ...                      channel files
 *     <dir>/packages/<component>/<major.minor>/package.yaml   package metadata
 *     <dir>/packages/<component>/<major.minor>/NAME.yaml      templates, run in name order
 *
 * A catalog is loaded once (every template parsed) and then only read, so the controller can
 * render as often as it likes without touching the disk.
 */

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/util/err.h"

#define RENDER_VERSION_MAX 64
#define RENDER_MAX_TEMPLATE_BYTES (256 * 1024)

struct render_catalog;
struct render_package;

/* The name lists of a package's metadata. */
enum render_names {
    RENDER_FLAGS,         /* the flags the binary accepts, without leading dashes */
    RENDER_REMOVED_FLAGS, /* flags the package lists as removed */
    RENDER_FEATURE_GATES, /* the feature gates the binary knows */
    RENDER_NAMES__COUNT,
};
struct tmpl;

/* Loads every channel and package under dir. Returns 0, -ENOENT (dir missing), -EINVAL (a
 * malformed channel, metadata file or template; e names the file and line), -ENOMEM. */
int render_catalog_open(const char *dir, struct render_catalog **ret_catalog, struct err *e);

void render_catalog_free(struct render_catalog *c);

/* Picks the package for component: an exact version (leading "v" allowed; "1.20.2" picks the
 * "1.20" package), else the newest version the channel lists (channel NULL or "" means
 * "stable"). Writes the normalised version ("1.36.3") to ret_version. Returns 0, -ENOENT (no such
 * component, channel, or package for that minor), -EOPNOTSUPP (a retired line: older than every
 * line shipped), -EINVAL (malformed version or channel name). The package is borrowed from the
 * catalog. */
int render_catalog_resolve(const struct render_catalog *c, const char *component,
                           const char *version, const char *channel,
                           const struct render_package **ret_pkg,
                           char ret_version[static RENDER_VERSION_MAX], struct err *e);

/* Known versions, for the API layer's validation catalog: a new object
 *   {"<component>": {"packages": ["1.20", "1.31"],
 *                    "channels": {"stable": "1.20.2", "rapid": "1.31.1"}}, ...}
 * (caller frees). Returns 0 or -ENOMEM. */
int render_catalog_versions(const struct render_catalog *c, cJSON **ret_versions);

/* True when version's line is older than every line of component that is shipped. */
bool render_catalog_line_retired(const struct render_catalog *c, const char *component,
                                 const char *version);

/* The lines shipped for component, "1.35, 1.36, 1.37", into out ("" when none). */
void render_catalog_lines(const struct render_catalog *c, const char *component, char *out,
                          size_t size);

/* The package of component for the minor of version ("1.31.1" or "1.31"), or NULL. */
const struct render_package *render_catalog_package(const struct render_catalog *c,
                                                    const char *component, const char *version);

/* Package accessors; strings and objects are borrowed from the catalog. */
const char *render_package_component(const struct render_package *p);
const char *render_package_line(const struct render_package *p); /* "1.20" */
/* The parsed package.yaml (component, line, image, etcd, previous). Its flags, removedFlags
 * and featureGates are kept apart, sorted (render_package_names); changes is dropped. */
const cJSON *render_package_metadata(const struct render_package *p);
/* Whether the binary of this package knows the flag (name without leading dashes). */
bool render_package_knows_flag(const struct render_package *p, const char *flag);
/* Whether the binary knows the feature gate; *ret_locked_to (may be NULL) is set to the value
 * a GA or deprecated gate is locked to, or -1 when it may be set either way. */
bool render_package_knows_feature_gate(const struct render_package *p, const char *gate,
                                       int *ret_locked_to);
/* The names of list `which`, sorted in byte order, into *ret_names; returns how many. */
size_t render_package_names(const struct render_package *p, enum render_names which,
                            const char *const **ret_names);
/* The default image for a version of this package: repository ":" prefix version suffix. */
int render_package_image(const struct render_package *p, const char *version, char *out,
                         size_t size);

/* Templates of the package, in run order. */
int render_package_template_count(const struct render_package *p);
const struct tmpl *render_package_template(const struct render_package *p, int i);

/* Splits "v1.20.2" / "1.20.2" / "1.20" into numbers; patch is -1 when absent. Returns 0 or
 * -EINVAL. */
int render_version_parse(const char *s, int *ret_major, int *ret_minor, int *ret_patch);

#endif
