#!/bin/bash
# Mutation check: does the test suite notice lost or wrong data?
#
# Each mutation below is one deliberate, realistic bug in nbdcp.  For
# each, a copy of the source tree gets that bug alone, is built (plain
# ./configure: no sanitizers, no -Werror), and the tests are run against
# the mutant, one at a time, most likely catchers first, until one
# fails: that test is the mutation's catcher.  A mutation that no test
# catches is a hole in the suite, and the script exits non-zero.  It is
# not part of `make check` or of scripts/check.sh: it takes a while.
#
#   make mutation-check                 # every mutation (over an hour)
#   make mutation-check MUTATIONS=drop-segment,misalign
#   make mutation-check MUTATION_ALL=1  # every test on every mutant:
#                                       # lists all catchers (slow)
#   scripts/mutation-check.sh --list    # the mutations
#   scripts/mutation-check.sh --check-anchors  # only check the list
#
# Other settings (environment, or on make's command line):
#   MUTATION_TESTS="tests/test-a.sh ..."  run these shell tests only,
#                                       in this order
#   MUTATION_TIMEOUT=300                seconds a test may take; a test
#                                       that times out counts as failed
#   MUTATION_CONFIRM=1                  a test that fails on a mutant is
#                                       run again on the unmutated
#                                       program; if it fails there too it
#                                       is flaky, does not count, and the
#                                       next test is tried (0: off)
#   MUTATION_KEEP=1                     keep the scratch directory
#   TMPDIR                              where the scratch directory goes
#
# How it works.  The tree is the worktree's files as git knows them
# (tracked, plus untracked files that are not ignored, so new tests
# count before they are committed), copied to a scratch directory and
# autoreconf'd once.  The tree is copied afresh for every mutation to
# the same path, and one out-of-tree build directory is reused, so only
# the mutated file (and the one mutated before it) is recompiled.  A
# baseline run with no mutation must pass every chosen test first, or
# the suite itself is broken and the script stops.  The C unit tests
# (make check_PROGRAMS) run first for a mutation that changes their
# binary.  Tests that skipped on the baseline are not run on mutants.
#
# Defining a mutation: `mutation NAME FILE FIND REPLACE [NOTE]`.  FIND
# must occur exactly once in FILE, or the script fails naming the
# mutation: when the code changes, the list must be kept up to date.
# The replacement is done by python3 with the texts taken verbatim
# from the environment, so no escaping beyond the shell's quotes.  A
# NOTE starting with "expected survivor:" marks a mutation that no
# test can see (and explains why): it is still run, to show that, and
# does not make the script fail.
#
# nbdcp checks its own accounting at the end of a copy (every byte of
# every segment written, zeroed or skipped exactly once: job.c,
# job_check_accounting) and fails with "internal error: ..." if not.
# Several mutations are caught by that self-check rather than by a
# test's oracle.  Both count as caught; but to show that the tests
# themselves see the damage, a mutation caught by the self-check is run
# again with the self-check switched off as well (the mutation
# segment-accounting-off applied too), and the catcher of that run is
# shown as "without it: TEST".  If no test catches it then, the table
# says so ("self-check only"), and the script fails too.
#
# segment-accounting-off on its own is an expected survivor: with a
# correct engine the self-check never fires, so no test of the
# program's behaviour can tell it is gone (only a test hook in nbdcp
# could, and nbdcp has none).  It is observed here instead, through the
# mutations it catches.
set -u
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)

M_NAME=() M_FILE=() M_FIND=() M_REPL=() M_NOTE=()

# mutation NAME FILE FIND REPLACE [NOTE]
mutation ()
{
  M_NAME+=("$1")
  M_FILE+=("$2")
  M_FIND+=("$3")
  M_REPL+=("$4")
  M_NOTE+=("${5:-}")
}

# --- The mutations -------------------------------------------------------

# The three ways of ignoring a failed request share one place: the top
# of lane_op_done, where an error would stop the copy.
op_done_top='  l->activity[side].progress_ms = now_ms ();
  op->in_flight = false;
'

mutation drop-segment copy/lane.c \
'    if (r == 0)
      index = atomic_fetch_add (&job->next_segment, 1);
' \
'    if (r == 0)
      index = atomic_fetch_add (&job->next_segment, 1);

    /* Segment 1 is passed over as if it were done (and counted so). */
    if (index == 1 && index < job->nsegments) {
      uint64_t len = MIN (SEGMENT_SIZE,
                          (uint64_t) atomic_load (&job->size) - SEGMENT_SIZE);
      l->stats.skipped_bytes += len;
      job_count_done (job, SEGMENT_SIZE, len);
      index = atomic_fetch_add (&job->next_segment, 1);
    }
'

mutation tail-off-by-one copy/lane.c \
'  l->segment_end = segment_end (atomic_load (&l->job->size), index);' \
'  l->segment_end = segment_end (atomic_load (&l->job->size) - 1, index);'

mutation skip-zero-run copy/lane.c \
'    if (runs[i].zero && set->destination_is_zero) {' \
'    if (runs[i].zero && (set->destination_is_zero || i <= 1)) {'

