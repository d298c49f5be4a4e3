package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
)

// releaseEnv is a release on a source registry with its signature store and
// release key.
type releaseEnv struct {
	src   *registrytest.Registry
	rel   releasetest.Release
	key   signtest.ReleaseKey
	keys  string // the public key's file
	store *signtest.SignatureStore
}

func newReleaseEnv(t *testing.T, spec releasetest.Spec) *releaseEnv {
	t.Helper()
	e := &releaseEnv{src: registrytest.Start(t), key: signtest.NewReleaseKey(t, "rsa"), store: signtest.NewSignatureStore(t)}
	e.rel = releasetest.Push(t, e.src.Host(), spec)
	e.keys = filepath.Join(t.TempDir(), "release-keys.asc")
	if err := os.WriteFile(e.keys, e.key.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	e.store.Put(e.rel.Digest, e.key.SignRelease(t, e.rel.Ref, e.rel.Digest))
	return e
}

// nextZStream pushes 4.15.2, which follows e's 4.15.1 and shares all but
// changed of its components, and signs it into e's store.
func (e *releaseEnv) nextZStream(t *testing.T, components, changed int) releasetest.Release {
	t.Helper()
	next := releasetest.Push(t, e.src.Host(), releasetest.Spec{Version: "4.15.2", Previous: []string{"4.15.1"}, Components: components, Changed: changed})
	e.store.Put(next.Digest, e.key.SignRelease(t, next.Ref, next.Digest))
	return next
}

// stable415 is an update service serving stable-4.15 of e's release and
// next.
func (e *releaseEnv) stable415(t *testing.T, next releasetest.Release) *cincinnatitest.Server {
	t.Helper()
	svc := cincinnatitest.New(t)
	svc.Serve("stable-4.15", releasetest.GraphJSON(t, "stable-4.15", releasetest.Node{Version: "4.15.1", Payload: e.rel.PayloadRef()}, releasetest.Node{Version: "4.15.2", Payload: next.PayloadRef()}))
	return svc
}

// config writes an ImageSetConfiguration whose platform stanza is body.
func releaseConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "isc.yaml")
	if err := os.WriteFile(p, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// digestAt returns the digest ref has in its registry ("" when absent),
// asked with go-containerregistry.
func digestAt(t *testing.T, ref string) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, err := remote.Head(r)
	if err != nil {
		return ""
	}
	return d.Digest.String()
}

// checkReleaseMirrored checks that rel's payload and every component are in
// dest at their oc-mirror destinations, by digest, and that the cluster
// resources hold the release's mirror set and signature ConfigMap.
func checkReleaseMirrored(t *testing.T, what string, res *Result, dest string, rel releasetest.Release) {
	t.Helper()
	tag := rel.Version + "-x86_64"
	if got := digestAt(t, dest+"/openshift/release-images:"+tag); got != rel.Digest.String() {
		t.Errorf("%s: payload at %s/openshift/release-images:%s is %q, want %s", what, dest, tag, got, rel.Digest)
	}
	missing := 0
	for n, ref := range rel.Components {
		_, d, _ := strings.Cut(ref, "@")
		if got := digestAt(t, dest+"/openshift/release:"+tag+"-"+n); got != d {
			missing++
			if missing < 3 {
				t.Errorf("%s: component %s at %s/openshift/release:%s-%s is %q, want %s", what, n, dest, tag, n, got, d)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%s: %d of %d components not mirrored", what, missing, len(rel.Components))
	}
	if rel.KubeVirt != "" {
		_, d, _ := strings.Cut(rel.KubeVirt, "@")
		if got := digestAt(t, dest+"/openshift/release:"+tag+"-kube-virt-container"); got != d {
			t.Errorf("%s: the KubeVirt image at %s/openshift/release:%s-kube-virt-container is %q, want %s", what, dest, tag, got, d)
		}
	}
	crs := filepath.Join(res.WorkingDir, "cluster-resources")
	if b, err := os.ReadFile(filepath.Join(crs, "idms-release-0.yaml")); err != nil || !strings.Contains(string(b), dest+"/openshift/release") {
		t.Errorf("%s: idms-release-0.yaml: %v\n%s", what, err, b)
	}
	if b, err := os.ReadFile(filepath.Join(crs, "icsp", "icsp-release-0.yaml")); err != nil || !strings.Contains(string(b), dest+"/openshift/release-images") {
		t.Errorf("%s: icsp/icsp-release-0.yaml: %v\n%s", what, err, b)
	}
	if b, err := os.ReadFile(filepath.Join(crs, "release-signatures.yaml")); err != nil || !strings.Contains(string(b), "sha256-"+rel.Digest.Encoded()+"-1") {
		t.Errorf("%s: release-signatures.yaml: %v\n%s", what, err, b)
	}
}

// A release named directly (release:), with its KubeVirt image, goes
// mirror-to-mirror, mirror-to-disk and disk-to-mirror with the source registry and the signature store
// offline; a configuration asking for a release the archive lacks is
// refused by name.
func TestReleaseByReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 150, KubeVirt: true})
	cfg := releaseConfig(t, "    release: "+e.rel.Ref+"\n    kubeVirtContainer: true\n")
	opts := func() Options {
		return Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1}, Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys}}
	}

	dst := registrytest.Start(t)
	o := opts()
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseMirrored(t, "mirror-to-mirror", res, dst.Host()+"/m2m", e.rel)
	checkReleaseOutputs(t, res, strings.NewReplacer(dst.Host(), "DEST", e.src.Host(), "SOURCE", e.rel.Digest.Encoded(), "PAYLOADHEX"))

	target := t.TempDir()
	o = opts()
	o.Destination.Location = location.File(target)
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.Verify(ctx, res.Archive.Dir); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	sigAsked := len(e.store.Requests())
	far := registrytest.Start(t)
	o = opts()
	o.Releases.SignatureURL = ""
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(target), location.File(t.TempDir()), location.Docker(far.Host()+"/far")
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseMirrored(t, "disk-to-mirror", res, far.Host()+"/far", e.rel)
	if n := len(e.store.Requests()); n != sigAsked {
		t.Errorf("disk-to-mirror asked the signature store %d times", n-sigAsked)
	}

	o.ConfigPath = releaseConfig(t, "    release: "+e.src.Host()+"/ocp/release:4.15.9-x86_64\n")
	if _, err := Mirror(ctx, o); err == nil || !strings.Contains(err.Error(), "release "+e.src.Host()+"/ocp/release:4.15.9-x86_64 (not in the archive)") {
		t.Errorf("disk-to-mirror of a release the archive lacks: %v", err)
	}
}

