#ifndef NESTCP_UTIL_LIST_H
#define NESTCP_UTIL_LIST_H

/*
 * An intrusive, circular, doubly linked list, in the shape of libuv's queue.h and the Linux
 * kernel's list.h. A `struct list_node` is embedded in each member, and list_entry gets from
 * the node back to the member. A list is a node of its own, its head: the head's next is the
 * first member and its prev the last, and an empty list's head points at itself both ways.
 * Nothing here allocates; every operation is O(1).
 *
 *     struct conn { struct list_node node; ... };
 *     struct list_node conns;                      list_init(&conns);
 *     list_add_tail(&conns, &c->node);
 *     list_foreach_safe(n, tmp, &conns) {
 *         struct conn *c = list_entry(n, struct conn, node);
 *         list_remove(&c->node);                   allowed in the _safe loop
 *     }
 *
 * A node taken out with list_remove points at itself again, as after list_init, so
 * list_linked tells whether a member is in a list and removing it twice is harmless. Members
 * zeroed by calloc must be list_init'ed before list_linked or list_remove is used on them.
 */

#include <stdbool.h>
#include <stddef.h>

struct list_node {
    struct list_node *prev, *next;
};

/* The member of type `type` that embeds node `ptr` as its field `member`. */
#define list_entry(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* Makes n an empty list head, or an unlinked member. */
static inline void list_init(struct list_node *n)
{
    n->prev = n->next = n;
}

/* True when the list headed by head has no member. */
static inline bool list_empty(const struct list_node *head)
{
    return head->next == head;
}

/* True when member n is in a list (n was list_init'ed, then added). */
static inline bool list_linked(const struct list_node *n)
{
    return n->next != n;
}

/* The first member's node, or NULL when the list is empty. */
static inline struct list_node *list_first(const struct list_node *head)
{
    return list_empty(head) ? NULL : head->next;
}

/* Inserts n between prev and next (which are adjacent). */
static inline void list_link_between(struct list_node *prev, struct list_node *next,
                                     struct list_node *n)
{
    n->prev = prev;
    n->next = next;
    prev->next = n;
    next->prev = n;
}

/* Adds n as the first member. */
static inline void list_add_head(struct list_node *head, struct list_node *n)
{
    list_link_between(head, head->next, n);
}

/* Adds n as the last member. */
static inline void list_add_tail(struct list_node *head, struct list_node *n)
{
    list_link_between(head->prev, head, n);
}

/* Takes n out of its list and leaves it unlinked; a no-op on an unlinked node. */
static inline void list_remove(struct list_node *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    list_init(n);
}

/* Every node of the list, first to last. The loop body must not remove pos. */
#define list_foreach(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)

/* Every node of the list, first to last; the body may remove pos (and only pos), as tmp
 * already holds the next node. */
#define list_foreach_safe(pos, tmp, head)                                                          \
    for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head);                               \
         (pos) = (tmp), (tmp) = (pos)->next)

#endif