mutation zero-where-data copy/lane.c \
'    if (runs[i].zero) {
      if (lane_zero (l, op, b, offset, runs[i].length) == -1)' \
'    if (runs[i].zero || (n > 1 && i == n - 1)) {
      if (lane_zero (l, op, b, offset, runs[i].length) == -1)'

mutation ignore-read-error copy/lane.c "$op_done_top" \
"$op_done_top"'  if (op->kind == OP_READ)
    op->err = 0;
'

mutation ignore-write-error copy/lane.c "$op_done_top" \
"$op_done_top"'  if (op->kind == OP_WRITE)
    op->err = 0;
'

mutation ignore-flush-error copy/lane.c "$op_done_top" \
"$op_done_top"'  if (op->kind == OP_FLUSH)
    op->err = 0;
'

mutation skip-flush-one-connection copy/lane.c \
'    lane_segment_finished (l);
  lane_flush (l, LANE_FLUSHING);' \
'    lane_segment_finished (l);
  if (l->index == 1) {
    l->state = LANE_DONE;
    return;
  }
  lane_flush (l, LANE_FLUSHING);'

mutation flush-too-early copy/lane.c \
'  if (l->state != LANE_COPYING || l->inflight > 0 || !(stopped || nothing_left))' \
'  if (l->state != LANE_COPYING || !(stopped || nothing_left))'

mutation skip-hole-zeroing copy/lane.c \
'  if (already_zero) {
    lane_features_zero_taken' \
'  if (already_zero || !l->set->allocated) {
    lane_features_zero_taken'

mutation wrong-buffer-offset copy/lane.c \
'      if (dst->ops->write (l->dst, data + runs[i].offset, runs[i].length,' \
'      if (dst->ops->write (l->dst, data, runs[i].length,'

mutation progress-early copy/progress.c \
'  if (percent >= 100)
    percent = 99;
' \
''

mutation progress-100-on-failure copy/progress.c \
'    if (ok)
      write_fd_line (p, 100);' \
'    write_fd_line (p, 100);'

# -p without a terminal: a copy that passes several 10% steps between
# two looks prints only the last of them (the lines came at 4, 13,
# 24, ... before), or rates the lines with the smoothed rate, which is
# 0 until its first sample ("0 bytes/s").
mutation progress-lines-last-step-only copy/progress.c \
'  for (int step = p->last_step + 1; step <= last_step; step++) {' \
'  for (int step = last_step > p->last_step ? last_step : last_step + 1;
       step <= last_step; step++) {'

mutation progress-lines-smoothed-rate copy/progress.c \
'  double rate = average_rate (p, done);' \
'  double rate = p->rate;'

# -p on a terminal: each redraw on a line of its own instead of over
# the last one, or a spinner that never turns.
mutation progress-bar-newline-each copy/progress.c \
'           final ? "\n" : "\r");' \
'           "\n");'

mutation progress-bar-spinner-still copy/progress.c \
'      p->spinner = (p->spinner + 1) % NR_SPINNER;' \
'      p->spinner = p->spinner % NR_SPINNER;'

mutation stream-lose-tail copy/stream.c \
'    op_complete_eof (op, got);' \
'    op_complete_eof (op, 0);'

mutation misalign copy/extents.c \
'  if (block <= 1 || list->len == 0)
    return;' \
'  if (block > 1 || list->len == 0)
    return;'

mutation extents-past-range copy/extents.c \
'  if (end > list->end)
    end = list->end;
' \
''

# Fragmented sources (docs/design.md): short holes between data not
# joined (read one extent at a time again), joined without their length
# (what follows them lands in the wrong place), a short block status
# answer asked about again rather than read on (a request per extent
# from a server that answers one at a time), and read on past the end
# of the range (past the end of the disk).
mutation fold-off copy/extents.c \
'  if (!zero && list->len >= 2 && last->length < list->fold_below) {' \
'  if (false && !zero && list->len >= 2 && last->length < list->fold_below) {'

mutation fold-loses-hole copy/extents.c \
'    list->v[list->len - 1].length += last->length + length;' \
'    list->v[list->len - 1].length += length;'

mutation read-on-off copy/extents.c \
'  if (!last || covered >= list->end || request == 0)' \
'  if (true || !last || covered >= list->end || request == 0)'

mutation read-on-past-end copy/extents.c \
'  end = MIN (end, list->end);
' \
''

# A buffer split into fewer runs than it has zero-detection blocks: the
# rest is written as data, and a fragmented source's holes, now read
# with the data, are allocated on the destination.
mutation runs-per-buffer-fixed copy/lane.c \
'  blocks = MAX (blocks, (uint64_t) MIN_RUNS_PER_BUFFER);' \
'  blocks = MIN_RUNS_PER_BUFFER;'

mutation allocated-punches copy/nbd.c \
'  uint32_t flags = allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0;' \
'  uint32_t flags = 0;'

mutation hole-as-zero copy/nbd.c \
'                     entries[i + 1] & LIBNBD_STATE_ZERO);' \
'                     entries[i + 1] & LIBNBD_STATE_HOLE);'

mutation extents-offset-stuck copy/nbd.c \
'                     entries[i + 1] & LIBNBD_STATE_ZERO);
    offset += entries[i];
' \
'                     entries[i + 1] & LIBNBD_STATE_ZERO);
'

mutation file-old-data-as-zero copy/file.c \
'    .starts_zero = writable && S_ISREG (st.st_mode) && st.st_size == 0,' \
'    .starts_zero = writable && S_ISREG (st.st_mode) && st.st_size >= 0,'

mutation is-zero-head-only lib/is_zero.h \
'  return len <= head || memcmp (buf, buf + head, len - head) == 0;' \
'  return true;'

mutation stream-file-not-cut copy/main.c \
'  if (src->size < 0 && dst->ops->set_size
      && dst->ops->set_size (dst, stats->total_bytes) == -1)
    return -1;
' \
''