// A release whose signature is missing, tampered, made for another digest or
// by another key is refused with the reason, and nothing of it reaches the
// mirror; --ignore-release-signature mirrors it with a warning.
func TestReleaseSignatureRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 5})
	other := releasetest.Push(t, e.src.Host(), releasetest.Spec{Version: "4.15.2", Components: 5, Changed: 2})
	good := e.key.SignRelease(t, e.rel.Ref, e.rel.Digest)
	tampered := append([]byte(nil), good...)
	tampered[len(tampered)/2] ^= 0x20
	cases := []struct {
		name string
		sig  []byte
		want string
	}{
		{"missing", nil, "no signature was found"},
		{"tampered", tampered, "refused"},
		{"another digest", e.key.SignRelease(t, other.Ref, other.Digest), "not the payload's digest " + e.rel.Digest.String()},
		{"another repository", e.key.SignRelease(t, e.src.Host()+"/elsewhere/release:4.15.1-x86_64", e.rel.Digest), "not the payload's repository"},
		{"another key", signtest.NewReleaseKey(t, "rsa").SignRelease(t, e.rel.Ref, e.rel.Digest), "refused"},
	}
	cfg := releaseConfig(t, "    release: "+e.rel.Ref+"\n")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := signtest.NewSignatureStore(t)
			if tc.sig != nil {
				store.Put(e.rel.Digest, tc.sig)
			}
			dst := registrytest.Start(t)
			o := Options{ConfigPath: cfg, Releases: ReleaseOptions{SignatureURL: store.URL, SignatureKeys: e.keys}}
			o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
			_, err := Mirror(ctx, o)
			if err == nil || !strings.Contains(err.Error(), "release 4.15.1") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Mirror: %v, want a refusal of release 4.15.1 saying %q", err, tc.want)
			}
			reg, _ := name.NewRegistry(dst.Host())
			if repos, err := remote.Catalog(ctx, reg); err != nil || len(repos) > 0 {
				t.Errorf("the mirror holds %v (%v), want nothing", repos, err)
			}

			o.Releases.IgnoreSignatures = true
			res, err := Mirror(ctx, o)
			if err != nil {
				t.Fatalf("with --ignore-release-signature: %v", err)
			}
			if got := digestAt(t, dst.Host()+"/m2m/openshift/release-images:4.15.1-x86_64"); got != e.rel.Digest.String() {
				t.Errorf("with --ignore-release-signature the payload is %q", got)
			}
			if !strings.Contains(strings.Join(res.Warnings, "\n"), "signatures NOT verified (--ignore-release-signature)") {
				t.Errorf("no warning about the unverified release: %q", res.Warnings)
			}
		})
	}
}

// signatureData is a binaryData value of a signature ConfigMap (the
// throwaway key signs differently each run).
var signatureData = regexp.MustCompile(`(sha256-PAYLOADHEX-\d+"?:) "?[A-Za-z0-9+/=]+"?`)

// checkReleaseOutputs compares the release's cluster resources and summary
// lines with goldens (hosts and the payload digest replaced by names).
func checkReleaseOutputs(t *testing.T, res *Result, names *strings.Replacer) {
	t.Helper()
	crs := filepath.Join(res.WorkingDir, "cluster-resources")
	for _, f := range []string{"idms-release-0.yaml", "release-signatures.yaml", "release-signatures.json"} {
		b, err := os.ReadFile(filepath.Join(crs, f))
		if err != nil {
			t.Error(err)
			continue
		}
		golden.Check(t, "testdata/release/"+f, []byte(signatureData.ReplaceAllString(names.Replace(string(b)), "$1 SIGNATURE")))
	}
	golden.Check(t, "testdata/release/summary.txt", []byte(names.Replace(strings.Join(res.Sources, "\n")+"\n")))
	var sum strings.Builder
	res.WriteSummary(&sum)
	if b, err := os.ReadFile(filepath.Join(res.WorkingDir, "report.html")); err != nil || !strings.Contains(string(b), "release:   4.15.1 (amd64)") || !strings.Contains(sum.String(), "  release:   4.15.1 (amd64)") {
		t.Errorf("the summary or report.html has no line for the release (%v):\n%s", err, sum.String())
	}
}
