#!/bin/bash
# X.509 over a Unix socket: libnbd 1.14 checks a server's certificate
# only against a host name, which a Unix socket lacks, so a server whose
# certificate another CA signed would be accepted.  nbdcp refuses such a
# copy before connecting (exit 1, a message naming TCP, tls-psk-file=
# and a newer libnbd), as source and as destination, writing nothing;
# vsock is refused alike, a URI with one slash is left to libnbd;
# tls-verify-peer=false in the URI (or 0, no, off, in any case) lets
# it through, true or anything else does not; a pre-shared key
# over a Unix socket still copies the right bytes; the same rogue server
# over TCP is refused by libnbd, and a server with a good certificate
# over TCP is accepted (so the certificates are right).
. "${srcdir:-.}/tests/functions.sh"
requires certtool
requires psktool
requires_nbdkit_plugin file
"$NBDKIT" --dump-config | grep -q '^tls=yes' || skip "nbdkit was built without TLS"
grep -q '^#define HAVE_NBD_SET_TLS_HOSTNAME 1' config.h 2>/dev/null &&
  skip "built with nbd_set_tls_hostname: libnbd checks the certificate"

# make_ca DIR: a CA in DIR (ca-cert.pem, ca-key.pem) with a server
# certificate for localhost and 127.0.0.1 and a client certificate, laid
# out as nbdkit and libnbd read a --tls-certificates directory.
make_ca ()
{
  local d=$1
  mkdir -p "$d"
  certtool --generate-privkey --outfile "$d/ca-key.pem" 2>/dev/null
  printf 'cn = %s\nca\ncert_signing_key\nexpiration_days = 2\n' \
    "$(basename "$d")" >"$d/ca.info"
  certtool --generate-self-signed --load-privkey "$d/ca-key.pem" \
    --template "$d/ca.info" --outfile "$d/ca-cert.pem" 2>/dev/null
  printf 'cn = localhost\ndns_name = localhost\nip_address = 127.0.0.1\n%s\n' \
    'tls_www_server
encryption_key
signing_key
expiration_days = 2' >"$d/server.info"
  printf 'cn = client\ntls_www_client\nencryption_key\nsigning_key\n%s\n' \
    'expiration_days = 2' >"$d/client.info"
  for who in server client; do
    certtool --generate-privkey --outfile "$d/$who-key.pem" 2>/dev/null
    certtool --generate-certificate --load-ca-certificate "$d/ca-cert.pem" \
      --load-ca-privkey "$d/ca-key.pem" --load-privkey "$d/$who-key.pem" \
      --template "$d/$who.info" --outfile "$d/$who-cert.pem" 2>/dev/null
  done
  [ -s "$d/server-cert.pem" ] || skip "certtool cannot make certificates"
}
make_ca "$tmp/good"
make_ca "$tmp/rogue"

size=$((1024 * 1024 + 4096))
head -c $size /dev/urandom >"$tmp/data"
cp "$tmp/data" "$tmp/dst"
rogue=(--tls=require --tls-certificates="$tmp/rogue")
start_nbdkit rsrc "${rogue[@]}" -r file "$tmp/data"
start_nbdkit rdst "${rogue[@]}" file "$tmp/dst"
x509="tls-certificates=$tmp/good"
rsrc="nbds+unix:///?socket=$tmp/rsrc.sock&$x509"
rdst="nbds+unix:///?socket=$tmp/rdst.sock&$x509"
way_out='TCP.*tls-psk-file=.*newer libnbd'

# The rogue server as source, then as destination: refused, nothing
# created or changed.
expect_fail "^nbdcp: .*$way_out" "$NBDCP" "$rsrc" "$tmp/out1"
[ ! -e "$tmp/out1" ] || fail "a refused source left out1 behind"
head -c $size /dev/zero >"$tmp/zeros"
expect_fail "^nbdcp: .*$way_out" "$NBDCP" "$tmp/zeros" "$rdst"
cmp "$tmp/data" "$tmp/dst" || fail "a refused destination was written"
# Refused before connecting: the server saw no TLS handshake.
! grep -qi 'gnutls\|tls' "$tmp/rsrc.err" "$tmp/rdst.err" ||
  { cat "$tmp/rsrc.err" "$tmp/rdst.err" >&2; fail "nbdcp connected first"; }

