/* Connections through ssh (nbd+ssh:// URIs, parsed by ssh_uri.c): nbdcp
 * runs the ssh on PATH, whose standard input and output are one end of
 * a socketpair, and hands libnbd the other end (nbd_aio_connect_socket).
 *
 * Why a socketpair and not libnbd's nbd_aio_connect_command, which
 * would fork ssh the same way: nbdcp must own the child.
 * - ssh's standard error ("Permission denied (publickey)", "Host key
 *   verification failed", nc's "No such file or directory") goes to a
 *   memory file that nbdcp reads when the connection fails, so that
 *   the message says why; a child of libnbd's writes straight onto
 *   nbdcp's stderr, apart from the error, over a progress bar.
 * - ssh runs in a process group of its own: the terminal's Ctrl-C
 *   reaches nbdcp only, which stops the copy and reports the interrupt
 *   as it does over TCP, rather than losing its connections to a
 *   killed ssh first.
 * - Closing the handle ends ssh (SIGTERM, then SIGKILL).  libnbd only
 *   waits for its child: but a remote nc whose standard input ended
 *   still waits for the server, and the server waits for a request
 *   (no NBD_CMD_DISC is sent after a failure), so that wait would
 *   never end.  The child is tied to the handle through the free
 *   function of its debug callback, which nbd_close calls, so every
 *   nbd_close of the NBD endpoint's files reaps it.
 * The server's greeting is awaited here, before libnbd has the socket:
 * if ssh ends first, the failure is ssh's and its message is at hand.
 * Each connection (-C) is its own ssh session, set up one after
 * another; OpenSSH's ControlMaster can share one (see the man page).
 */
#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "ssh_connect.h"
#include "ssh_uri.h"

extern char **environ;

/* How long ssh may take to bring the server's greeting, unless
   --timeout says otherwise (as a first NBD connection: nbd_handshake.c). */
#define GREETING_TIMEOUT_MS (60 * 1000)
/* How long ssh may take to end once its connection has ended or it was
   sent SIGTERM, before SIGKILL. */
#define EXIT_WAIT_MS 2000
/* The most of ssh's standard error a message quotes: its last lines. */
#define STDERR_LINES 3

struct ssh_child {
  pid_t pid;
  int err_fd; /* memory file holding ssh's standard error */
  char host[256];
};

/* Run ARGV (argv[0] looked up on PATH) with IN, OUT and ERR as its
 * standard descriptors and nothing else open, in a process group of
 * its own, with the signals nbdcp handles or ignores set back to their
 * defaults and none blocked.  Returns its pid, or -1 after error_set().
 */
static pid_t
spawn (const char **argv, int in, int out, int err)
{
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t none, dfl;
  pid_t pid;
  int r;

  sigemptyset (&none);
  sigemptyset (&dfl);
  sigaddset (&dfl, SIGINT);
  sigaddset (&dfl, SIGTERM);
  sigaddset (&dfl, SIGHUP);
  sigaddset (&dfl, SIGQUIT);
  sigaddset (&dfl, SIGPIPE);
  posix_spawn_file_actions_init (&fa);
  posix_spawn_file_actions_adddup2 (&fa, in, 0);
  posix_spawn_file_actions_adddup2 (&fa, out, 1);
  posix_spawn_file_actions_adddup2 (&fa, err, 2);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
  posix_spawn_file_actions_addclosefrom_np (&fa, 3);
#endif
  posix_spawnattr_init (&attr);
  posix_spawnattr_setsigmask (&attr, &none);
  posix_spawnattr_setsigdefault (&attr, &dfl);
  posix_spawnattr_setpgroup (&attr, 0);
  posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETSIGMASK
                                       | POSIX_SPAWN_SETSIGDEF
                                       | POSIX_SPAWN_SETPGROUP);
  r = posix_spawnp (&pid, argv[0], &fa, &attr, (char *const *) argv, environ);
  posix_spawn_file_actions_destroy (&fa);
  posix_spawnattr_destroy (&attr);
  if (r != 0) {
    error_set ("cannot run %s: %s", argv[0], strerror (r));
    return -1;
  }
  return pid;
}

/* Wait up to MS for PID to end; its wait status in *STATUS.  Returns
 * whether it ended.
 */
static bool
wait_exit (pid_t pid, int *status, int64_t ms)
{
  int64_t until = now_ms () + ms;

  for (;;) {
    pid_t r = waitpid (pid, status, WNOHANG);
    if (r == pid || (r == -1 && errno != EINTR))
      return true;
    if (now_ms () >= until)
      return false;
    struct timespec slice = { .tv_nsec = 10 * 1000000 };
    nanosleep (&slice, NULL);
  }
}