mutation failed-copy-exits-0 copy/main.c \
'  if (r == -1
      || finish_copy (' \
'  if (finish_copy ('

mutation verify-always-equal copy/verify.c \
'  if (strcmp (hex, source_hex) != 0) {' \
'  if (strcmp (hex, source_hex) != 0 && 0) {'

# --stats counting the zero blocks found in what was read, and skipped
# with --destination-is-zero, as holes (never read): too many, which
# only an exact check of hole_bytes sees.
mutation stats-skipped-zeroes-as-holes copy/lane.c \
'    if (runs[i].zero && set->destination_is_zero) {
      l->stats.skipped_bytes += runs[i].length;' \
'    if (runs[i].zero && set->destination_is_zero) {
      l->stats.skipped_bytes += runs[i].length;
      l->stats.hole_bytes += runs[i].length;'

# --bitmap: a dirty zero piece joined by the dirty data piece right
# after it (one dirty run, two base:allocation extents): the data is
# zeroed, not copied.
mutation bitmap-zero-swallows-data copy/extents.c \
'  if (last && last->clean == clean && (clean || last->zero == zero)) {' \
'  if (last && last->clean == clean) {'

# --verify believing the destination's holes again where the source had
# data (issue 27), and --verify=full asking for block status after all.
mutation verify-trusts-destination-holes copy/feature_verify_map.c \
'  return blkhash_read_run (copied, offset, len, read);' \
'  *read = false;
  return copied ? len : 0;'

mutation verify-full-skips-holes copy/verify.c \
'  if (opts->verify_full)
    set.extents = false;' \
'  if (opts->verify_full)
    (void) 0;'

# --retry copying again only what was in progress, not the finished
# segments that were not flushed yet (lost by a server that restarts).
mutation retry-redo-in-progress-only copy/feature_checkpoint.c \
'  for (unsigned i = 0; i < c->nunflushed; i++)
    c->redo[c->nredo++] = c->unflushed[i];
' \
''

# --retry with --blkhash: a segment copied again keeps counting the
# first attempt's hashed bytes, so its digest slot is complete before
# every block was hashed again (issue 27, item 1): a wrong checksum over
# a correct copy.
mutation retry-hash-count-kept copy/blkhash.c \
'      hl->slots[k]->bytes = 0;' \
'      (void) 0;'

# --stats after a reconnection counting the bytes copied again in data
# and zeroed as well as in redone, so that they add up to more than the
# size (issue 27, item 6).
mutation retry-stats-count-redone copy/feature_checkpoint.c \
'  stats_rewind (c->stats, &c->stats_at_flush);
' \
''

mutation resume-ignores-journal copy/feature_resume.c \
'  return journal_is_done (journal, index);' \
'  return false && journal_is_done (journal, index);'

# --resume recording a segment in its journal when its requests
# finish, before the flush that makes them durable: a destination that
# dies before that flush loses them, and a rerun skips them.
mutation journal-before-flush copy/feature_checkpoint.c \
'  c->unflushed[c->nunflushed++] = index;' \
'  if (c->job->journal)
    job_segments_flushed (c->job, &index, 1);
  c->unflushed[c->nunflushed++] = index;'

# --resume going on when its journal cannot be written (the main thread
# writes it; the failure must fail the copy).
mutation journal-write-error-ignored copy/job.c \
'      if (journal_write (job->journal) == -1)
        job_fail_text (job, error_get ());' \
'      journal_write (job->journal);'

# --bitmap: copying clean ranges too (every byte accounted, the copy
# equal: only the destination's log of where it was written can tell),
# and skipping dirty ranges that became holes.
mutation bitmap-copies-clean copy/nbd.c \
'                       !(entries[i + 1] & BITMAP_STATE_DIRTY));' \
'                       false);'

mutation bitmap-skips-dirty-holes copy/lane.c \
'    if (e->clean) {
      lane_skip_clean (l, e);' \
'    if (e->clean || e->zero) {
      lane_skip_clean (l, e);'

# --bitmap onto a destination file smaller than the source: the file
# is extended with zeroes and the copy "succeeds", differing from the
# source.
mutation bitmap-small-destination copy/main.c \
'  if (opts->bitmap && bitmap_check_destination (*src, *dst) == -1)' \
'  if (false)'

# --blkhash-file opened only at the end, after the whole copy (a file
# that cannot be created is found too late); and a server whose
# connections report different sizes taken at the first one's word.
mutation blkhash-file-opened-late copy/main.c \
'  if (blkhash_file_open (&blkhash_file, &opts) == -1)
    goto fail;
' \
''

mutation connection-sizes-unchecked copy/nbd_connect.c \
'    if (nbd_get_size (h[i]) != ep->size) {' \
'    if (false) {'

# The zero run learnt past a segment (zero_run.h): taken one segment
# too far (the data after a hole is lost), segments inside it passed
# over instead of zeroed (the destination keeps its old data), and no
# looking past segments at all (one request per segment, as before).
mutation zero-run-too-long copy/source_extents.c \
'    zero_run_learn (s->zero_run, end, zero_end);' \
'    zero_run_learn (s->zero_run, end, zero_end + ((uint64_t) 128 << 20));'

mutation zero-run-not-zeroed copy/source_extents.c \
'    extent_list_add (list, pos, len, true);
    extent_list_align (list, set->align);
    s->look_past_segment = true;' \
'    extent_list_add (list, pos, len, true);
    extent_list_align (list, set->align);
    list->v[0].clean = true;
    s->look_past_segment = true;'

mutation no-hole-lookahead copy/source_extents.c \
'  s->look_past_segment = list->len > 0 && list->v[list->len - 1].zero' \
'  s->look_past_segment = false && list->len > 0 && list->v[list->len - 1].zero'

# A look past the segment after any hole at its end, however small
# (a fragmented disk makes the server describe segments twice).
mutation look-past-small-hole copy/source_extents.c \
'&& list->v[list->len - 1].length >= LOOK_PAST_MIN_HOLE' \
'&& list->v[list->len - 1].length >= 1'

mutation connections-not-cut-to-threads copy/options.c \
'  opts->connections = opts->threads;' \
'  (void) 0;'

mutation ring-no-fallback copy/ring.c \
'  return io_uring_queue_init (entries, ring, 0);' \
'  return -EINVAL;' \
"a kernel without the 6.1 ring flags gets no ring: copies fail there"

mutation read-mid-send copy/nbd.c \
'  if (!was_ready && !c->parked && !fd_readable (c->fd)) {' \
'  if (false && !was_ready && !c->parked && !fd_readable (c->fd)) {' \
"libnbd told to read while it is still sending a request: the send stalls"

# Written for the randomized differential test (test-random-copies.sh):
# slips at sizes no fixed test uses.
mutation sparse-out-of-runs-drops-tail copy/sparse.c \
'        runs[n++] = (struct run){ pos, len - pos, false };' \
'        (void) 0;' \
"more zero/data changes in a buffer than runs: the tail after a zero run is never written"

mutation sparse-last-block-whole copy/sparse.c \
'    size_t step = MIN (block, len - pos);' \
'    size_t step = block;' \
"a buffer that is not a multiple of -S: the last run reaches past the buffer"

mutation huge-pool-rounded-down copy/pool.c \
'  if (posix_memalign (&base, align, bytes) != 0) {' \
'  if (posix_memalign (&base, align,
                      align == HUGE_PAGE ? bytes / HUGE_PAGE * HUGE_PAGE
                                         : bytes)
      != 0) {' \
"expected survivor: a pool not a multiple of 2 MiB allocated short by the rest: its last buffers overflow the heap, which the plain build this script makes does not show (glibc's allocation is larger); the ASan build's test-random-copies.sh (queue sizes not multiples of 2 MiB) reports it (seen: a heap-buffer-overflow in recv, in the third case of a run)"

mutation dest-zero-trusts-data copy/dest_zero.c \
'  *reads_zero = e && e->zero;' \
'  *reads_zero = e != NULL;' \
"a destination's data taken to read as zero: old data left under the source's holes"

mutation dest-zero-buffer-unchecked copy/lane.c \
'  b->dest_zero = l->dest.ask && dest_zero_covers (&l->dest, e->offset, len);' \
'  b->dest_zero = l->dest.ask;' \
"zero blocks inside data skipped whatever the destination holds there"

# Edges at a smaller grain than a whole extent: --verify's record of
# where the source was read, one 64 KiB granule at a read's ends
# (test-verify-lying-holes.sh, cases 2b).
mutation verify-map-misses-last-granule copy/blkhash.c \
'    for (uint64_t g = start / h->granule; g <= (start + len - 1) / h->granule;' \
'    for (uint64_t g = start / h->granule; g < (start + len - 1) / h->granule;' \
"the last granule of a read is not recorded: --verify trusts a hole the destination claims there"

mutation verify-map-misses-first-granule copy/blkhash.c \
'    for (uint64_t g = start / h->granule; g <= (start + len - 1) / h->granule;' \
'    for (uint64_t g = start / h->granule + 1; g <= (start + len - 1) / h->granule;' \
"the first granule of a read is not recorded: --verify trusts a hole the destination claims there"

mutation verify-run-one-granule-long copy/blkhash.c \
'      return g * h->granule - offset;' \
'      return (g + 1) * h->granule - offset;' \
"a run of unread granules reaches one granule into the read ones: --verify trusts the destination's hole there"

mutation progress-stuck-at-zero copy/job.c \
'  *done = all - MIN (clean, all);
' \
'  *done = all - MIN (clean, all);
  if (*done < atomic_load (&job->size))
    *done = 0;
' \
"progress reads 0% until the copy is complete, then every step at once"

mutation read-on-after-reply-off copy/nbd.c \
'  c->more = c->commands_done != before;' \
'  c->more = false;' \
"every reply followed by a poll and a wait: a system call more per request"

mutation ring-entered-empty copy/engine.c \
'  if (io_uring_sq_ready (ring) > 0) {' \
'  if (true || io_uring_sq_ready (ring) > 0) {' \
"the ring entered after every reply, with nothing to submit: a system call per request"

mutation poll-before-every-read copy/nbd.c \
'  if (!was_ready && !c->parked && !fd_readable (c->fd)) {' \
'  if (!fd_readable (c->fd) && !was_ready && !c->parked) {' \
"a poll of the socket before every read, even when libnbd waits for a reply"

mutation bar-stars-rounded-up copy/progress.c \
'  stars = (percent * BAR_WIDTH + 50) / 100;' \
'  stars = (percent * BAR_WIDTH + 99) / 100;' \
"the bar longer than its percent (22% drawn as 9 of 40, a quarter as 10)"

mutation fd-progress-no-zero-first copy/progress.c \
'  if (enabled && fd >= 0) {
    write_fd_line (p, 0);' \
'  if (false && enabled && fd >= 0) {
    write_fd_line (p, 0);' \
"--progress=FD's first line is not 0/100 as nbdcopy's"

mutation never-unpark copy/nbd.c \
'  if (c->parked)
    conn_read (c);' \
'  (void) 0;' \
"commands issued on a parked handle wait for a reply that may never come"

mutation blkhash-partials-kept-on-rewind copy/blkhash.c \
'        && hl->partials[i].offset / SEGMENT_SIZE == segment)
      hl->partials[i].offset = PARTIAL_FREE;' \
'        && hl->partials[i].offset / SEGMENT_SIZE == segment)
      (void) 0;' \
"a --blkhash block gathered from several reads keeps its pieces from before a reconnection: it completes early, and the pieces read again find no place"

mutation bitmap-redone-counts-clean copy/stats.c \
'         + (s->skipped_bytes - mark->skipped_bytes)
         - (s->clean_bytes - mark->clean_bytes);' \
'         + (s->skipped_bytes - mark->skipped_bytes);' \
"--bitmap --retry counts the clean ranges passed over as redone: nearly the whole disk"

mutation retries-count-only-connected copy/lane_recover.c \
'  l->attempts++;
  /* Every attempt counts, whether or not it connects. */
  l->stats.retries++;' \
'  l->attempts++;
  if (l->attempts == 1)
    l->stats.retries++;' \
"only the first attempt after each break is counted: the failed reconnection attempts are missing from \"retries\""

# Written for the fault matrix (test-fault-matrix.sh): failure points
# no other test reached, and features that meet only when a server
# fails.  The matrix's cases that catch them, in the same order:
# flush/checkpoint/die/retry (exit 0, data lost) and
# flush/checkpoint/error/resume (the journal lists a segment not in
# the file); flush/checkpoint/error/resume; flush/final/die/retry;
# write/mid/die/retry+blkhash (the checksum differs).
mutation flush-error-taken-as-flushed copy/lane.c \
'      if (!l->broken)
        l->state = LANE_DONE;
      break;
    }' \
'      if (!l->broken)
        l->state = LANE_DONE;
    }' \
"a flush that failed (or whose server died) hands its segments over as done: the journal lists them, --retry never copies them again"

mutation journal-at-flush-sent copy/feature_checkpoint.c \
'  return c->unflushed_bytes >= c->flush_after;' \
'  if (c->unflushed_bytes >= c->flush_after && c->job->journal)
    job_segments_flushed (c->job, c->unflushed, c->nunflushed);
  return c->unflushed_bytes >= c->flush_after;' \
"--resume's journal is given a checkpoint's segments when the flush is decided, not when it succeeds"

mutation rewind-forgets-unflushed copy/feature_checkpoint.c \
'  for (unsigned i = 0; i < c->nunflushed; i++)
    c->redo[c->nredo++] = c->unflushed[i];
  if (c->segment != NO_SEGMENT)' \
'  if (c->segment != NO_SEGMENT)' \
"--retry copies again only the segment it was in, not the finished ones a destination that died has lost"

mutation retry-hash-not-restarted copy/feature_blkhash.c \
'  blkhash_restart_segment (&h->lane, segment);' \
'  (void) h;' \
"with --retry --blkhash a segment copied again is hashed again over what its first attempt hashed"

# --timeout counts from a connection's last reply, not from when the
# oldest request was sent: on a slow but working server a request may
# queue behind others for longer than the timeout.
mutation timeout-from-send copy/lane_recover.c \
'        && now - l->activity[side].progress_ms >= limit_ms)' \
'        && now - lane_oldest_on (l, side)->sent_ms >= limit_ms)' \
"--timeout fires on a request that waited in a slow server's queue longer than the timeout, though replies kept coming"

mutation segment-accounting-off copy/job.c \
'  uint64_t size = atomic_load (&job->size);
' \
'  uint64_t size = atomic_load (&job->size);

  if (size == size)
    return 0;
' \
'expected survivor: the self-check never fires when the engine is right, so no behaviour test can see it go; it shows its worth in the mutations it catches (the "without it:" runs switch it off)'

# --------------------------------------------------------------------------

die ()
{
  echo "mutation-check: $*" >&2
  exit 2
}

index_of ()
{
  local i
  for i in "${!M_NAME[@]}"; do
    [ "${M_NAME[$i]}" = "$1" ] && { echo "$i"; return 0; }
  done
  return 1
}

# apply I TREE [check]: apply mutation I to TREE, or with "check" only
# check that its text to find occurs exactly once.
apply ()
{
  local i=$1 tree=$2 mode=${3:-apply}
  MUT_NAME=${M_NAME[$i]} MUT_FIND=${M_FIND[$i]} MUT_REPL=${M_REPL[$i]} \
    MUT_MODE=$mode python3 - "$tree/${M_FILE[$i]}" <<'EOF'
import os, sys
path = sys.argv[1]
name, find, repl = (os.environ["MUT_NAME"], os.environ["MUT_FIND"],
                    os.environ["MUT_REPL"])
try:
    with open(path) as f:
        text = f.read()
except OSError as e:
    sys.exit("mutation-check: mutation %s: cannot read %s: %s"
             % (name, path, e.strerror))
n = text.count(find)
if n != 1:
    sys.exit("mutation-check: mutation %s: the text to find occurs %d times "
             "in %s, not once: update the mutation list in "
             "scripts/mutation-check.sh\n--- text to find:\n%s"
             % (name, n, path, find))
if os.environ["MUT_MODE"] == "apply":
    with open(path, "w") as f:
        f.write(text.replace(find, repl))
EOF
}

check_anchors ()
{
  local i bad=0
  for i in "${!M_NAME[@]}"; do
    apply "$i" "$1" check || bad=1
  done
  return $bad
}

case "${1:-}" in
  --list)
    for i in "${!M_NAME[@]}"; do
      printf '%-26s %s%s\n' "${M_NAME[$i]}" "${M_FILE[$i]}" \
        "${M_NOTE[$i]:+  (${M_NOTE[$i]%%:*})}"
    done
    exit 0 ;;
  --check-anchors)
    check_anchors "$top" && echo "mutation-check: all ${#M_NAME[@]} anchors found once"
    exit ;;
  "") ;;
  *) die "unknown argument '$1' (try --list or --check-anchors)" ;;
