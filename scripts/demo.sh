#!/usr/bin/env bash
# airlock's one-command demo (make demo): a full air-gapped round trip on this
# machine, with no internet and nothing to install but airlock itself.
#
#   1. start an embedded registry, the "source" (think: quay.io)
#   2. seed it with testdata/demo/catalog and every image the catalog names
#   3. mirror-to-disk: airlock mirror -c imageset.yaml file://ARCHIVE
#   4. stop the source (the "air gap"), verify the archive
#   5. start a second registry, the "mirror" inside the disconnected site
#   6. disk-to-mirror: airlock mirror -c imageset.yaml --from file://ARCHIVE/batch-0001
#      --workspace file://WORKSPACE docker://MIRROR/mirror
#   7. show what was mirrored and the cluster resources written
#
# Environment:
#   AIRLOCK    the airlock binary (default: bin/airlock, built by make demo)
#   DEMO_DIR   work directory, kept afterwards (default: a temporary directory, removed)
#   DEMO_KEEP  1 keeps the temporary directory
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AIRLOCK=${AIRLOCK:-$here/bin/airlock}
case $AIRLOCK in /*) ;; *) AIRLOCK=$PWD/$AIRLOCK ;; esac
if [[ ! -x $AIRLOCK ]]; then
	echo "demo: $AIRLOCK not found: run make demo (or go build -tags containers_image_openpgp -o bin/airlock ./cmd/airlock)" >&2
	exit 1
fi

keep=${DEMO_KEEP:-0}
if [[ -n ${DEMO_DIR:-} ]]; then
	work=$DEMO_DIR
	keep=1
	if [[ -d $work && -n $(ls -A "$work") ]]; then
		if [[ ! -e $work/.airlock-demo ]]; then
			echo "demo: DEMO_DIR=$work is not empty and not an earlier demo directory: give a new or empty directory" >&2
			exit 1
		fi
		rm -rf "$work"
	fi
	mkdir -p "$work"
	: >"$work/.airlock-demo"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-demo.XXXXXX")
fi
work=$(cd "$work" && pwd)

src_pid=""
mirror_pid=""
started=() # every registry started, so that cleanup stops them whatever happened

stop_registry() { # pid
	local pid=$1
	[[ -n $pid ]] || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
}

cleanup() {
	local rc=$?
	local pid
	for pid in ${started[@]+"${started[@]}"}; do
		stop_registry "$pid"
	done
	if [[ $rc -eq 130 ]]; then
		echo "demo interrupted" >&2
		[[ $keep == 1 ]] || rm -rf "$work"
	elif [[ $rc -ne 0 ]]; then
		echo >&2
		echo "demo FAILED (exit $rc); logs and files are in $work" >&2
		for f in "$work"/*.log; do
			[[ -s $f ]] || continue
			echo "--- $f (last lines)" >&2
			tail -n 20 "$f" >&2
		done
	elif [[ $keep == 1 ]]; then
		echo "files kept in $work"
	else
		rm -rf "$work"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n==> %s\n' "$*"; }
run() {
	local a line='$ airlock'
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@,+-]+$ ]]; then line+=" $a"; else line+=" $(printf '%q' "$a")"; fi
	done
	echo "$line"
	"$AIRLOCK" "$@"
}

# start_registry NAME: starts `airlock registry serve` on a free port in the
# background; sets reg_pid and reg_host (127.0.0.1:PORT).
start_registry() {
	local name=$1 out=$work/$1.out
	printf '$ airlock registry serve --root %s --addr 127.0.0.1:0 &\n' "$work/$name"
	: >"$out" # exists before the background job opens it
	"$AIRLOCK" registry serve --root "$work/$name" --addr 127.0.0.1:0 >"$out" 2>"$work/$name.log" &
	reg_pid=$!
	started+=("$reg_pid")
	reg_host=""
	local i
	for ((i = 0; i < 600; i++)); do
		reg_host=$(sed -n 's#^airlock registry listening on http://\([^ ]*\) .*#\1#p' "$out" || true)
		[[ -n $reg_host ]] && break
		if ! kill -0 "$reg_pid" 2>/dev/null; then
			echo "demo: the $name registry exited: $(cat "$work/$name.log")" >&2
			return 1
		fi
		sleep 0.05
	done
	if [[ -z $reg_host ]]; then
		echo "demo: the $name registry did not start within 30 s" >&2
		return 1
	fi
	# The address is printed once the registry listens; check that /v2/ answers.
	if command -v curl >/dev/null; then
		curl -fsS -o /dev/null "http://$reg_host/v2/"
	fi
	echo "$name registry: http://$reg_host (pid $reg_pid)"
}

"$AIRLOCK" version
echo "work directory: $work"

step "1. Start the source registry (stands in for quay.io and registry.example.com)"
start_registry source
src_pid=$reg_pid
src=$reg_host

step "2. Seed it with the demo catalog, every image it names, and the additional image"
run registry seed --registry "$src" --dest-tls-verify=false \
	--catalog-dir "$here/testdata/demo/catalog" --catalog-repo airlock-demo/demo-index --catalog-tag v1 \
	--catalog-platforms linux/amd64,linux/arm64 --multi-arch-every 3 \
	--image registry.example.com/tools/support-tools:1.4 \
	--work-dir "$work/seed" 2>"$work/seed.log"

# The demo configuration names the public-looking references; point them at the
# seeded source registry (the seed kept every repository path and tag).
sed -e "s#quay\.io/airlock-demo/#$src/airlock-demo/#g" \
	-e "s#registry\.example\.com/#$src/#g" \
	"$here/testdata/demo/imageset.yaml" >"$work/imageset.yaml"
echo
echo "ImageSetConfiguration ($work/imageset.yaml):"
grep -v '^ *#' "$work/imageset.yaml" | sed 's/^/    /'

step "3. Mirror to disk"
run mirror -c "$work/imageset.yaml" "file://$work/archive" --src-tls-verify=false --log-level warn

step "4. Cut the wire: stop the source registry, verify the archive"
stop_registry "$src_pid"
src_pid=""
echo "source registry stopped"
ls -l "$work/archive" "$work/archive/batch-0001" | sed 's/^/    /'
run archive verify "$work/archive/batch-0001"

step "5. Start the mirror registry (inside the disconnected site)"
start_registry mirror
mirror_pid=$reg_pid
mirror=$reg_host

step "6. Disk to mirror"
run mirror -c "$work/imageset.yaml" --from "file://$work/archive/batch-0001" --workspace "file://$work/workspace" "docker://$mirror/mirror" --dest-tls-verify=false --log-level warn

step "7. What was mirrored"
run archive describe "$work/archive/batch-0001"
echo
run list operators --catalog "$mirror/mirror/airlock-demo/demo-index:v1" --src-tls-verify=false --package demo-operator 2>/dev/null
echo
run list operators --catalog "$mirror/mirror/airlock-demo/demo-index:v1" --src-tls-verify=false 2>/dev/null
echo
run list operators --catalog "$mirror/mirror/airlock-demo/demo-index:v1" --src-tls-verify=false --package demo-operator --channel stable 2>/dev/null

step "8. Cluster resources (oc apply -f $work/workspace/working-dir/cluster-resources/)"
find "$work/workspace/working-dir/cluster-resources" -type f -name '*.yaml' | sort | while read -r f; do
	echo "--- ${f#"$work"/}"
	cat "$f"
done

stop_registry "$mirror_pid"
mirror_pid=""
echo
echo "demo OK: catalog and images went source registry -> archive -> mirror registry with the source offline."