/* Whether the user's ssh configuration sets a ServerAliveInterval for
 * U's host (ssh -G prints the configuration it would use; 0, its
 * default, counts as unset).  If ssh -G fails, it counts as unset.
 */
static bool
alive_configured (const struct ssh_uri *u)
{
  const char *argv[] = { "ssh", "-G", "-l", u->user, "--", u->host, NULL };
  char out[65536], *line;
  size_t n = 0;
  int p[2], null_fd = open ("/dev/null", O_RDWR | O_CLOEXEC), status;
  pid_t pid = -1;

  if (!u->user[0])
    memmove (&argv[2], &argv[4], 3 * sizeof argv[0]);
  if (null_fd >= 0 && pipe2 (p, O_CLOEXEC) == 0) {
    pid = spawn (argv, null_fd, p[1], null_fd);
    close (p[1]);
    for (ssize_t r; pid > 0;) {
      r = read (p[0], out + n, n < sizeof out - 1 ? sizeof out - 1 - n : 0);
      if (r > 0)
        n += r;
      else if (r == 0 && n < sizeof out - 1)
        break;
      else if (r == -1 && errno != EINTR)
        break;
      else if (r == 0) {
        char drain[4096];
        if (read (p[0], drain, sizeof drain) <= 0)
          break;
      }
    }
    close (p[0]);
  }
  if (null_fd >= 0)
    close (null_fd);
  if (pid <= 0 || !wait_exit (pid, &status, EXIT_WAIT_MS * 5)
      || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
    return false;
  out[n] = '\0';
  line = strstr (out, "\nserveraliveinterval ");
  return line && atoi (line + 21) > 0;
}

/* The last lines of ssh's standard error (in C's memory file), joined
 * by "; ", in BUF (SIZE bytes); "" if it wrote none.
 */
static void
stderr_tail (const struct ssh_child *c, char *buf, size_t size)
{
  char text[4096];
  struct stat st;
  off_t from = 0;
  ssize_t n = 0;
  const char *lines[STDERR_LINES];
  unsigned count = 0;

  buf[0] = '\0';
  if (fstat (c->err_fd, &st) == 0 && st.st_size > (off_t) sizeof text - 1)
    from = st.st_size - (sizeof text - 1);
  n = pread (c->err_fd, text, sizeof text - 1, from);
  if (n <= 0)
    return;
  text[n] = '\0';
  for (char *save, *l = strtok_r (text, "\r\n", &save); l;
       l = strtok_r (NULL, "\r\n", &save)) {
    if (count == STDERR_LINES)
      memmove (lines, lines + 1, --count * sizeof lines[0]);
    lines[count++] = l;
  }
  for (unsigned i = 0; i < count; i++) {
    size_t len = strlen (buf);
    snprintf (buf + len, size - len, "%s%s", i ? "; " : "", lines[i]);
  }
}

/* How C's ssh ended (wait STATUS), with what it said, in BUF. */
static void
describe_end (const struct ssh_child *c, int status, char *buf, size_t size)
{
  char said[1024], how[64];

  stderr_tail (c, said, sizeof said);
  if (WIFSIGNALED (status))
    snprintf (how, sizeof how, "killed by signal %d", WTERMSIG (status));
  else
    snprintf (how, sizeof how, "exit status %d", WEXITSTATUS (status));
  snprintf (buf, size, "ssh to %s ended (%s)%s%s", c->host, how,
            said[0] ? ": " : "", said);
}

/* End C's ssh if it still runs, and free C.  An ssh that ended by
 * itself with a failure, or a word on stderr, is reported (REPORT): a
 * broken connection's own message cannot say why.
 */
static void
child_end (struct ssh_child *c, bool report)
{
  int status = 0;
  pid_t r = waitpid (c->pid, &status, WNOHANG);

  if (r == 0) {
    kill (c->pid, SIGTERM);
    if (!wait_exit (c->pid, &status, EXIT_WAIT_MS)) {
      kill (c->pid, SIGKILL);
      waitpid (c->pid, &status, 0);
    }
  }
  else if (r == c->pid && report
           && (WIFSIGNALED (status) || WEXITSTATUS (status) != 0)) {
    char why[1400];
    describe_end (c, status, why, sizeof why);
    fprintf (stderr, "nbdcp: %s\n", why);
  }
  close (c->err_fd);
  free (c);
}

/* The handle's debug messages (with -v), first line only, as
 * nbd_connect.c prints them.
 */
static int
child_debug (void *user_data, const char *context, const char *msg)
{
  int len = strcspn (msg, "\n");
  (void) user_data;
  fprintf (stderr, "libnbd: %s: %.*s\n", context, len, msg);
  return 0;
}

/* The handle is being closed. */
static void
child_free (void *user_data)
{
  child_end (user_data, true);
}

/* Wait until the server's first bytes are readable on FD (0), or ssh
 * has closed it (1), or the time is up or EP->interrupted is set (-1
 * after error_set()).
 */
static int
wait_greeting (int fd, const struct endpoint *ep, const char *host)
{
  int64_t limit = ep->settings->timeout_ms ? ep->settings->timeout_ms
                                           : GREETING_TIMEOUT_MS;
  int64_t until = now_ms () + limit;

  for (;;) {
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    char byte;

    if (*ep->interrupted) {
      error_set ("interrupted while connecting through ssh to %s", host);
      return -1;
    }
    if (poll (&pfd, 1, 100) > 0) {
      ssize_t n = recv (fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 1)
        return 0;
      if (n == 0 || (errno != EAGAIN && errno != EINTR))
        return 1;
    }
    if (now_ms () >= until) {
      error_set ("ssh to %s: no answer from the NBD server within %.1f s", host,
                 limit / 1000.0);
      return -1;
    }
  }
}

/* Start ssh for U on a new socketpair: C (allocated) gets the child,
 * *FD nbdcp's end.  Returns -1 after error_set().
 */
static int
start_ssh (const struct ssh_uri *u, bool verbose, struct ssh_child **cp,
           int *fd)
{
  const char *argv[SSH_URI_ARGV_MAX];
  struct ssh_child *c = calloc (1, sizeof *c);
  int sv[2] = { -1, -1 };

  if (!c) {
    error_set ("out of memory");
    return -1;
  }
  snprintf (c->host, sizeof c->host, "%s", u->host);
  c->err_fd = memfd_create ("nbdcp-ssh-stderr", MFD_CLOEXEC);
  ssh_uri_argv (u, !alive_configured (u), argv);
  if (c->err_fd == -1
      || socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
    error_set ("ssh to %s: %s", u->host, strerror (errno));
    goto fail;
  }
  if (verbose) {
    fprintf (stderr, "nbdcp: running");
    for (const char **a = argv; *a; a++)
      fprintf (stderr, " %s", *a);
    fprintf (stderr, "\n");
  }
  c->pid = spawn (argv, sv[1], sv[1], c->err_fd);
  close (sv[1]);
  if (c->pid == -1)
    goto fail;
  *cp = c;
  *fd = sv[0];
  return 0;

fail:
  if (sv[0] >= 0)
    close (sv[0]);
  if (c->err_fd >= 0)
    close (c->err_fd);
  free (c);
  return -1;
}

int
ssh_connect (struct nbd_handle *h, const struct endpoint *ep)
{
  struct ssh_uri u;
  struct ssh_child *c;
  int fd, r;

  if (ssh_uri_parse (ep->spec, &u) == -1)
    return -1;
  if (nbd_set_export_name (h, u.export_name) == -1) {
    error_set ("%s", nbd_get_error ());
    return -1;
  }
  if (start_ssh (&u, ep->settings->verbose, &c, &fd) == -1)
    return -1;
  r = wait_greeting (fd, ep, u.host);
  if (r != 0) {
    if (r == 1) {
      int status = 0;
      char why[1400];
      if (!wait_exit (c->pid, &status, EXIT_WAIT_MS)) {
        kill (c->pid, SIGKILL);
        waitpid (c->pid, &status, 0);
      }
      describe_end (c, status, why, sizeof why);
      error_set ("%s", why);
    }
    close (fd);
    child_end (c, false);
    return -1;
  }
  nbd_debug_callback debug
      = { .callback = child_debug, .user_data = c, .free = child_free };
  if (nbd_set_debug_callback (h, debug) == -1) {
    error_set ("%s", nbd_get_error ()); /* libnbd has called child_free */
    close (fd);
    return -1;
  }
  /* From here closing H ends ssh. */
  if (nbd_aio_connect_socket (h, fd) == -1) {
    error_set ("%s", nbd_get_error ());
    close (fd);
    return -1;
  }
  return 0;
}