esac

command -v python3 >/dev/null || die "python3 is needed"
command -v git >/dev/null && git -C "$top" rev-parse --git-dir >/dev/null 2>&1 ||
  die "$top is not a git checkout: the tree to mutate is what git knows"

# The mutations to run.
selected=()
if [ -n "${MUTATIONS:-}" ]; then
  IFS=, read -r -a names <<<"$MUTATIONS"
  for n in "${names[@]}"; do
    i=$(index_of "$n") || die "no mutation named '$n' (see --list)"
    selected+=("$i")
  done
else
  selected=("${!M_NAME[@]}")
fi
acct=$(index_of segment-accounting-off) || die "segment-accounting-off is missing"

# The shell tests, most likely catchers first: quick copies checked by
# an independent oracle (cmp, qemu-img compare, checkwrite, a
# self-checking sparse-random, request traces), and the error paths
# (which fail fast when an error is ignored), and the tests written
# for one mutation's feature (retry, --bitmap onto a small file, the
# progress forms, ...); then the rest in
# Makefile.am's order, slow valgrind runs last.
first="tests/test-holes-not-read.sh tests/test-old-data-overwritten.sh
  tests/test-server-errors.sh tests/test-streams.sh tests/test-hole-not-zero.sh
  tests/test-hole-lookahead.sh tests/test-progress-failed-copy.sh tests/test-flush-every-connection.sh
  tests/test-file-endpoints.sh tests/test-checkwrite.sh tests/test-allocated.sh
  tests/test-destination-is-zero.sh tests/test-block-size-constraints.sh
  tests/test-sparse-random-copy.sh tests/test-progress-fd.sh
  tests/test-verify.sh tests/test-verify-lying-holes.sh tests/test-bitmap.sh
  tests/test-resume.sh tests/test-resume-durable.sh
  tests/test-resume-journal-write.sh tests/test-retry.sh
  tests/test-retry-blkhash.sh tests/test-retry-stats.sh
  tests/test-bitmap-smaller-destination.sh tests/test-blkhash-file-opened-first.sh
  tests/test-source-size-differs.sh tests/test-fragmented-source.sh
  tests/test-stats-json.sh tests/test-progress-bar.sh tests/test-progress-lines.sh
  tests/test-interrupt.sh"
