/* nbdcp: copy a disk between NBD endpoints, fast and safely.
 *
 * main parses the options, opens the two endpoints, checks that the
 * copy makes sense before anything is written (destination writable
 * and large enough), settles the request and zero-detection sizes
 * against what the servers advertise, runs the engine and decides the
 * exit code: 0 only when the whole copy completed and was flushed.
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bitmap.h"
#include "blkhash.h"
#include "blkhash_file.h"
#include "clock.h"
#include "endpoint.h"
#include "engine.h"
#include "error.h"
#include "human_size.h"
#include "journal.h"
#include "journal_identity.h"
#include "job.h"
#include "minmax.h"
#include "options.h"
#include "progress.h"
#include "refuse.h"
#include "settings.h"
#include "stats.h"
#include "verify.h"

/* Connections per side that are used at most.  Each lane costs a socket
   per side and --queue-size bytes of buffers allocated up front (16 MiB
   by default), and each worker a thread stack and a ring: 1024 lanes
   meant 16 GiB of buffers and failed where address space is limited,
   for nothing, since a copy stops getting faster long before. */
#define MAX_CONNECTIONS 64
/* Descriptors left for everything but the connections and rings:
   stdio, files, libnbd's and subprocesses' pipes, --progress=FD. */
#define SPARE_FDS 32

static void
describe (const struct options *opts, const struct endpoint *ep)
{
  char size[32];

  if (ep->size < 0)
    snprintf (size, sizeof size, "unknown size, a stream");
  else
    human_size_format (ep->size, size, sizeof size);
  note (opts->verbose,
        "%s %s (%s): %" PRIi64 " bytes (%s), %u connection%s, "
        "multi-conn %s, zero %s, flush %s, extents %s, "
        "block size min %" PRIu32 " preferred %" PRIu32 " max %" PRIu32,
        ep->side, ep->spec, ep->ops->kind, ep->size, size, ep->nconns,
        ep->nconns == 1 ? "" : "s",
        ep->caps.multi_conn ? "advertised" : "not advertised",
        ep->caps.can_zero ? "yes" : "no", ep->caps.can_flush ? "yes" : "no",
        ep->caps.can_extents ? "yes" : "no", endpoint_min_block (ep),
        ep->caps.preferred_block, ep->caps.max_request);
}

/* The number of the signal that asked nbdcp to stop, or 0.  Given to
   the endpoints and the engine as a pointer: nothing else reads it by
   name. */
static volatile sig_atomic_t interrupt_signal;

static void
on_signal (int signum)
{
  interrupt_signal = signum;
}

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT only set interrupt_signal, from
 * before the first endpoint is opened to the end: the handshake and the
 * engine notice it and stop, and main closes the endpoints, which ends
 * subprocess servers and removes their sockets.  Dying at once would
 * leave those behind (a server's socket is not closed by our death if
 * the server has not accepted it yet).  SIGQUIT, which would dump core,
 * is treated as SIGTERM for the same reason.  No SA_RESTART: a blocking
 * call (a poll, opening a FIFO) returns EINTR and sees the flag.
 */
static void
catch_signals (void)
{
  struct sigaction sa = { .sa_handler = on_signal };
  sigemptyset (&sa.sa_mask);
  sigaction (SIGINT, &sa, NULL);
  sigaction (SIGTERM, &sa, NULL);
  sigaction (SIGHUP, &sa, NULL);
  sigaction (SIGQUIT, &sa, NULL);
}

/* Use no more connections than can help, nor than the open-file limit
 * allows: each lane needs a socket on each side and each worker a ring
 * descriptor (at most one per lane), so C lanes need 3 x C of them.
 */
static void
limit_connections (struct options *opts)
{
  struct rlimit rl;

  if (opts->connections > MAX_CONNECTIONS) {
    note (opts->verbose,
          "-C %u lowered to %u connections per side (more do not make "
          "the copy faster, and each costs buffers, sockets and a thread)",
          opts->connections, MAX_CONNECTIONS);
    opts->connections = MAX_CONNECTIONS;
  }
  if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
      && rl.rlim_cur < 3 * (rlim_t) opts->connections + SPARE_FDS) {
    unsigned fit = rl.rlim_cur > SPARE_FDS + 3
                       ? (unsigned) ((rl.rlim_cur - SPARE_FDS) / 3)
                       : 1;
    note (opts->verbose,
          "-C %u lowered to %u connection%s per side to fit the open "
          "file limit (ulimit -n %llu)",
          opts->connections, fit, fit == 1 ? "" : "s",
          (unsigned long long) rl.rlim_cur);
    opts->connections = fit;
  }
}

