#include "cmd/nestcp/tree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util/strutil.h"

struct node {
    char *name, *status;
    int parent;
};

struct tree {
    struct node *nodes;
    int n;
};

struct tree *tree_new(void)
{
    return calloc(1, sizeof(struct tree));
}

void tree_free(struct tree *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->n; i++) {
        free(t->nodes[i].name);
        free(t->nodes[i].status);
    }
    free(t->nodes);
    free(t);
}

int tree_add(struct tree *t, int parent, const char *name, const char *status)
{
    struct node *nodes, *nd;

    if (parent < -1 || parent >= t->n)
        return -EINVAL;
    if (t->n >= TREE_MAX_NODES)
        return -E2BIG;
    nodes = realloc(t->nodes, sizeof(*nodes) * (size_t)(t->n + 1));
    if (!nodes)
        return -ENOMEM;
    t->nodes = nodes;
    nd = &nodes[t->n];
    nd->parent = parent;
    nd->name = str_dup(name);
    nd->status = str_dup(status ? status : "");
    if (!nd->name || !nd->status) {
        free(nd->name);
        free(nd->status);
        return -ENOMEM;
    }
    return t->n++;
}

/* The last child of parent, or -1. */
static int last_child(const struct tree *t, int parent)
{
    int last = -1;

    for (int i = 0; i < t->n; i++)
        if (t->nodes[i].parent == parent)
            last = i;
    return last;
}

static int depth(const struct tree *t, int i)
{
    int d = 0;

    while (t->nodes[i].parent >= 0) {
        i = t->nodes[i].parent;
        d++;
    }
    return d;
}

/* Characters (not bytes) that the prefix and name of node i take. */
static size_t width(const struct tree *t, int i)
{
    return (size_t)depth(t, i) * 2 + strlen(t->nodes[i].name);
}

/* Appends the drawing before node i: for each ancestor below the root "│ " or "  ", then
 * "├─" or "└─". */
static int prefix(const struct tree *t, int i, struct buf *out)
{
    int chain[TREE_MAX_NODES], n = 0;

    for (int a = i; t->nodes[a].parent >= 0; a = t->nodes[a].parent)
        chain[n++] = a;
    /* chain[n-1] is the child of a root; chain[0] is i. */
    for (int k = n - 1; k >= 0; k--) {
        int a = chain[k];
        bool last = last_child(t, t->nodes[a].parent) == a;
        if (buf_puts(out, k == 0 ? (last ? "└─" : "├─") : (last ? "  " : "│ ")) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int render_subtree(const struct tree *t, int parent, size_t col, struct buf *out)
{
    for (int i = 0; i < t->n; i++) {
        if (t->nodes[i].parent != parent)
            continue;
        if (prefix(t, i, out) < 0 || buf_puts(out, t->nodes[i].name) < 0)
            return -ENOMEM;
        if (t->nodes[i].status[0] &&
            buf_printf(out, "%*s%s", (int)(col - width(t, i)), "", t->nodes[i].status) < 0)
            return -ENOMEM;
        if (buf_puts(out, "\n") < 0 || render_subtree(t, i, col, out) < 0)
            return -ENOMEM;
    }
    return 0;
}

int tree_render(const struct tree *t, struct buf *out)
{
    size_t col = strlen("OBJECT");

    for (int i = 0; i < t->n; i++)
        if (width(t, i) > col)
            col = width(t, i);
    col += 3;
    if (buf_printf(out, "%-*s%s\n", (int)col, "OBJECT", "STATUS") < 0)
        return -ENOMEM;
    return render_subtree(t, -1, col, out);
}
