/* Finishing requests (see op.h): the done queue, and the names of
 * operations for messages.
 */
#include <config.h>

#include <stddef.h>

#include "op.h"

static const char *const names[] = {
  [OP_READ] = "read",   [OP_WRITE] = "write",
  [OP_ZERO] = "zero",   [OP_EXTENTS] = "extents (block status)",
  [OP_FLUSH] = "flush", [OP_DEST_EXTENTS] = "extents (block status)",
};

bool
op_on_source (enum op_kind kind)
{
  return kind == OP_READ || kind == OP_EXTENTS;
}

const char *
op_what (enum op_kind kind)
{
  return names[kind];
}

struct op_io *
op_io (struct op *op)
{
  return &op->io;
}

void
op_complete (struct op *op, int err)
{
  struct op_queue *q = op->done;

  op->err = err;
  op->next = NULL;
  *q->tail = op;
  q->tail = &op->next;
}

void
op_complete_eof (struct op *op, uint32_t got)
{
  op->eof = true;
  op->got = got;
  op_complete (op, 0);
}

void
op_queue_init (struct op_queue *q)
{
  q->head = NULL;
  q->tail = &q->head;
}

struct op *
op_queue_pop (struct op_queue *q)
{
  struct op *op = q->head;

  if (op) {
    q->head = op->next;
    if (!q->head)
      q->tail = &q->head;
  }
  return op;
}

void
op_list_append (struct op_list *list, struct op *op)
{
  op->sent_next = NULL;
  op->sent_prev = list->newest;
  if (list->newest)
    list->newest->sent_next = op;
  else
    list->oldest = op;
  list->newest = op;
  list->count++;
}

void
op_list_remove (struct op_list *list, struct op *op)
{
  if (op->sent_prev)
    op->sent_prev->sent_next = op->sent_next;
  else
    list->oldest = op->sent_next;
  if (op->sent_next)
    op->sent_next->sent_prev = op->sent_prev;
  else
    list->newest = op->sent_prev;
  op->sent_prev = op->sent_next = NULL;
  list->count--;
}
