#!/bin/bash
# TLS with a pre-shared key (nbds+unix://USER@/?socket=...&tls-psk-file=...): both sides encrypted copy the right bytes; a wrong key, an unknown user, a missing key file, or plain nbd+unix to a --tls=require server each fail with exit 1 and a message, creating nothing.
. "${srcdir:-.}/tests/functions.sh"
requires psktool
requires_nbdkit_plugin file
requires_nbdkit_plugin sparse-random
requires_nbdkit_plugin memory
requires "$QEMU_IMG"
"$NBDKIT" --dump-config | grep -q '^tls=yes' || skip "nbdkit was built without TLS"

psktool -u alice -p "$tmp/keys.psk" >/dev/null ||
  skip "psktool cannot make a key file"
psktool -u alice -p "$tmp/other.psk" >/dev/null
cmp -s "$tmp/keys.psk" "$tmp/other.psk" && fail "test setup: two equal random keys"
tls=(--tls=require --tls-psk="$tmp/keys.psk")

# tls_uri NAME [USER] [KEYFILE]
tls_uri ()
{
  echo "nbds+unix://${2:-alice}@/?socket=$tmp/$1.sock&tls-psk-file=${3:-$tmp/keys.psk}"
}

MiB=$((1024 * 1024))
sr=(sparse-random size=$((128 * MiB)) seed=77 percent=30 runlength=1048576)
start_nbdkit srsrc "${tls[@]}" -r "${sr[@]}"
# The destinations whose data is checked take TLS but do not require
# it (--tls=on): nbdcp, given nbds+unix, insists on TLS, while qemu-img
# reads them in plain text to compare.  Another instance of the
# sparse-random source, in plain text too, is what they are compared
# with.
opt_tls=(--tls=on --tls-psk="$tmp/keys.psk")
start_nbdkit srref -r "${sr[@]}"
start_nbdkit srdst "${opt_tls[@]}" memory size=$((128 * MiB))

# TLS -> TLS.
run_nbdcp "$(tls_uri srsrc)" "$(tls_uri srdst)" || fail "TLS -> TLS copy failed"
check_same "$(uri_of "$tmp/srref.sock")" "$(uri_of "$tmp/srdst.sock")" \
  "TLS -> TLS"

# TLS -> file -> TLS: the bytes of a file, both ways.
size=$((2 * MiB + 777))
head -c $size /dev/urandom >"$tmp/src"
start_nbdkit fsrc "${tls[@]}" -r file "$tmp/src"
run_nbdcp "$(tls_uri fsrc)" "$tmp/out" || fail "TLS -> file failed"
cmp "$tmp/src" "$tmp/out" || fail "TLS -> file differs"
truncate -s $size "$tmp/dst"
start_nbdkit fdst "${tls[@]}" file "$tmp/dst"
run_nbdcp "$tmp/out" "$(tls_uri fdst)" || fail "file -> TLS failed"
cmp "$tmp/src" "$tmp/dst" || fail "file -> TLS differs"
start_nbdkit fmem "${opt_tls[@]}" memory size=$size
run_nbdcp "$(tls_uri fsrc)" "$(tls_uri fmem)" || fail "TLS file -> TLS memory failed"
check_same "$tmp/src" "$(uri_of "$tmp/fmem.sock")" "TLS file -> TLS memory"

# Refusals: the wrong key, an unknown user, a missing key file, no TLS
# at all.  Exit 1, a message, and the destination file never created.
expect_fail '^nbdcp: .*(TLS|tls|gnutls|handshake)' \
  "$NBDCP" "$(tls_uri fsrc alice "$tmp/other.psk")" "$tmp/bad1"
expect_fail '^nbdcp: .*bob' \
  "$NBDCP" "$(tls_uri fsrc bob)" "$tmp/bad2"
expect_fail "^nbdcp: .*$tmp/no-such.psk.*No such file" \
  "$NBDCP" "$(tls_uri fsrc alice "$tmp/no-such.psk")" "$tmp/bad3"
expect_fail '^nbdcp: .*(TLS|tls)' \
  "$NBDCP" "$(uri_of "$tmp/fsrc.sock")" "$tmp/bad4"
# The same refusals as the destination.
expect_fail '^nbdcp: .*(TLS|tls)' \
  "$NBDCP" "$tmp/src" "$(uri_of "$tmp/fdst.sock")"
expect_fail '^nbdcp: .*(TLS|tls|gnutls|handshake)' \
  "$NBDCP" "$tmp/src" "$(tls_uri fdst alice "$tmp/other.psk")"
for f in bad1 bad2 bad3 bad4; do
  [ ! -e "$tmp/$f" ] || fail "a refused TLS source left $f behind"
done
cmp "$tmp/src" "$tmp/dst" || fail "a refused TLS destination was changed"
