/* Option parsing and validation: every check on the command line lives
 * here, so main.c can trust what it gets.  Option names and meanings
 * follow nbdcopy(1) so that scripts can switch tools without edits.
 */
#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libnbd.h>

#include "blkhash.h"
#include "dirty_bitmap.h"
#include "human_size.h"
#include "minmax.h"
#include "options.h"

enum {
  HELP_OPTION = CHAR_MAX + 1,
  ALLOCATED_OPTION,
  BITMAP_OPTION,
  BLKHASH_OPTION,
  BLKHASH_FILE_OPTION,
  DESTINATION_IS_ZERO_OPTION,
  DIRECT_OPTION,
  FLUSH_OPTION,
  NO_EXTENTS_OPTION,
  NO_DESTINATION_EXTENTS_OPTION,
  QUEUE_SIZE_OPTION,
  REQUEST_SIZE_OPTION,
  SYNCHRONOUS_OPTION,
  STATS_OPTION,
  TIMEOUT_OPTION,
  PROGRESS_JSON_OPTION,
  RATE_OPTION,
  VERIFY_OPTION,
  RETRY_OPTION,
  RETRY_DELAY_OPTION,
  CHECKPOINT_OPTION,
  RESUME_OPTION,
  LONG_OPTIONS_OPTION,
  SHORT_OPTIONS_OPTION,
};

/* No '+': like nbdcopy, options may follow SOURCE and DESTINATION; a
   '[ CMD ARGS ... ]' endpoint therefore needs '--' before it. */
static const char short_options[] = "C:pR:S:T:vV";
static const struct option long_options[] = {
  { "help", no_argument, NULL, HELP_OPTION },
  { "allocated", no_argument, NULL, ALLOCATED_OPTION },
  { "bitmap", required_argument, NULL, BITMAP_OPTION },
  { "blkhash", optional_argument, NULL, BLKHASH_OPTION },
  { "blkhash-file", required_argument, NULL, BLKHASH_FILE_OPTION },
  { "checkpoint", required_argument, NULL, CHECKPOINT_OPTION },
  { "connections", required_argument, NULL, 'C' },
  { "destination-is-zero", no_argument, NULL, DESTINATION_IS_ZERO_OPTION },
  { "direct", no_argument, NULL, DIRECT_OPTION },
  { "target-is-zero", no_argument, NULL, DESTINATION_IS_ZERO_OPTION },
  { "flush", no_argument, NULL, FLUSH_OPTION },
  { "no-extents", no_argument, NULL, NO_EXTENTS_OPTION },
  { "no-destination-extents", no_argument, NULL,
    NO_DESTINATION_EXTENTS_OPTION },
  { "progress", optional_argument, NULL, 'p' },
  { "progress-json", required_argument, NULL, PROGRESS_JSON_OPTION },
  { "queue-size", required_argument, NULL, QUEUE_SIZE_OPTION },
  { "request-size", required_argument, NULL, REQUEST_SIZE_OPTION },
  { "requests", required_argument, NULL, 'R' },
  { "resume", required_argument, NULL, RESUME_OPTION },
  { "retry", required_argument, NULL, RETRY_OPTION },
  { "retry-delay", required_argument, NULL, RETRY_DELAY_OPTION },
  { "sparse", required_argument, NULL, 'S' },
  { "synchronous", no_argument, NULL, SYNCHRONOUS_OPTION },
  { "stats", optional_argument, NULL, STATS_OPTION },
  { "timeout", required_argument, NULL, TIMEOUT_OPTION },
  { "rate", required_argument, NULL, RATE_OPTION },
  { "threads", required_argument, NULL, 'T' },
  { "verbose", no_argument, NULL, 'v' },
  { "verify", optional_argument, NULL, VERIFY_OPTION },
  { "version", no_argument, NULL, 'V' },
  { "long-options", no_argument, NULL, LONG_OPTIONS_OPTION },
  { "short-options", no_argument, NULL, SHORT_OPTIONS_OPTION },
  { NULL, 0, NULL, 0 },
};