last="tests/test-valgrind-clean.sh tests/test-no-allocation-per-request.sh"
all_tests=$(sed -n '/^SHELL_TESTS = /,/^TESTS = /p' "$top/Makefile.am" |
  grep -o 'tests/test-[A-Za-z0-9_-]*\.sh')
if [ -n "${MUTATION_TESTS:-}" ]; then
  tests=$MUTATION_TESTS
else
  tests=
  for t in $first; do
    grep -qx "$t" <<<"$all_tests" && tests="$tests $t"
  done
  for t in $all_tests; do
    case " $first $last " in *[[:space:]]$t[[:space:]]*) continue ;; esac
    tests="$tests $t"
  done
  for t in $last; do
    grep -qx "$t" <<<"$all_tests" && tests="$tests $t"
  done
fi
for t in $tests; do
  [ -f "$top/$t" ] || die "no such test: $t"
done
unit_tests=$(awk '/^check_PROGRAMS = /{on = 1} on {print; if ($0 !~ /\\$/) exit}' \
  "$top/Makefile.am" | grep -o 'tests/test-[A-Za-z0-9_-]*' || :)

timeout_s=${MUTATION_TIMEOUT:-300}
# The fault matrix runs all its cases on a mutant, not as many as its
# time budget allows from a place that changes per run.
export FAULT_MATRIX_BUDGET=${FAULT_MATRIX_BUDGET:-0}
confirm=${MUTATION_CONFIRM:-1}
jobs=$(nproc 2>/dev/null || echo 2)

