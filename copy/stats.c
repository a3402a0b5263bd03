/* --stats: what the copy did, for people (text) and programs (JSON, one
 * object on one line of stderr).  Every byte of the source is counted
 * once as data written, zeroed, skipped (--destination-is-zero), or
 * resumed (done by an earlier run, --resume), so those four add up to
 * the size.  After a reconnect (--retry) they count what the attempt
 * that stuck did; the earlier attempts of the bytes copied again are
 * "redone", apart.  "holes" says how much of the zeroed or skipped
 * part was never read because the source reported it as zero.
 * With --bitmap, the skipped bytes include the clean ones, and the
 * dirty bytes are what was copied (written or zeroed).
 */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>

#include "human_size.h"
#include "stats.h"

/* Why bytes were skipped (neither written nor zeroed), for the text. */
static const char *
skip_reason (const struct copy_stats *s, const struct stats_context *ctx)
{
  if (ctx->bitmap)
    return "clean in the bitmap, or already zero";
  if (s->already_zero_bytes)
    return "the destination read as zero";
  if (ctx->skip_reason && s->skipped_bytes)
    return ctx->skip_reason;
  return "none skipped";
}

/* Bytes per second over the copy's time. */
static double
per_second (uint64_t bytes, const struct stats_context *ctx)
{
  return ctx->elapsed > 0 ? bytes / ctx->elapsed : 0;
}

static void
print_text (const struct copy_stats *s, const struct stats_context *ctx)
{
  /* One buffer per figure: the arguments are all formatted before
     fprintf reads any of them. */
  char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], k[32], z[32];
  char of[48] = "";
  /* A copy that failed did only part: its bytes done, of how many. */
  uint64_t done = ctx->ok ? s->total_bytes
                          : s->data_bytes + s->zero_bytes + s->skipped_bytes
                                + s->resumed_bytes;
  double rate = per_second (done, ctx);
  uint64_t dirty = s->total_bytes - s->clean_bytes;

  if (!ctx->ok) {
    snprintf (of, sizeof of, " of ");
    human_size_format (s->total_bytes, of + 4, sizeof of - 4);
  }
  fprintf (stderr,
           "nbdcp: %s %s%s in %.2f s (%s/s)\n"
           "  data written   %s (%" PRIu64 " bytes)\n"
           "  zeroed         %s (%" PRIu64 " bytes)\n"
           "  skipped        %s (%" PRIu64 " bytes, %s)\n"
           "  never read     %s (%" PRIu64 " bytes of holes and zeroes)\n"
           "  requests       %" PRIu64 "\n"
           "  connections    source %u, destination %u; %u lane%s on %u "
           "thread%s\n",
           ctx->ok ? "copied" : "FAILED after",
           human_size_format (done, a, sizeof a), of, ctx->elapsed,
           human_size_format (rate, b, sizeof b),
           human_size_format (s->data_bytes, c, sizeof c), s->data_bytes,
           human_size_format (s->zero_bytes, d, sizeof d), s->zero_bytes,
           human_size_format (s->skipped_bytes, e, sizeof e), s->skipped_bytes,
           skip_reason (s, ctx), human_size_format (s->hole_bytes, f, sizeof f),
           s->hole_bytes, s->requests, ctx->src_connections,
           ctx->dst_connections, s->lanes, s->lanes == 1 ? "" : "s", s->workers,
           s->workers == 1 ? "" : "s");
  if (s->already_zero_bytes)
    fprintf (stderr,
             "  already zero   %s (%" PRIu64 " bytes of the skipped, where "
             "the destination said it read as zero)\n",
             human_size_format (s->already_zero_bytes, z, sizeof z),
             s->already_zero_bytes);
  /* Lines for --resume and --retry only when they did something. */
  if (s->resumed_bytes)
    fprintf (
        stderr,
        "  resumed        %s (%" PRIu64 " bytes, done by an earlier run)\n",
        human_size_format (s->resumed_bytes, g, sizeof g), s->resumed_bytes);
  if (s->retries || s->redone_bytes)
    fprintf (stderr,
             "  redone         %s (%" PRIu64 " bytes copied again "
             "after %u reconnection%s, not counted above)\n",
             human_size_format (s->redone_bytes, h, sizeof h), s->redone_bytes,
             s->retries, s->retries == 1 ? "" : "s");
  /* The limit is on reads: holes, which are not read, do not count. */
  if (ctx->rate)
    fprintf (stderr,
             "  rate limit     %s/s (--rate; %s/s read: %s in %.2f s)\n",
             human_size_format (ctx->rate, a, sizeof a),
             human_size_format (per_second (s->read_bytes, ctx), b, sizeof b),
             human_size_format (s->read_bytes, c, sizeof c), ctx->elapsed);
  if (ctx->bitmap)
    fprintf (stderr, "  dirty          %s (%" PRIu64 " bytes, bitmap %s)\n",
             human_size_format (dirty, k, sizeof k), dirty, ctx->bitmap);
}