static const char usage_hint[] = "Try 'nbdcp --help' for more information.";

static void
print_help (void)
{
  printf ("nbdcp - copy a disk between NBD servers, fast and safely\n"
          "\n"
          "Usage:\n"
          "  nbdcp [OPTIONS] SOURCE DESTINATION\n"
          "\n"
          "  SOURCE, DESTINATION := NBD-URI | FILE | DEVICE | - |"
          " [ CMD ARGS ... ]\n"
          "  DESTINATION += null:\n"
          "  ('-' is stdin or stdout; '[ CMD ARGS ... ]' runs an NBD server\n"
          "   with socket activation; options may also follow the operands)\n"
          "  NBD-URI includes nbd+ssh://[USER@]HOST[:PORT]/[EXPORT]"
          "[?socket=PATH]:\n"
          "   ssh to HOST runs nc there to the server's socket or port\n"
          "\n"
          "Options:\n"
          "  -C, --connections=N      connections per side (default 4, at "
          "most 64\n"
          "                           used, and no more than the threads)\n"
          "  -T, --threads=N          worker threads (default or 0: online "
          "CPUs);\n"
          "                           connections and threads are both "
          "cut to\n"
          "                           the smaller number, as in nbdcopy\n"
          "  -R, --requests=N         requests in flight per connection "
          "(default: up\n"
          "                           to 32, fewer while that is faster)\n"
          "      --request-size=N     bytes per request, a power of 2 from "
          "512\n"
          "                           to 32M (default 512K, or the "
          "servers'\n"
          "                           preferred block size if larger)\n"
          "      --queue-size=N       bytes in flight per connection\n"
          "                           (default or 0: 16M; 1G over all at\n"
          "                           most)\n"
          "  -S, --sparse=N           detect zero blocks of N bytes, a "
          "multiple\n"
          "                           of 512; 0 turns it off (default 4096)\n"
          "      --allocated          leave the destination fully allocated:\n"
          "                           data written whole, holes zeroed\n"
          "                           with NO_HOLE (-S is ignored)\n"
          "      --destination-is-zero, --target-is-zero\n"
          "                           the destination already reads as "
          "zero:\n"
          "                           skip zeroing it\n"
          "      --no-extents         read the whole source, ignoring holes\n"
          "      --no-destination-extents\n"
          "                           zero holes even where the destination\n"
          "                           says it reads as zero already\n"
          "      --bitmap=NAME        incremental copy onto the previous "
          "copy:\n"
          "                           only what the source's qemu dirty "
          "bitmap\n"
          "                           NAME marks dirty (qemu-nbd -B NAME)\n"
          "      --flush              flush the destination at the end "
          "(always\n"
          "                           done; accepted for compatibility)\n"
          "      --synchronous        one connection, one request at a time\n"
          "      --direct             open local files and devices with "
          "O_DIRECT\n"
          "  -p, --progress[=FD]      show progress, or write 'N/100' lines "
          "to FD\n"
          "      --progress-json=FD   one JSON object per line to FD for\n"
          "                           programs: phase, bytes, rate, ETA\n"
          "      --timeout=SECONDS    fail if a busy connection gets no reply\n"
          "                           in that time\n"
          "      --rate=SIZE          read at most SIZE bytes per second\n"
          "                           from the source, all connections\n"
          "                           together\n"
          "      --retry=N            reconnect a broken NBD connection up to "
          "N\n"
          "                           times in a row and copy again what was\n"
          "                           not yet flushed; retry a failed first\n"
          "                           connection as often, not a server's\n"
          "                           answer (default 0)\n"
          "      --retry-delay=SECONDS\n"
          "                           first wait before reconnecting "
          "(default 1,\n"
          "                           doubling up to 30)\n"
          "      --resume=FILE        keep a journal of flushed segments in "
          "FILE;\n"
          "                           a rerun onto the same destination "
          "skips\n"
          "                           them (removed on success)\n"
          "      --checkpoint=SIZE    with --retry or --resume, flush each\n"
          "                           connection after SIZE of work "
          "(default 1G)\n"
          "      --blkhash[=ALGO[/BLOCKSIZE]]\n"
          "                           print a checksum of the source made "
          "while\n"
          "                           copying, as nbdcopy and blksum do: ALGO "
          "md5,\n"
          "                           sha1, sha256 (default) or sha512; "
          "BLOCKSIZE\n"
          "                           a power of 2 from 1 to 32M (default "
          "64K)\n"
          "      --blkhash-file=FILE  write the checksum to FILE, not stdout\n"
          "                           (implies --blkhash); FILE may be\n"
          "                           /dev/stdout, /dev/fd/N, a FIFO\n"
          "      --verify[=full]      after the copy, read the destination "
          "back\n"
          "                           and fail unless its blkhash is the\n"
          "                           source's (the --blkhash "
          "ALGO/BLOCKSIZE);\n"
          "                           holes it claims are read anyway where\n"
          "                           the source had data; =full reads every\n"
          "                           byte, asking no block status\n"
          "      --stats[=json]       print what was copied, zeroed and "
          "skipped\n"
          "                           at the end (as one JSON object with "
          "=json)\n"
          "  -v, --verbose            say what nbdcp decides, with libnbd "
          "debug\n"
          "  -V, --version            print the version and exit\n"
          "      --help               print this help and exit\n"
          "\n"
          "Sizes take suffixes: 512, 64K, 1M, 4G.\n"
          "Example:\n"
          "  nbdcp -p nbd+unix:///?socket=/tmp/src.sock "
          "nbd+unix:///?socket=/tmp/dst.sock\n"
          "See nbdcp(1) for everything else.\n");
}

