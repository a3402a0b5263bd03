/* The command line: nbdcopy-compatible options and their validation. */
#ifndef NBDCP_OPTIONS_H
#define NBDCP_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#define MAX_REQUEST_SIZE (32 * 1024 * 1024) /* the NBD protocol's limit */
#define MIN_REQUEST_SIZE 512
#define DEFAULT_CHECKPOINT ((int64_t) 1024 * 1024 * 1024)

struct options {
  const char *src;    /* SOURCE as given */
  const char *dst;    /* DESTINATION as given */
  char **src_command; /* SOURCE was [ CMD ARGS ... ], else NULL */
  char **dst_command;
  unsigned connections;     /* -C: connections per side, each with a
                               thread (parse_options cuts it to -T) */
  unsigned threads;         /* -T: 0 = number of online CPUs; read
                               only by parse_options */
  unsigned requests;        /* -R: requests in flight per connection */
  bool requests_set;        /* -R or --synchronous given */
  uint32_t request_size;    /* --request-size: bytes per read */
  bool request_size_set;    /* given by the user, not the default */
  uint64_t queue_size;      /* --queue-size: bytes in flight per
                               connection, 0 = requests * request_size */
  int64_t sparse_size;      /* -S: zero-detection block, 0 = off,
                               -1 = default (see main.c) */
  bool allocated;           /* --allocated */
  bool destination_is_zero; /* --destination-is-zero, --target-is-zero */
  bool extents;             /* false with --no-extents */
  bool destination_extents; /* false with --no-destination-extents */
  bool synchronous;         /* --synchronous */
  bool direct;              /* --direct: O_DIRECT for local files */
  bool progress;            /* -p or --progress[=FD] */
  int progress_fd;          /* --progress=FD, else -1 */
  int progress_json_fd;     /* --progress-json=FD, else -1 */
  bool verbose;             /* -v */
  int64_t timeout_ms;       /* --timeout, 0 = none */
  bool stats;               /* --stats[=json] */
  bool stats_json;
  bool blkhash;             /* --blkhash[=ALGO[/BLOCKSIZE]] or --blkhash-file */
  int blkhash_algo;         /* enum blkhash_algo */
  uint32_t blkhash_block;   /* bytes per hashed block */
  const char *blkhash_file; /* --blkhash-file, else NULL: stdout */
  bool verify;              /* --verify: read the destination back and
                               compare its blkhash with the source's */
  bool verify_full;         /* --verify=full: read all of it, asking no
                               block status */
  unsigned retry;           /* --retry: reconnects per broken connection */
  int64_t retry_delay_ms;   /* --retry-delay: the first wait, doubled
                               up to RETRY_DELAY_MAX_MS (backoff.h) */
  int64_t rate;             /* --rate: bytes per second, 0 = no limit */
  int64_t checkpoint;       /* --checkpoint: bytes between a lane's
                               flushes with --retry or --resume */
  const char *resume;       /* --resume=FILE, else NULL */
  const char *bitmap;       /* --bitmap=NAME: copy only what qemu dirty
                               bitmap NAME marks dirty, else NULL */
};

/* Parses ARGV into OPTS.  Returns 0 to go on and copy, 1 when the
 * command has been fully handled (--help, -V), -1 after printing a
 * one-line error and the usage hint to stderr.
 */
int options_parse (int argc, char **argv, struct options *opts);

#endif