/* Destination connections worth opening: no more than the source got,
 * nor than there are segments to hand out (each lane takes whole
 * segments, so a 1 MiB disk keeps one lane busy and three idle, whose
 * handshakes only delay the start).
 */
static unsigned
useful_connections (const struct options *opts, const struct endpoint *src)
{
  unsigned n = MIN (opts->connections, src->nconns);

  if (src->size >= 0) {
    uint64_t segments = segment_count (src->size);
    if (segments < n) {
      n = MAX (segments, (uint64_t) 1);
      note (opts->verbose,
            "%u destination connection%s: the copy has %" PRIu64
            " segment%s of %" PRIu64 " bytes",
            n, n == 1 ? "" : "s", segments, segments == 1 ? "" : "s",
            SEGMENT_SIZE);
    }
  }
  return n;
}

/* If nbdcp was started with stdin, stdout or stderr closed, the first
 * socket or file it opens would get that number and '-' would copy
 * into it.  Refuse '-' or --blkhash-file=/dev/stdout (say) on a closed
 * descriptor, and fill the closed ones with /dev/null so that nothing
 * else can take them.
 */
static int
check_std_fds (const struct options *opts)
{
  for (int fd = 0; fd <= 2; fd++) {
    if (fcntl (fd, F_GETFD) != -1)
      continue;
    if (fd == 0 && strcmp (opts->src, "-") == 0 && !opts->src_command) {
      error_set ("-: standard input is closed");
      return -1;
    }
    if (fd == 1 && strcmp (opts->dst, "-") == 0 && !opts->dst_command) {
      error_set ("-: standard output is closed");
      return -1;
    }
    if (opts->blkhash_file
        && blkhash_file_descriptor (opts->blkhash_file) == fd) {
      error_set ("--blkhash-file: %s: descriptor %d is not open",
                 opts->blkhash_file, fd);
      return -1;
    }
    /* The checksum would go to /dev/null, and exit 0 say it was told. */
    if (fd == 1 && opts->blkhash && !opts->blkhash_file) {
      error_set ("--blkhash: standard output is closed: the checksum has "
                 "nowhere to go (see --blkhash-file)");
      return -1;
    }
    if (open ("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) {
      error_set ("cannot open /dev/null: %s", strerror (errno));
      return -1;
    }
  }
  return 0;
}

/* --resume: open (or create) the journal, before anything is written
 * (a destination file's size included).
 */
static int
open_journal (const struct options *opts, const struct endpoint *src,
              const struct endpoint *dst, struct journal *j)
{
  char identity[8192], found[JOURNAL_LINE_MAX], leaves[JOURNAL_LINE_MAX];
  uint64_t nsegments;

  if (src->size < 0 || src->caps.stream || dst->caps.stream) {
    error_set ("--resume: a copy from or to a stream cannot be resumed");
    return -1;
  }
  nsegments = segment_count (src->size);
  journal_copy_identity (src, dst, opts->bitmap, identity, sizeof identity);
  journal_destination_identity (src, dst, found, leaves);
  struct journal_destination dest = {
    .found = found,
    .leaves = leaves,
    .created = dst->created ? dst->spec : NULL,
  };
  if (journal_open (j, opts->resume, identity, &dest, nsegments) == -1) {
    journal_close (j, false);
    return -1;
  }
  /* Not an error: the copy starts afresh, and the user should know. */
  if (j->voided)
    fprintf (stderr,
             "nbdcp: --resume: journal %s does not match the destination: "
             "%s; copying everything\n",
             j->path, j->voided);
  if (j->existed)
    note (opts->verbose,
          "--resume: %" PRIu64 " of %" PRIu64
          " segments were finished by an earlier run",
          j->ndone, nsegments);
  return 0;
}

/* --resume: DST was created after the journal was opened, when it had
 * no inode to record yet: record the file as this run leaves it.
 */
static int
journal_record_created (const struct endpoint *src, const struct endpoint *dst,
                        struct journal *j)
{
  char found[JOURNAL_LINE_MAX], leaves[JOURNAL_LINE_MAX];

  journal_destination_identity (src, dst, found, leaves);
  return journal_set_destination (j, leaves);
}

/* The --blkhash checksum, on stdout or into --blkhash-file (the
 * checksum alone, replacing what FILE held). */
static int
print_blkhash (struct blkhash_file *bf, const char *hash)
{
  char line[2 * BLKHASH_MAX_DIGEST + 2];
  int len = snprintf (line, sizeof line, "%s\n", hash);

  if (bf->open)
    return blkhash_file_write (bf, line, len);
  if (fputs (line, stdout) == EOF || fflush (stdout) == EOF) {
    error_set ("--blkhash: %s", strerror (errno));
    return -1;
  }
  return 0;
}

/* Open the source, then the destination (-C cut to what the source
 * can use), refusing what --bitmap cannot copy and a copy of a file
 * onto itself.  *SRC and *DST are left for main to close.
 */
static int
open_endpoints (struct options *opts, const struct endpoint_settings *es,
                struct endpoint **src, struct endpoint **dst)
{
  /* A stream is copied in order, on one connection. */
  if (endpoint_is_stream (opts->src, opts->src_command, false)
      || endpoint_is_stream (opts->dst, opts->dst_command, true))
    opts->connections = 1;
  limit_connections (opts);

  *src = endpoint_open (opts->src, opts->src_command, false,
                        opts->src_command ? 1 : opts->connections, es,
                        &interrupt_signal);
  if (!*src)
    return -1;
  describe (opts, *src);
  if (interrupt_signal || check_source_size (*src) == -1
      || (opts->bitmap && bitmap_check_source (*src) == -1))
    return -1;
  *dst = endpoint_open (opts->dst, opts->dst_command, true,
                        opts->dst_command ? 1 : useful_connections (opts, *src),
                        es, &interrupt_signal);
  if (!*dst || interrupt_signal)
    return -1;
  if (check_same_file (*src, *dst))
    return -1;
  /* Before a destination file is given the source's size. */
  if (opts->bitmap && bitmap_check_destination (*src, *dst) == -1)
    return -1;
  return 0;
}

/* -v: how the copy will run. */
static void
note_copy (const struct settings *set, const struct endpoint *src)
{
  char what[64] = "until the source stream ends";

  if (src->size >= 0)
    snprintf (what, sizeof what, "%" PRIi64 " bytes", src->size);
  note (set->verbose,
        "copying %s: %u lane%s on %u thread%s, "
        "%u requests of %" PRIu32 " bytes, queue %" PRIu64
        " bytes, sparse %" PRIu32 ", extents %s%s%s",
        what, set->lanes, set->lanes == 1 ? "" : "s", set->lanes,
        set->lanes == 1 ? "" : "s", set->requests, set->request_size,
        set->queue_size, set->sparse_size, set->extents ? "on" : "off",
        set->destination_is_zero ? ", destination is zero" : "",
        set->allocated ? ", allocated" : "");
}

/* --stats: what the copy did, in ELAPSED seconds; OK if it succeeded. */
static void
print_stats (const struct options *opts, const struct settings *set,
             const struct copy_stats *stats, const struct endpoint *src,
             const struct endpoint *dst, double elapsed, bool ok)
{
  struct stats_context ctx = {
    .src_connections = src->nconns,
    .dst_connections = dst->nconns,
    .elapsed = elapsed,
    .ok = ok,
    .bitmap = set->bitmap,
    .rate = set->rate,
    .skip_reason = !set->destination_is_zero ? NULL
                   : opts->destination_is_zero
                       ? "--destination-is-zero"
                       : "the destination is new: it read as zero",
  };

  stats_print (stats, &ctx, opts->stats_json);
}

/* -v: what the copy did. */
static void
note_done (const struct options *opts, const struct copy_stats *stats,
           const struct endpoint *dst)
{
  note (opts->verbose,
        "done: %" PRIu64 " bytes data, %" PRIu64 " zeroed, %" PRIu64
        " skipped, %" PRIu64 " of source never read, %" PRIu64
        " requests; %u destination connection%s %s",
        stats->data_bytes, stats->zero_bytes, stats->skipped_bytes,
        stats->hole_bytes, stats->requests, stats->lanes,
        stats->lanes == 1 ? "" : "s",
        dst->caps.can_flush ? "flushed" : "used (no flush support)");
}

/* The copy itself, between the progress display's start and end, then
 * --stats: kept together so that both measure the engine's run and
 * nothing else (not the handshakes before it, nor --verify after it).
 * JOURNAL is --resume's or NULL.  The source's --blkhash or --verify
 * checksum goes into HASH (hexadecimal) and *SOURCE_HASH.
 */
static int
run_copy (const struct options *opts, struct settings *set,
          struct endpoint *src, struct endpoint *dst, struct journal *journal,
          struct copy_stats *stats, char *hash, struct blkhash **source_hash,
          struct progress_outs *outs)
{
  struct progress progress;
  double start;
  int r;

  progress_init (&progress, opts->progress, outs, src->size >= 0);
  start = now_seconds ();
  r = engine_run (&(struct engine_params){
      .set = set,
      .src = src,
      .dst = dst,
      .size = src->size < 0 ? UINT64_MAX : (uint64_t) src->size,
      .progress = progress_update,
      .progress_arg = &progress,
      .interrupted = &interrupt_signal,
      .journal = journal,
      .stats = stats,
      .hash_out = hash,
      .hash = source_hash,
  });
  progress_finish (&progress, 0,
                   set->bitmap ? set->dirty_bytes : stats->total_bytes, r == 0);
  if (opts->stats)
    print_stats (opts, set, stats, src, dst, now_seconds () - start, r == 0);
  return r;
}

/* What remains once every byte is copied, before the copy may be called
 * complete (and a --resume journal removed): a file written from a
 * stream is cut where the stream ended, --verify reads the destination
 * back, and --blkhash prints the checksum.  Any of them failing fails
 * the copy.
 */
static int
finish_copy (const struct options *opts, const struct settings *set,
             const struct endpoint *src, struct endpoint *dst,
             const struct copy_stats *stats, const struct blkhash *source_hash,
             const char *hash, struct blkhash_file *blkhash_file,
             struct progress_outs *outs)
{
  struct copy_stats verify_stats;
  struct progress progress;

  if (src->size < 0 && dst->ops->set_size
      && dst->ops->set_size (dst, stats->total_bytes) == -1)
    return -1;
  progress_init_verify (&progress, opts->progress, outs);
  if (opts->verify
      && verify_destination (set, opts, dst, stats->total_bytes, source_hash,
                             hash, &interrupt_signal, &progress, &verify_stats)
             == -1)
    return -1;
  if (opts->blkhash && print_blkhash (blkhash_file, hash) == -1)
    return -1;
  return 0;
}

/* Why nbdcp failed, on stderr: the message error_set() left, except
 * that whatever failed because of a signal (a handshake cut short, an
 * interrupted open) says so instead; the engine's own message says more
 * (what it was waiting for) and is kept.
 */
static void
print_error (void)
{
  if (interrupt_signal && !strstr (error_get (), "interrupted by signal"))
    error_set ("interrupted by signal %d (%s)", (int) interrupt_signal,
               strsignal (interrupt_signal));
  fprintf (stderr, "nbdcp: %s\n", error_get ());
}

int
main (int argc, char **argv)
{
  struct options opts;
  struct settings set;
  struct endpoint *src = NULL, *dst = NULL;
  struct copy_stats stats;
  struct endpoint_settings endpoint_set; /* alive as long as the endpoints */
  struct blkhash *source_hash = NULL;
  struct journal journal = { 0 };
  struct blkhash_file blkhash_file = { .open = false, .fd = -1 };
  struct progress_outs outs = { .err.fd = -1, .fd.fd = -1, .json.fd = -1 };
  bool have_journal = false;
  bool journal_made = false; /* by this run, before copying: not kept */
  int r, status = EXIT_FAILURE;
  double started = now_seconds ();

  r = options_parse (argc, argv, &opts);
  if (r != 0)
    return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;

  /* A closed socket must give an error, not kill the process. */
  signal (SIGPIPE, SIG_IGN);
  catch_signals ();
  /* Before stdin/stdout are given /dev/null or anything is opened: a
     closed progress descriptor would be the destination's number. */
  if (progress_outs_open (&outs, opts.progress ? opts.progress_fd : -1,
                          opts.progress_json_fd,
                          opts.src_command ? NULL : opts.src,
                          opts.dst_command ? NULL : opts.dst)
      == -1)
    goto fail;
  if (check_std_fds (&opts) == -1)
    goto fail;
  if (blkhash_file_open (&blkhash_file, &opts) == -1)
    goto fail;
  if (opts.verify && verify_check_destination (&opts) == -1)
    goto fail;
  if (opts.bitmap && bitmap_check_endpoints (&opts) == -1)
    goto fail;

  settings_for_endpoints (&endpoint_set, &opts);
  if (open_endpoints (&opts, &endpoint_set, &src, &dst) == -1)
    goto fail;
  if (opts.resume) {
    if (open_journal (&opts, src, dst, &journal) == -1)
      goto fail;
    have_journal = true;
    journal_made = !journal.existed;
  }
  describe (&opts, dst);
  if (check_endpoints (src, dst) == -1
      || settings_compute (&set, &opts, src, dst) == -1
      || (set.bitmap && bitmap_scan (src, &set) == -1))
    goto fail;
  /* The first change to the destination (a new file is created here),
     once everything that can refuse the copy has been checked. */
  if ((dst->ops->set_size && dst->ops->set_size (dst, src->size) == -1)
      || check_destination_size (src, dst) == -1)
    goto fail;
  /* The journal records the file as it is now it exists: a rerun finds
     it so. */
  if (have_journal && dst->created
      && journal_record_created (src, dst, &journal) == -1)
    goto fail;
  note_copy (&set, src);

  /* A journal from an earlier run (even a void one, unless this run
     created the destination) means the destination may hold that run's
     writes anywhere: it no longer reads as zero. */
  if (have_journal && (journal.existed || (journal.voided && !dst->created))
      && set.destination_is_zero) {
    note (opts.verbose, "--resume: the destination is no longer assumed to "
                        "read as zero (an earlier run wrote to it)");
    set.destination_is_zero = false;
    set.ask_destination_zero = settings_ask_destination_zero (&set, src, dst);
  }
  journal_made = false; /* from now on it may record this run's work */

  char hash[2 * BLKHASH_MAX_DIGEST + 1] = "";
  r = run_copy (&opts, &set, src, dst, have_journal ? &journal : NULL, &stats,
                hash, &source_hash, &outs);
  if (r == -1 && stats.error == EPIPE && dst->caps.stream && !opts.verbose)
    goto out; /* the reader went away (| head): end quietly */
  if (r == -1
      || finish_copy (&opts, &set, src, dst, &stats, source_hash, hash,
                      &blkhash_file, &outs)
             == -1)
    goto fail;
  /* The copy is complete: there is nothing left to resume. */
  if (have_journal) {
    have_journal = false;
    if (journal_close (&journal, true) == -1)
      goto fail;
  }
  note_done (&opts, &stats, dst);
  status = EXIT_SUCCESS;
  goto out;

fail:
  print_error ();
out:
  if (have_journal)
    journal_close (&journal, journal_made);
  blkhash_free (source_hash);
  blkhash_file_close (&blkhash_file);
  endpoint_close (src, status == EXIT_SUCCESS);
  endpoint_close (dst, status == EXIT_SUCCESS);
  progress_json_end (&outs,
                     interrupt_signal         ? "interrupted"
                     : status == EXIT_SUCCESS ? "ok"
                                              : "failed",
                     now_seconds () - started);
  progress_outs_close (&outs);
  /* Interrupted: the shell's convention, 128 + the signal number. */
  return interrupt_signal ? 128 + interrupt_signal : status;
}