/* STR as a JSON string. */
static void
print_json_string (const char *str)
{
  fputc ('"', stderr);
  for (const unsigned char *p = (const unsigned char *) str; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf (stderr, "\\%c", *p);
    else if (*p < 0x20)
      fprintf (stderr, "\\u%04x", *p);
    else
      fputc (*p, stderr);
  }
  fputc ('"', stderr);
}

static void
print_json (const struct copy_stats *s, const struct stats_context *ctx)
{
  fprintf (stderr,
           "{\"ok\": %s, \"size\": %" PRIu64 ", \"data_bytes\": %" PRIu64
           ", \"zero_bytes\": %" PRIu64 ", \"skipped_bytes\": %" PRIu64
           ", \"already_zero_bytes\": %" PRIu64 ", \"hole_bytes\": %" PRIu64
           ", \"resumed_bytes\": %" PRIu64 ", \"redone_bytes\": %" PRIu64
           ", \"retries\": %u"
           ", \"requests\": %" PRIu64
           ", \"source_connections\": %u, \"destination_connections\": %u"
           ", \"lanes\": %u, \"threads\": %u, \"elapsed_seconds\": %.6f"
           ", \"bytes_per_second\": %.0f, \"read_bytes\": %" PRIu64
           ", \"read_bytes_per_second\": %.0f",
           ctx->ok ? "true" : "false", s->total_bytes, s->data_bytes,
           s->zero_bytes, s->skipped_bytes, s->already_zero_bytes,
           s->hole_bytes, s->resumed_bytes, s->redone_bytes, s->retries,
           s->requests, ctx->src_connections, ctx->dst_connections, s->lanes,
           s->workers, ctx->elapsed, per_second (s->total_bytes, ctx),
           s->read_bytes, per_second (s->read_bytes, ctx));
  if (ctx->rate)
    fprintf (stderr, ", \"rate_limit\": %" PRIu64, ctx->rate);
  if (ctx->bitmap) {
    fprintf (stderr, ", \"bitmap\": ");
    print_json_string (ctx->bitmap);
    fprintf (stderr,
             ", \"dirty_bytes\": %" PRIu64 ", \"clean_bytes\": %" PRIu64,
             s->total_bytes - s->clean_bytes, s->clean_bytes);
  }
  fprintf (stderr, "}\n");
}

void
stats_add (struct copy_stats *sum, const struct copy_stats *s)
{
  sum->data_bytes += s->data_bytes;
  sum->zero_bytes += s->zero_bytes;
  sum->skipped_bytes += s->skipped_bytes;
  sum->already_zero_bytes += s->already_zero_bytes;
  sum->hole_bytes += s->hole_bytes;
  sum->resumed_bytes += s->resumed_bytes;
  sum->redone_bytes += s->redone_bytes;
  sum->retries += s->retries;
  sum->clean_bytes += s->clean_bytes;
  sum->requests += s->requests;
  sum->read_bytes += s->read_bytes;
}

uint64_t
stats_since (const struct copy_stats *s, const struct copy_stats *mark)
{
  return (s->data_bytes - mark->data_bytes) + (s->zero_bytes - mark->zero_bytes)
         + (s->skipped_bytes - mark->skipped_bytes)
         - (s->clean_bytes - mark->clean_bytes);
}

void
stats_rewind (struct copy_stats *s, const struct copy_stats *mark)
{
  s->data_bytes = mark->data_bytes;
  s->zero_bytes = mark->zero_bytes;
  s->skipped_bytes = mark->skipped_bytes;
  s->already_zero_bytes = mark->already_zero_bytes;
  s->hole_bytes = mark->hole_bytes;
  s->clean_bytes = mark->clean_bytes;
}

void
stats_print (const struct copy_stats *s, const struct stats_context *ctx,
             bool json)
{
  if (json)
    print_json (s, ctx);
  else
    print_text (s, ctx);
}