static void
print_version (void)
{
  struct nbd_handle *h = nbd_create ();

  printf ("nbdcp %s\n", PACKAGE_VERSION);
  printf ("libnbd %s\n", h ? nbd_get_version (h) : LIBNBD_PKG_VERSION);
  printf ("liburing %s\n", LIBURING_PKG_VERSION);
  nbd_close (h);
}

/* After --help, --version or the option lists: 1 (exit 0) only if
 * what they printed reached standard output.  A closed descriptor or a
 * full disk must not pass for success with nothing said.
 */
static int
printed (const char *option)
{
  if (fflush (stdout) == 0 && !ferror (stdout))
    return 1;
  fprintf (stderr, "nbdcp: %s: cannot write to standard output: %s\n", option,
           strerror (errno));
  return -1;
}

static int
bad (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "nbdcp: ");
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fprintf (stderr, "\n%s\n", usage_hint);
  return -1;
}

/* A count from MIN to MAX for options like -C, -R and -T. */
static int
parse_count (const char *name, const char *arg, unsigned min, unsigned max,
             unsigned *out)
{
  char *end;
  long long n;

  errno = 0;
  n = strtoll (arg, &end, 10);
  if (errno || end == arg || *end || n < min || n > max)
    return bad ("%s: '%s' is not a number from %u to %u", name, arg, min, max);
  *out = n;
  return 0;
}

static int
parse_size (const char *name, const char *arg, int64_t *out)
{
  if (human_size_parse (arg, out) == -1)
    return bad ("%s: '%s' is not a size (examples: 4096, 64K, 1M)", name, arg);
  return 0;
}

/* --timeout=SECONDS: decimals allowed, kept in milliseconds. */
static int
parse_seconds (const char *arg, int64_t *ms)
{
  char *end;
  double s;

  errno = 0;
  s = strtod (arg, &end);
  if (errno || end == arg || *end || !(s >= 0.01 && s <= 86400))
    return -1;
  *ms = s * 1000;
  return 0;
}