# vsock has no host name either: refused the same way, before any
# connection (no vsock is needed).  A URI that is not one of these
# (a single slash) is left for libnbd to refuse.
expect_fail "^nbdcp: .*$way_out" "$NBDCP" "nbds+vsock://1:10809/?$x509" null:
expect_fail "^nbdcp: nbds\+vsock:/1:10809/.*URI must begin with 'nbds\+vsock://'" \
  "$NBDCP" "nbds+vsock:/1:10809/?$x509" null:
expect_fail "^nbdcp: nbds\+unix:/\?socket=.*URI must begin with 'nbds\+unix://'" \
  "$NBDCP" "nbds+unix:/?socket=$tmp/rsrc.sock&$x509" null:

# tls-verify-peer=false: the user asked for no check.
run_nbdcp "$rsrc&tls-verify-peer=false" "$tmp/out2" ||
  fail "tls-verify-peer=false was refused"
cmp "$tmp/data" "$tmp/out2" || fail "tls-verify-peer=false: copy differs"
# Every spelling of false turns the check off; true, its spellings and
# anything else leave it on (refused, as with no parameter at all).
for v in false FALSE 0 no No off OFF; do
  rm -f "$tmp/out2"
  run_nbdcp "$rsrc&tls-verify-peer=$v" "$tmp/out2" ||
    fail "tls-verify-peer=$v was refused"
  cmp "$tmp/data" "$tmp/out2" || fail "tls-verify-peer=$v: copy differs"
done
for v in true TRUE 1 yes on falsely 00 ''; do
  expect_fail "^nbdcp: .*$way_out" "$NBDCP" "$rsrc&tls-verify-peer=$v" "$tmp/out6"
  [ ! -e "$tmp/out6" ] || fail "tls-verify-peer=$v: a refused source left out6 behind"
done

# A pre-shared key over a Unix socket is checked by both sides: it
# works, both ways.
psktool -u alice -p "$tmp/keys.psk" >/dev/null ||
  skip "psktool cannot make a key file"
psk="tls-psk-file=$tmp/keys.psk"
truncate -s $size "$tmp/pdst"
start_nbdkit psrc --tls=require --tls-psk="$tmp/keys.psk" -r file "$tmp/data"
start_nbdkit pdst --tls=require --tls-psk="$tmp/keys.psk" file "$tmp/pdst"
run_nbdcp "nbds+unix://alice@/?socket=$tmp/psrc.sock&$psk" "$tmp/out3" ||
  fail "PSK over a Unix socket: source refused"
cmp "$tmp/data" "$tmp/out3" || fail "PSK source: copy differs"
run_nbdcp "$tmp/data" "nbds+unix://alice@/?socket=$tmp/pdst.sock&$psk" ||
  fail "PSK over a Unix socket: destination refused"
cmp "$tmp/data" "$tmp/pdst" || fail "PSK destination: copy differs"

# Over TCP, libnbd checks the host name: the rogue server is refused,
# one with a certificate of the good CA is accepted.
start_nbdkit_tcp rtcp "${rogue[@]}" -r file "$tmp/data"
expect_fail '^nbdcp: .*(certificate|verif)' \
  "$NBDCP" "nbds://localhost:$port_rtcp/?$x509" "$tmp/out4"
[ ! -e "$tmp/out4" ] || fail "a refused TCP source left out4 behind"
start_nbdkit_tcp gtcp --tls=require --tls-certificates="$tmp/good" \
  -r file "$tmp/data"
run_nbdcp "nbds://localhost:$port_gtcp/?$x509" "$tmp/out5" ||
  fail "a server with a good certificate was refused over TCP"
cmp "$tmp/data" "$tmp/out5" || fail "TCP X.509: copy differs"
exit 0