work=$(mktemp -d "${TMPDIR:-/tmp}/nbdcp-mutation.XXXXXX") ||
  die "cannot make a scratch directory"
keep=${MUTATION_KEEP:-0}
cleanup ()
{
  if [ "$keep" = 1 ]; then
    echo "mutation-check: scratch directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say () { echo "mutation-check: $*"; }

# --- The tree and the build --------------------------------------------

say "scratch directory $work"
mkdir -p "$work/pristine" "$work/build" "$work/baseline" "$work/logs"
(
  cd "$top" &&
    git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do
      [ -e "$f" ] && printf '%s\0' "$f"
    done | tar --null -T - -cf -
) | tar -C "$work/pristine" -xf - || die "cannot copy the tree"
check_anchors "$work/pristine" || { keep=1; exit 2; }
say "autoreconf"
(cd "$work/pristine" && mkdir -p m4 && autoreconf -fi) >"$work/autoreconf.log" 2>&1 ||
  { keep=1; die "autoreconf failed: see $work/autoreconf.log"; }

tree=$work/tree
build=$work/build
touched=()

# fresh_tree: the pristine tree at $tree, with the files mutated last
# time made newer than their objects, so that make rebuilds them.
fresh_tree ()
{
  rm -rf "$tree"
  cp -a "$work/pristine" "$tree"
  local f
  for f in "${touched[@]}"; do
    touch "$tree/$f"
  done
  touched=()
}

# build LOG: (re)build nbdcp, the man page and the unit tests.
build ()
{
  (cd "$build" && make -j"$jobs" check TESTS= >"$1" 2>&1)
}

fresh_tree
say "configure and build (baseline)"
(cd "$build" && "$tree/configure") >"$work/configure.log" 2>&1 ||
  { keep=1; die "configure failed: see $work/configure.log"; }
build "$work/baseline/build.log" ||
  { keep=1; die "the unmutated tree does not build: see $work/baseline/build.log"; }
cp "$build/copy/nbdcp" "$work/baseline/nbdcp"
for u in $unit_tests; do
  cp "$build/$u" "$work/baseline/$(basename "$u")"
done

# What make check's TESTS_ENVIRONMENT gives, with configure's programs.
mkvar ()
{
  local v
  v=$(sed -n "s/^$1 = //p" "$build/Makefile" | head -n 1)
  echo "${v:-$2}"
}
NBDKIT_PROG=$(mkvar NBDKIT nbdkit)
QEMU_NBD_PROG=$(mkvar QEMU_NBD qemu-nbd)
QEMU_IMG_PROG=$(mkvar QEMU_IMG qemu-img)
VALGRIND_PROG=$(mkvar VALGRIND valgrind)

# run_test TEST NBDCP LOG: run one shell test; prints its exit status.
run_test ()
{
  local r=0
  (
    cd "$build" &&
      exec env NBDCP="$2" NBDKIT="$NBDKIT_PROG" QEMU_NBD="$QEMU_NBD_PROG" \
        QEMU_IMG="$QEMU_IMG_PROG" VALGRIND="$VALGRIND_PROG" SANITIZED=no \
        srcdir="$tree" abs_srcdir="$tree" MANPAGE="$build/docs/nbdcp.1" \
        timeout --kill-after=10 "$timeout_s" bash "$tree/$1"
  ) >"$3" 2>&1 </dev/null || r=$?
  echo "$r"
}

status_word ()
{
  case $1 in
    0) echo PASS ;;
    77) echo SKIP ;;
    124|137) echo TIMEOUT ;;
    *) echo "FAIL($1)" ;;
  esac
}