/* --blkhash=ALGO[/BLOCKSIZE]. */
static int
parse_blkhash (const char *arg, struct options *opts)
{
  char name[16];
  const char *slash = strchr (arg, '/');
  size_t n = slash ? (size_t) (slash - arg) : strlen (arg);
  int64_t size;

  if (n == 0 || n >= sizeof name)
    return bad ("--blkhash: '%s' is not ALGO[/BLOCKSIZE] (ALGO: md5, sha1, "
                "sha256 or sha512)",
                arg);
  memcpy (name, arg, n);
  name[n] = '\0';
  opts->blkhash_algo = blkhash_algo_find (name);
  if (opts->blkhash_algo < 0)
    return bad ("--blkhash: unknown algorithm '%s' (md5, sha1, sha256 or "
                "sha512)",
                name);
  if (!slash)
    return 0;
  if (human_size_parse (slash + 1, &size) == -1 || size < 1
      || size > MAX_REQUEST_SIZE || !IS_POWER_OF_2 (size))
    return bad ("--blkhash: block size '%s' must be a power of 2 from 1 to "
                "32M",
                slash + 1);
  opts->blkhash_block = size;
  return 0;
}

/* --progress=FD: a file descriptor number, already open. */
static int
parse_progress_fd (const char *arg, int *fd)
{
  char *end;
  long n;

  errno = 0;
  n = strtol (arg, &end, 10);
  if (errno || end == arg || *end || n < 0 || n > INT_MAX)
    return -1;
  *fd = n;
  return 0;
}

static void
list_options (bool longs)
{
  const struct option *o;
  const char *s;

  if (longs) {
    for (o = long_options; o->name; o++)
      printf ("--%s\n", o->name);
    return;
  }
  for (s = short_options; *s; s++)
    if (*s != ':' && *s != '+')
      printf ("-%c\n", *s);
}

/* '[ CMD ARGS ... ]' groups are taken out of the command line before
 * getopt sees it, so that CMD's own options are never taken for
 * nbdcp's and nbdcp's options may still come anywhere (as with
 * nbdcopy).  Group G leaves a placeholder operand in its place:
 * group_placeholder[G], an empty string.  getopt takes it for an
 * operand and may move it among the others, so it is recognised by
 * its address, which no word of the command line shares (an empty
 * operand that the user wrote is another string).
 */
#define MAX_GROUPS 8
static char group_placeholder[MAX_GROUPS][1];

/* What placeholder_group returns for a word that is no placeholder. */
#define NOT_A_GROUP (-1)

/* The group whose placeholder WORD is, or NOT_A_GROUP. */
static int
placeholder_group (const char *word)
{
  for (int g = 0; g < MAX_GROUPS; g++)
    if (word == group_placeholder[g])
      return g;
  return NOT_A_GROUP;
}

/* Copies ARGV to *AV with the bracket groups lifted out into GROUPS,
 * each leaving its placeholder (their "]" becomes NULL, in ARGV).
 * Returns the new argc, or -1.
 */
static int
lift_groups (int argc, char **argv, char **av, char **groups[MAX_GROUPS])
{
  int ac = 0, ng = 0;

  for (int i = 0; i < argc; i++) {
    if (i > 0 && strcmp (argv[i], "]") == 0)
      return bad ("']' without a '[' before it");
    if (i == 0 || strcmp (argv[i], "[") != 0) {
      av[ac++] = argv[i];
      continue;
    }
    int j = i + 1;
    while (j < argc && strcmp (argv[j], "]") != 0)
      j++;
    if (j == argc)
      return bad ("'[' without a matching ']' (a subprocess server is "
                  "written [ CMD ARGS ... ], with spaces around the "
                  "brackets)");
    if (j == i + 1)
      return bad ("'[ ]' needs a command between the brackets");
    if (ng == MAX_GROUPS)
      return bad ("too many '[ CMD ]' groups");
    argv[j] = NULL;
    groups[ng] = &argv[i + 1];
    av[ac++] = group_placeholder[ng++];
    i = j;
  }
  av[ac] = NULL;
  return ac;
}

