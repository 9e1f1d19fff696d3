#!/bin/sh
# Lets this machine run aarch64 Linux programs directly, through binfmt_misc and
# qemu-user: the lab's aarch64 test device (tests/lab/support) runs the arm64 bundle this
# way. Mounts binfmt_misc if needed and registers qemu-aarch64 with the F flag (the
# interpreter is opened now, so it works inside any namespace). Idempotent; needs root
# unless the entry is already there. Exit 0 when aarch64 programs can run, else 3 with
# one line that says why.
set -eu
dir=/proc/sys/fs/binfmt_misc
entry=$dir/qemu-aarch64

fail() { echo "setup-binfmt: $*" >&2; exit 3; }

if [ -e "$entry" ] && grep -qs '^enabled' "$entry" && grep -qs '^enabled' "$dir/status"; then
  exit 0
fi
[ "$(id -u)" -eq 0 ] || fail "needs root to register qemu-aarch64 with binfmt_misc"
if [ ! -e "$dir/register" ]; then
  grep -qw binfmt_misc /proc/filesystems || fail "this kernel has no binfmt_misc"
  mount -t binfmt_misc binfmt_misc "$dir" 2>/dev/null || fail "cannot mount binfmt_misc on $dir"
fi
grep -qs '^enabled' "$dir/status" || echo 1 > "$dir/status"
if [ -e "$entry" ]; then
  echo 1 > "$entry" || fail "cannot enable $entry"
  exit 0
fi

# Debian's own line (qemu-user-static) where present; else one for whichever qemu is here.
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ -r "$conf" ] && interp=$(cut -d: -f7 "$conf") && [ -x "$interp" ]; then
  line=$(grep '^:qemu-aarch64:' "$conf")
else
  interp=
  for q in /usr/bin/qemu-aarch64-static /usr/bin/qemu-aarch64; do
    if [ -x "$q" ]; then interp=$q; break; fi
  done
  [ -n "$interp" ] || fail "no qemu-aarch64 (apt-get install qemu-user-static or qemu-user)"
  magic='\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
  mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
  line=":qemu-aarch64:M::$magic:$mask:$interp:F"
fi
printf '%s' "$line" > "$dir/register" 2>/dev/null || fail "the kernel refused the qemu-aarch64 entry ($interp)"
grep -qs '^enabled' "$entry" || fail "$entry is not enabled after registering"
