#!/usr/bin/env bash
# The monthly routine of a disconnected site, end to end on this machine (the
# output in docs/maintenance.md, "A real run", comes from it):
#
#   1. a source registry seeded each month with testdata/monthly/month-N (two
#      catalogs that share related images; versions come and go)
#   2. three monthly mirror-to-mirror runs into an embedded mirror registry
#   3. airlock history
#   4. airlock delete --generate --stale, the plan reviewed
#   5. airlock delete --delete-yaml-file (after a refused, edited plan)
#   6. the mirror registry stopped, airlock registry gc --dry-run, then gc
#   7. the mirror registry started again: what remains is served (curl)
#
# Environment: AIRLOCK (default bin/airlock), WORK (default: a new temporary
# directory, kept).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
AIRLOCK=${AIRLOCK:-$here/bin/airlock}
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/airlock-monthly.XXXXXX")}
mkdir -p "$work"
pids=()
cleanup() { local p; for p in ${pids[@]+"${pids[@]}"}; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done; true; }
trap cleanup EXIT

run() { echo "\$ airlock $*" | sed "s#$work#\$W#g"; "$AIRLOCK" "$@" 2>&1 | sed "s#$work#\$W#g"; }

serve() { # NAME [ADDR]: sets host and pid
	: >"$work/$1.out"
	"$AIRLOCK" registry serve --root "$work/$1" --addr "${2:-127.0.0.1:0}" >"$work/$1.out" 2>"$work/$1.log" &
	pids+=($!)
	pid=$!
	host=""
	for _ in $(seq 600); do
		host=$(sed -n 's#^airlock registry listening on http://\([^ ]*\) .*#\1#p' "$work/$1.out")
		[[ -n $host ]] && return 0
		sleep 0.05
	done
	echo "registry $1 did not start" >&2
	return 1
}

serve source
src=$host
serve mirror-registry
mirror=$host
mirror_pid=$pid
echo "source http://$src, mirror http://$mirror; \$W=$work"

debug=(registry.example.com/tools/debug:1.0 registry.example.com/tools/debug:1.0 registry.example.com/tools/debug:2.0)
for m in 1 2 3; do
	echo
	echo "==> month $m"
	for c in redhat community; do
		"$AIRLOCK" registry seed --registry "$src" --dest-tls-verify=false --catalog-dir "$here/testdata/monthly/month-$m/$c" \
			--catalog-repo "acme/$c-index" --catalog-tag v4.18 --multi-arch-every 2 --image "${debug[m - 1]}" \
			--work-dir "$work/seed-$m-$c" >/dev/null 2>&1
	done
	cat >"$work/imageset.yaml" <<YAML
apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: $src/acme/redhat-index:v4.18
    packages:
    - name: alpha
  - catalog: $src/acme/community-index:v4.18
    packages:
    - name: beta
  additionalImages:
  - name: $src/${debug[m - 1]#registry.example.com/}
YAML
	run mirror -c "$work/imageset.yaml" --workspace "file://$work/ws" "docker://$mirror/mirror" --src-tls-verify=false --dest-tls-verify=false --log-level warn | sed -n '/summary/,/catalog:/p' 
done

echo
echo "==> what is in the mirror, and why"
run history --workspace "file://$work/ws"

echo
echo "==> plan the removal of what fell out"
run delete --generate --stale --workspace "file://$work/ws" "docker://$mirror/mirror" --dest-tls-verify=false
echo "--- \$W/ws/working-dir/delete/delete-images.yaml (first entries)"
sed -n '1,/^  - repository/p' "$work/ws/working-dir/delete/delete-images.yaml" | sed "s#$work#\$W#g"
sed -n '/^  - repository/,$p' "$work/ws/working-dir/delete/delete-images.yaml" | sed -n '2,12p'
echo "..."
sed -n '/^kept:/,$p' "$work/ws/working-dir/delete/delete-images.yaml"

echo
echo "==> an edited plan is refused"
plan=$work/ws/working-dir/delete/delete-images.yaml
sed "0,/repository: $mirror\//s##repository: quay.io/evil/#" "$plan" >"$work/ws/working-dir/delete/edited.yaml"
run delete --delete-yaml-file "$work/ws/working-dir/delete/edited.yaml" "docker://$mirror/mirror" --dest-tls-verify=false || echo "(exit $?)"

echo
echo "==> execute the reviewed plan"
run delete --delete-yaml-file "$plan" "docker://$mirror/mirror" --dest-tls-verify=false

echo
echo "==> stop the mirror registry, reclaim the space"
kill -TERM "$mirror_pid"
wait "$mirror_pid" 2>/dev/null || true
du -sb "$work/mirror-registry" | sed "s#$work#\$W#g"
run registry gc --root "$work/mirror-registry" --dry-run
run registry gc --root "$work/mirror-registry"
du -sb "$work/mirror-registry" | sed "s#$work#\$W#g"

echo
echo "==> start it again: what the last month uses is served"
serve mirror-registry "$mirror"
for repo in mirror/acme/alpha-bundle mirror/acme/beta-bundle mirror/shared/kube-rbac-proxy mirror/tools/debug; do
	echo "$repo: $(curl -fsS "http://$mirror/v2/$repo/tags/list")"
done
run delete --generate --stale --workspace "file://$work/ws" "docker://$mirror/mirror" --dest-tls-verify=false | sed -n "1,/manifest(s) to delete/p"