/* SOURCE and DESTINATION from the operands AV[optind..AC). */
static int
parse_endpoints (int ac, char **av, char **groups[MAX_GROUPS],
                 struct options *opts)
{
  int n = ac - optind;

  if (n != 2)
    return bad ("expected SOURCE and DESTINATION, got %d argument%s", n,
                n == 1 ? "" : "s");
  for (int k = 0; k < 2; k++) {
    const char *word = av[optind + k];
    int g = placeholder_group (word);
    const char **spec = k == 0 ? &opts->src : &opts->dst;
    char ***command = k == 0 ? &opts->src_command : &opts->dst_command;

    if (g != NOT_A_GROUP) {
      *command = groups[g];
      *spec = groups[g][0];
    }
    else if (word[0] == '\0')
      return bad ("an empty SOURCE or DESTINATION");
    else
      *spec = word;
  }
  if (strcmp (opts->src, "-") == 0 && !opts->src_command
      && strcmp (opts->dst, "-") == 0 && !opts->dst_command)
    return bad ("'-' cannot be both SOURCE (stdin) and DESTINATION (stdout)");
  return 0;
}

/* What parse_value_option and parse_feature_option return for an
   option that is not theirs. */
#define NOT_MINE 1

/* The options whose value is a number or a size (optarg), checked
 * against its range.  Returns 0, -1 after bad(), or NOT_MINE for an
 * option C that is not one of them.
 */
static int
parse_value_option (int c, struct options *opts)
{
  int64_t size;

  switch (c) {
  case TIMEOUT_OPTION:
    if (parse_seconds (optarg, &opts->timeout_ms) == -1)
      return bad ("--timeout: '%s' is not a number of seconds from 0.01 "
                  "to 86400",
                  optarg);
    break;
  case RETRY_OPTION:
    if (parse_count ("--retry", optarg, 0, 1000, &opts->retry))
      return -1;
    break;
  case RETRY_DELAY_OPTION:
    if (parse_seconds (optarg, &opts->retry_delay_ms) == -1)
      return bad ("--retry-delay: '%s' is not a number of seconds from "
                  "0.01 to 86400",
                  optarg);
    break;
  case RATE_OPTION:
    if (parse_size ("--rate", optarg, &opts->rate))
      return -1;
    if (opts->rate < 1024)
      return bad ("--rate: %s is less than 1K bytes per second", optarg);
    break;
  case CHECKPOINT_OPTION:
    if (parse_size ("--checkpoint", optarg, &opts->checkpoint))
      return -1;
    if (opts->checkpoint < (int64_t) 128 * 1024 * 1024)
      return bad ("--checkpoint: %s is less than a segment (128M)", optarg);
    break;
  case 'C':
    if (parse_count ("--connections", optarg, 1, 1024, &opts->connections))
      return -1;
    break;
  case 'T':
    /* 0 is the default, as with nbdcopy. */
    if (parse_count ("--threads", optarg, 0, 1024, &opts->threads))
      return -1;
    break;
  case 'R':
    if (parse_count ("--requests", optarg, 1, 1024, &opts->requests))
      return -1;
    opts->requests_set = true;
    break;
  case REQUEST_SIZE_OPTION:
    if (parse_size ("--request-size", optarg, &size))
      return -1;
    if (size < MIN_REQUEST_SIZE || size > MAX_REQUEST_SIZE
        || !IS_POWER_OF_2 (size))
      return bad ("--request-size: %s must be a power of 2 from 512 to 32M",
                  optarg);
    opts->request_size = size;
    opts->request_size_set = true;
    break;
  case QUEUE_SIZE_OPTION:
    if (parse_size ("--queue-size", optarg, &size))
      return -1;
    /* 0 is the default, as with nbdcopy. */
    if (size != 0 && size < MIN_REQUEST_SIZE)
      return bad ("--queue-size: %s is neither 0 (the default) nor at "
                  "least 512",
                  optarg);
    opts->queue_size = size;
    break;
  case 'S':
    if (parse_size ("--sparse", optarg, &size))
      return -1;
    if (size % 512 != 0 || size > MAX_REQUEST_SIZE)
      return bad ("--sparse: %s must be 0 or a multiple of 512 up to 32M",
                  optarg);
    opts->sparse_size = size;
    break;
  default:
    return NOT_MINE;
  }
  return 0;
}

