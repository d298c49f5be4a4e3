#!/bin/sh
# Builds oc-mirror v2 from a source snapshot for the benchmarks and the
# differential release-selection harness (bench/ocmirror/README.md).
#
#   scripts/build-oc-mirror.sh [SNAPSHOT]
#
# SNAPSHOT is a git directory of github.com/openshift/oc-mirror (bare or not;
# default $OCM_GIT_DIR, else /work/.mirror/openshift+oc-mirror/repo) or an
# extracted source tree. The tree is extracted afresh under the cache directory
# ($AIRLOCK_BENCH_CACHE, default ~/.cache/airlock-bench), the two modules the
# Go module proxy refuses (github.com/microlib/simple, go.podman.io/common) are
# replaced by the stand-ins in bench/ocmirror/shims, the embedded oc-mirror v1
# binary by a stub that refuses to run (only --v2 is used), and the binary is
# written to $AIRLOCK_BENCH_CACHE/oc-mirror/oc-mirror, where bench.FindOcMirror
# looks for it. Nothing is written inside this repository.
set -eu

repo=$(cd "$(dirname "$0")/.." && pwd)
snapshot=${1:-${OCM_GIT_DIR:-/work/.mirror/openshift+oc-mirror/repo}}
cache=${AIRLOCK_BENCH_CACHE:-$HOME/.cache/airlock-bench}
out=$cache/oc-mirror
src=$out/src

if [ ! -e "$snapshot" ]; then
	echo "build-oc-mirror: no oc-mirror snapshot at $snapshot (give a git directory or source tree of github.com/openshift/oc-mirror)" >&2
	exit 2
fi
rm -rf "$src"
mkdir -p "$src"
# Only what the v2 binary is built from: a snapshot may lack the content of
# large test fixtures (tests/) and of oc-mirror v1 (v1/), which git archive
# would stop at.
paths="go.mod go.sum cmd internal"
if git --git-dir="$snapshot" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	gitdir=$snapshot
elif git -C "$snapshot" rev-parse --verify -q HEAD >/dev/null 2>&1; then
	gitdir=$(git -C "$snapshot" rev-parse --absolute-git-dir)
else
	gitdir=
fi
if [ -n "$gitdir" ]; then
	commit=$(git --git-dir="$gitdir" rev-parse HEAD)
	# shellcheck disable=SC2086 # paths are words
	git --git-dir="$gitdir" archive --format=tar -o "$out/src.tar" HEAD -- $paths
	tar -x -C "$src" -f "$out/src.tar"
	rm -f "$out/src.tar"
elif [ -f "$snapshot/cmd/oc-mirror/main.go" ]; then
	commit="tree $snapshot"
	# shellcheck disable=SC2086 # paths are words
	(cd "$snapshot" && tar -c $paths) | tar -x -C "$src"
else
	echo "build-oc-mirror: $snapshot is neither a git directory nor an oc-mirror source tree" >&2
	exit 2
fi

# The v2 binary embeds the v1 binary (cmd/oc-mirror/data/oc-mirror-v1); a stub
# stands in for it.
printf '#!/bin/sh\necho "oc-mirror v1 is not built here (scripts/build-oc-mirror.sh): use --v2" >&2\nexit 1\n' \
	>"$src/cmd/oc-mirror/data/oc-mirror-v1"

cd "$src"
go mod edit \
	-replace "github.com/microlib/simple=$repo/bench/ocmirror/shims/simple" \
	-replace "go.podman.io/common=$repo/bench/ocmirror/shims/podman-common"
CGO_ENABLED=0 go build -mod=readonly -trimpath \
	-tags "json1 exclude_graphdriver_devicemapper exclude_graphdriver_btrfs containers_image_openpgp" \
	-o "$out/oc-mirror.new" ./cmd/oc-mirror
mv "$out/oc-mirror.new" "$out/oc-mirror"
printf '%s\n' "$commit" >"$out/COMMIT"
echo "built $out/oc-mirror from $commit"
