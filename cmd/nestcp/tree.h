#ifndef NESTCP_CMD_TREE_H
#define NESTCP_CMD_TREE_H

/*
 * A tree of objects printed as `clusterctl describe cluster` prints one: each line an
 * object's name under its parent, drawn with ├─ └─ │, and its status aligned in a second
 * column:
 *
 *     OBJECT                          STATUS
 *     NestedControlPlane ns/a         Ready: True
 *     ├─NestedEtcd a-etcd             Ready: True
 *     │ └─StatefulSet a-etcd          1/1 ready
 *     └─NestedAPIServer a-apiserver   Ready: False (Waiting): etcd is not ready
 */

#include "lib/util/buf.h"

#define TREE_MAX_NODES 512

struct tree;

/* Returns NULL when out of memory. tree_free accepts NULL. */
struct tree *tree_new(void);
void tree_free(struct tree *t);

/* Adds a node under parent (-1: a root) with its name and status (status may be NULL; both
 * are copied). Children print in the order they were added. Returns the node's index, -EINVAL
 * (no such parent), -E2BIG (more than TREE_MAX_NODES), -ENOMEM. */
int tree_add(struct tree *t, int parent, const char *name, const char *status);

/* Appends the header line and one line per node, depth first, to out. Returns 0 or -ENOMEM. */
int tree_render(const struct tree *t, struct buf *out);

#endif