/* The options that switch a feature on, with a word or a name as
 * their value if any.  Returns 0, -1 after bad(), or NOT_MINE for an
 * option C that is not one of them.
 */
static int
parse_feature_option (int c, struct options *opts)
{
  switch (c) {
  case ALLOCATED_OPTION:
    opts->allocated = true;
    break;
  case DESTINATION_IS_ZERO_OPTION:
    opts->destination_is_zero = true;
    break;
  case BITMAP_OPTION:
    if (optarg[0] == '\0' || strlen (optarg) > BITMAP_NAME_MAX)
      return bad ("--bitmap: the bitmap's name must have 1 to %d bytes",
                  BITMAP_NAME_MAX);
    opts->bitmap = optarg;
    break;
  case BLKHASH_OPTION:
    opts->blkhash = true;
    if (optarg && parse_blkhash (optarg, opts) == -1)
      return -1;
    break;
  case BLKHASH_FILE_OPTION:
    if (optarg[0] == '\0')
      return bad ("--blkhash-file: an empty file name");
    opts->blkhash = true;
    opts->blkhash_file = optarg;
    break;
  case DIRECT_OPTION:
    opts->direct = true;
    break;
  case FLUSH_OPTION:
    /* nbdcp always flushes every destination connection at the end;
       the option is accepted so that nbdcopy command lines work. */
    break;
  case NO_EXTENTS_OPTION:
    opts->extents = false;
    break;
  case NO_DESTINATION_EXTENTS_OPTION:
    opts->destination_extents = false;
    break;
  case SYNCHRONOUS_OPTION:
    opts->synchronous = true;
    break;
  case STATS_OPTION:
    opts->stats = true;
    if (optarg && strcmp (optarg, "json") == 0)
      opts->stats_json = true;
    else if (optarg && strcmp (optarg, "text") != 0)
      return bad ("--stats: '%s' is not 'text' or 'json'", optarg);
    break;
  case 'v':
    opts->verbose = true;
    break;
  case VERIFY_OPTION:
    opts->verify = true;
    if (optarg && strcmp (optarg, "full") == 0)
      opts->verify_full = true;
    else if (optarg && strcmp (optarg, "data") != 0)
      return bad ("--verify: '%s' is not 'data' or 'full'", optarg);
    break;
  case RESUME_OPTION:
    if (optarg[0] == '\0')
      return bad ("--resume: an empty file name");
    opts->resume = optarg;
    break;
  case 'p':
    opts->progress = true;
    if (optarg && parse_progress_fd (optarg, &opts->progress_fd) == -1)
      return bad ("--progress: '%s' is not a file descriptor", optarg);
    break;
  case PROGRESS_JSON_OPTION:
    if (parse_progress_fd (optarg, &opts->progress_json_fd) == -1)
      return bad ("--progress-json: '%s' is not a file descriptor", optarg);
    break;
  default:
    return NOT_MINE;
  }
  return 0;
}

static int
parse_options (int ac, char **av, char **groups[MAX_GROUPS],
               struct options *opts)
{
  int c, r;

  *opts = (struct options){
    .connections = 4,
    .threads = 0,
    .requests = 32,
    .request_size = 512 * 1024,
    .queue_size = 0,
    .sparse_size = -1,
    .extents = true,
    .destination_extents = true,
    .progress_fd = -1,
    .progress_json_fd = -1,
    .blkhash_algo = BLKHASH_DEFAULT_ALGO,
    .blkhash_block = BLKHASH_DEFAULT_BLOCK,
    .retry_delay_ms = 1000,
    .checkpoint = DEFAULT_CHECKPOINT,
  };

