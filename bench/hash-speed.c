/* Why --blkhash uses GnuTLS: sha256 throughput of GnuTLS (nettle) and
 * OpenSSL (libcrypto) on the 64 KiB blocks --blkhash hashes, one core,
 * in alternating rounds.  Not built by make (it needs libssl-dev):
 *
 *   gcc -O2 bench/hash-speed.c -o /tmp/hash-speed \
 *     $(pkg-config --cflags --libs gnutls libcrypto) && /tmp/hash-speed
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <openssl/evp.h>

#define BLOCK 65536
#define BLOCKS 16384 /* 1 GiB per measurement */

static double
now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int
main (void)
{
  unsigned char *buf = malloc (BLOCK), out[EVP_MAX_MD_SIZE];
  unsigned int len;

  if (!buf)
    return 1;
  for (size_t i = 0; i < BLOCK; i++)
    buf[i] = i * 7;
  for (int round = 0; round < 5; round++) {
    double t = now (), g, o;
    for (size_t i = 0; i < BLOCKS; i++)
      gnutls_hash_fast (GNUTLS_DIG_SHA256, buf, BLOCK, out);
    g = now () - t;
    t = now ();
    for (size_t i = 0; i < BLOCKS; i++)
      EVP_Digest (buf, BLOCK, out, &len, EVP_sha256 (), NULL);
    o = now () - t;
    printf ("round %d: GnuTLS %.2f GiB/s, OpenSSL %.2f GiB/s\n", round + 1,
            1 / g, 1 / o);
  }
  free (buf);
  return 0;
}