# --- Baseline ------------------------------------------------------------

say "baseline: $(wc -w <<<"$unit_tests") unit tests, $(wc -w <<<"$tests") shell tests"
skipped=" "
for u in $unit_tests; do
  r=0
  "$build/$u" >"$work/baseline/$(basename "$u").log" 2>&1 || r=$?
  [ "$r" -eq 0 ] || [ "$r" -eq 77 ] || {
    keep=1
    tail -20 "$work/baseline/$(basename "$u").log"
    die "baseline: $u fails without any mutation: the suite is broken"
  }
done
for t in $tests; do
  start=$SECONDS
  log=$work/baseline/$(basename "$t").log
  r=$(run_test "$t" "$build/copy/nbdcp" "$log")
  if [ "$r" -ne 0 ] && [ "$r" -ne 77 ]; then
    # Once more: timing tests can fail on a loaded machine.  The mutants'
    # failures are checked against the baseline anyway (MUTATION_CONFIRM).
    say "  baseline $(basename "$t"): $(status_word "$r"), again"
    mv "$log" "$log.1"
    r=$(run_test "$t" "$build/copy/nbdcp" "$log")
  fi
  say "  baseline $(basename "$t"): $(status_word "$r") ($((SECONDS - start)) s)"
  case $r in
    0) ;;
    77) skipped="$skipped$t " ;;
    *)
      keep=1
      tail -30 "$work/baseline/$(basename "$t").log"
      die "baseline: $t fails without any mutation: the suite is broken" ;;
  esac
done

# --- Mutants -------------------------------------------------------------