  opterr = 0;
  while ((c = getopt_long (ac, av, short_options, long_options, NULL)) != -1) {
    switch (c) {
    case HELP_OPTION:
      print_help ();
      return printed ("--help");
    case 'V':
      print_version ();
      return printed ("--version");
    case LONG_OPTIONS_OPTION:
    case SHORT_OPTIONS_OPTION:
      list_options (c == LONG_OPTIONS_OPTION);
      return printed (c == LONG_OPTIONS_OPTION ? "--long-options"
                                               : "--short-options");
    default:
      r = parse_feature_option (c, opts);
      if (r == NOT_MINE)
        r = parse_value_option (c, opts);
      if (r == -1)
        return -1;
      if (r == 0)
        break;
      /* '?', or an option without a case: long options are named as written
         (optopt would give the short form of --version=1, say); short ones by
         their letter. */
      if (strncmp (av[optind - 1], "--", 2) == 0 || !optopt
          || optopt >= CHAR_MAX)
        return bad ("unknown option or missing value: %s", av[optind - 1]);
      return bad ("unknown option or missing value: -%c", optopt);
    }
  }

  if (parse_endpoints (ac, av, groups, opts) == -1)
    return -1;
  if (opts->blkhash && !blkhash_available ())
    return bad ("--blkhash is not built in (nbdcp was built without GnuTLS)");
  /* A resumed copy does not read what an earlier run copied, so it
     cannot hash the whole source. */
  if (opts->resume && (opts->blkhash || opts->verify))
    return bad ("--resume cannot be combined with --%s: a resumed copy "
                "does not read the segments an earlier run finished",
                opts->verify ? "verify" : "blkhash");
  if (opts->verify && !blkhash_available ())
    return bad ("--verify is not built in (nbdcp was built without GnuTLS)");
  if (opts->blkhash && !opts->blkhash_file && strcmp (opts->dst, "-") == 0
      && !opts->dst_command)
    return bad ("--blkhash would print the checksum into the copy on "
                "standard output: use --blkhash-file");

  /* A delta goes onto the previous copy: clean ranges keep what they
     have, so the destination cannot be assumed to read as zero, and a
     checksum of the dirty ranges alone would be no disk's checksum. */
  if (opts->bitmap && opts->destination_is_zero)
    return bad ("--bitmap cannot be used with --destination-is-zero: an "
                "incremental copy goes onto the previous copy");
  if (opts->bitmap && (opts->blkhash || opts->verify))
    return bad ("--bitmap cannot be used with --%s: an incremental copy "
                "reads only the dirty ranges",
                opts->verify ? "verify" : "blkhash");

  if (opts->synchronous) {
    /* nbdcopy's --synchronous means one request at a time; here that is
       one connection and one request in flight. */
    opts->connections = 1;
    opts->threads = 1;
    opts->requests = 1;
    opts->requests_set = true;
  }
  if (opts->threads == 0) {
    long n = sysconf (_SC_NPROCESSORS_ONLN);
    opts->threads = n > 0 ? n : 1;
  }
  /* As in nbdcopy, threads and connections are cut to the smaller of
     the two: a worker per connection.  On two CPUs that makes two
     connections, which is also the faster (docs/performance.md). */
  opts->threads = MIN (opts->threads, opts->connections);
  opts->connections = opts->threads;
  return 0;
}

int
options_parse (int argc, char **argv, struct options *opts)
{
  char **groups[MAX_GROUPS];
  char **av = malloc ((argc + 1) * sizeof *av);
  int ac, r = -1;

  if (!av) {
    fprintf (stderr, "nbdcp: out of memory\n");
    return -1;
  }
  ac = lift_groups (argc, argv, av, groups);
  if (ac >= 0)
    r = parse_options (ac, av, groups, opts);
  free (av);
  return r;
}
