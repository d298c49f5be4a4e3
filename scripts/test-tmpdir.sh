#!/usr/bin/env bash
# Runs a command (make test's go test) with its temporary files on a tmpfs when
# the machine has one with room, else as it is.
# Usage: scripts/test-tmpdir.sh COMMAND [ARG...]
#
# The tests create, sync and delete tens of thousands of small files (workspaces,
# archives, the registries' storage folders, t.TempDir): on ext4 about a quarter of
# the pipeline tests' CPU was the kernel's, most of it creating inodes and syncing
# (docs/development.md, "Where make test spends its time"). On a tmpfs the same tests
# run as they do on disk; only the kernel's work is cheaper. The code under test is
# unchanged: it syncs as it always does, the sync just costs nothing.
#
# TEST_TMPFS is the tmpfs to use (default /dev/shm); TEST_TMPFS_MIN_KB the room it
# must have (default 4 GiB: a whole make test used about 1 GiB of it at its peak).
# TEST_TMPFS=none keeps TMPDIR as it is. The folder is private to this run and
# removed when the command ends, whatever its status.
set -uo pipefail

tmpfs="${TEST_TMPFS:-/dev/shm}"
min_kb="${TEST_TMPFS_MIN_KB:-4194304}"

fstype="$(stat -f -c %T "$tmpfs" 2>/dev/null || true)"
avail_kb="$(df -Pk "$tmpfs" 2>/dev/null | awk 'NR == 2 { print $4 }')"
if [ "$tmpfs" = none ] || [ "$fstype" != tmpfs ] || [ -z "$avail_kb" ] || [ "$avail_kb" -lt "$min_kb" ] ||
  ! dir="$(mktemp -d "$tmpfs/airlock-test.XXXXXX" 2>/dev/null)"; then
  echo "test-tmpdir: TMPDIR unchanged (${TMPDIR:-/tmp}): no tmpfs with ${min_kb} kB free at $tmpfs" >&2
  exec "$@"
fi
echo "test-tmpdir: temporary files in $dir (tmpfs)" >&2
trap 'rm -rf "$dir"' EXIT
trap 'exit 130' INT TERM
TMPDIR="$dir" "$@"