# run_mutant NAME I [I2]: build the tree with mutation I (and I2), run
# the tests; sets $catchers (space-separated, empty if none), $how
# (the first failure line of the first catcher), $self_check (yes if
# the first catcher's log shows nbdcp's accounting self-check firing)
# and $build_error.
run_mutant ()
{
  local name=$1 logs=$work/logs/$1 i u t r changed=no
  shift
  catchers= how= self_check=no build_error=
  mkdir -p "$logs"
  fresh_tree
  for i in "$@"; do
    apply "$i" "$tree" || { build_error="ANCHOR MISSING"; return; }
    touched+=("${M_FILE[$i]}")
  done
  if ! build "$logs/build.log"; then
    build_error="BUILD FAILED"
    return
  fi
  cmp -s "$build/copy/nbdcp" "$work/baseline/nbdcp" || changed=yes
  # Unit tests whose program the mutation changed.
  for u in $unit_tests; do
    cmp -s "$build/$u" "$work/baseline/$(basename "$u")" && continue
    changed=yes
    r=0
    "$build/$u" >"$logs/$(basename "$u").log" 2>&1 || r=$?
    echo "    $(basename "$u") (unit): $(status_word "$r")"
    if [ "$r" -ne 0 ] && [ "$r" -ne 77 ]; then
      catchers="$catchers $(basename "$u")"
      [ -n "$how" ] || how=$(grep -m 1 -E 'FAIL|fail' "$logs/$(basename "$u").log" || :)
      [ "${MUTATION_ALL:-0}" = 1 ] || return
    fi
  done
  if [ $changed = no ]; then
    build_error="NO EFFECT"
    return
  fi
  for t in $tests; do
    case $skipped in *" $t "*) continue ;; esac
    local start=$SECONDS log=$logs/$(basename "$t").log
    r=$(run_test "$t" "$build/copy/nbdcp" "$log")
    echo "    $(basename "$t"): $(status_word "$r") ($((SECONDS - start)) s)"
    [ "$r" -eq 0 ] || [ "$r" -eq 77 ] && continue
    if [ "$confirm" = 1 ]; then
      # Does it fail without the mutation too?  Then it is flaky.
      local r2
      r2=$(run_test "$t" "$work/baseline/nbdcp" "$log.baseline")
      if [ "$r2" -ne 0 ] && [ "$r2" -ne 77 ]; then
        echo "    $(basename "$t"): fails on the unmutated program too (flaky): not counted"
        echo "$name: $t is flaky (fails unmutated too)" >>"$work/flaky"
        continue
      fi
    fi
    local word=$(basename "$t")
    [ "$r" -eq 124 ] || [ "$r" -eq 137 ] && word="$word(timeout)"
    if [ -z "$catchers" ]; then
      grep -q 'internal error: ' "$log" && self_check=yes
      how=$(grep -m 1 '^FAIL: ' "$log" || grep -m 1 'internal error: ' "$log" ||
        grep -m 1 '^nbdcp: ' "$log" || tail -n 1 "$log")
      [ "$r" -eq 124 ] || [ "$r" -eq 137 ] && how="timed out after $timeout_s s"
    fi
    catchers="$catchers $word"
    [ "${MUTATION_ALL:-0}" = 1 ] || return
  done
}

declare -A result seconds oracle hows oracle_hows
failures=0
n=0
for i in "${selected[@]}"; do
  n=$((n + 1))
  name=${M_NAME[$i]}
  start=$SECONDS
  say "[$n/${#selected[@]}] $name (${M_FILE[$i]})"
  run_mutant "$name" "$i"
  expected=no
  case ${M_NOTE[$i]} in "expected survivor:"*) expected=yes ;; esac
  if [ -n "$build_error" ]; then
    result[$name]=$build_error
    failures=$((failures + 1))
  elif [ -z "$catchers" ]; then
    if [ $expected = yes ]; then
      result[$name]="NOT CAUGHT (expected)"
    else
      result[$name]="NOT CAUGHT"
      failures=$((failures + 1))
    fi
  else
    result[$name]=${catchers# }
    hows[$name]=$how
    [ $expected = no ] ||
      result[$name]="${result[$name]} (expected to survive: update its note)"
    if [ "$self_check" = yes ] && [ "$i" != "$acct" ]; then
      say "  caught by nbdcp's own accounting check: again without it"
      first_catchers=$catchers
      run_mutant "$name+no-self-check" "$i" "$acct"
      if [ -n "$build_error" ]; then
        oracle[$name]="$build_error without the self-check"
        failures=$((failures + 1))
      elif [ -z "$catchers" ]; then
        oracle[$name]="self-check only"
        failures=$((failures + 1))
      else
        oracle[$name]="without it: ${catchers# }"
        oracle_hows[$name]=$how
      fi
      catchers=$first_catchers
    fi
  fi
  seconds[$name]=$((SECONDS - start))
  say "  $name: ${result[$name]}${oracle[$name]:+ (self-check; ${oracle[$name]})} in ${seconds[$name]} s"
done

# --- The table -----------------------------------------------------------

declare -A by
w1=8 w2=9
for i in "${selected[@]}"; do
  name=${M_NAME[$i]}
  by[$name]=${result[$name]}
  [ -z "${oracle[$name]:-}" ] || by[$name]="${by[$name]} (self-check); ${oracle[$name]}"
  [ ${#name} -le $w1 ] || w1=${#name}
  [ ${#by[$name]} -le $w2 ] || w2=${#by[$name]}
done
line=$(printf '%*s' $((w1 + w2 + 16)) '' | tr ' ' -)
echo
printf '%-*s | %-*s | %7s\n' $w1 mutation $w2 "caught by" seconds
echo "$line"
for i in "${selected[@]}"; do
  name=${M_NAME[$i]}
  printf '%-*s | %-*s | %7s\n' $w1 "$name" $w2 "${by[$name]}" "${seconds[$name]}"
done
echo "$line"
echo "How each was caught (the catcher's first failure line):"
for i in "${selected[@]}"; do
  name=${M_NAME[$i]}
  [ -z "${hows[$name]:-}" ] || echo "  $name: ${hows[$name]:0:150}"
  [ -z "${oracle_hows[$name]:-}" ] ||
    echo "  $name, without the self-check: ${oracle_hows[$name]:0:150}"
done
for i in "${selected[@]}"; do
  name=${M_NAME[$i]}
  [ -z "${M_NOTE[$i]}" ] || echo "Note, $name: ${M_NOTE[$i]}"
done
if [ -f "$work/flaky" ]; then
  echo "Flaky tests (failed without the mutation too, not counted):"
  sed 's/^/  /' "$work/flaky"
fi
if [ "$failures" -gt 0 ]; then
  keep=1
  echo "mutation-check: $failures mutation(s) not caught (or not built); logs in $work/logs"
  exit 1
fi
echo "mutation-check: all ${#selected[@]} mutations accounted for"
exit 0
