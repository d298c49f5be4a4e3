//go:build containers_image_openpgp

package conformance

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containers/image/v5/docker"
	"github.com/containers/image/v5/manifest"
	"github.com/containers/image/v5/pkg/blobinfocache/none"
	"github.com/containers/image/v5/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
)

// pullBySourceName pulls ref (its source name) with containers/image's
// docker transport, the library CRI-O pulls with, configured by the
// registries.conf conf: the transport itself picks the mirror. It returns
// the digest of the manifest it got and reads every blob of it (digests
// verified), so a mirror that lacks one fails.
func pullBySourceName(t *testing.T, conf, ref string) (digest.Digest, error) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "registries.conf")
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	sys := &types.SystemContext{
		SystemRegistriesConfPath: p, SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d"),
		DockerInsecureSkipTLSVerify: types.OptionalBoolTrue, // the mirror on 127.0.0.1 speaks plain HTTP
		ArchitectureChoice:          "amd64", OSChoice: "linux",
	}
	ctx := context.Background()
	r, err := docker.ParseReference("//" + ref)
	if err != nil {
		t.Fatal(err)
	}
	src, err := r.NewImageSource(ctx, sys)
	if err != nil {
		return "", err
	}
	defer src.Close()
	raw, mt, err := src.GetManifest(ctx, nil)
	if err != nil {
		return "", err
	}
	d, err := manifest.Digest(raw)
	if err != nil {
		return "", err
	}
	var blobs []types.BlobInfo
	if manifest.MIMETypeIsMultiImage(mt) {
		return d, nil
	}
	m, err := manifest.FromBlob(raw, mt)
	if err != nil {
		return "", err
	}
	blobs = append(blobs, m.ConfigInfo())
	for _, l := range m.LayerInfos() {
		blobs = append(blobs, l.BlobInfo)
	}
	for _, b := range blobs {
		rc, _, err := src.GetBlob(ctx, b, none.NoCache)
		if err != nil {
			return "", err
		}
		v := b.Digest.Verifier()
		_, err = io.Copy(v, rc)
		rc.Close()
		if err != nil {
			return "", err
		}
		if !v.Verified() {
			return "", io.ErrUnexpectedEOF
		}
	}
	return d, nil
}

// TestReleasePullThroughIDMS: a cluster pulls the release payload and its
// components by their source names, by digest, and the node's container
// library finds them at the mirror through the registries.conf the
// machine-config operator writes from airlock's IDMS, with the source
// registry stopped. By tag the release IDMS (digest-only, as oc-mirror
// writes it) does not redirect: that pull fails with the source down.
func TestReleasePullThroughIDMS(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	rel := releasetest.Push(t, src.Host(), releasetest.Spec{Version: "4.15.1", Components: 6})
	key := signtest.NewReleaseKey(t, "rsa")
	store := signtest.NewSignatureStore(t)
	store.Put(rel.Digest, key.SignRelease(t, rel.Ref, rel.Digest))
	keys := filepath.Join(t.TempDir(), "keys.asc")
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	if err := os.WriteFile(keys, key.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n    release: "+rel.Ref+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := pipeline.Mirror(ctx, pipeline.Options{
		ConfigPath: cfg, Workspace: location.File(t.TempDir()),
		Destination: pipeline.DestinationOptions{Location: location.Docker(dst.Host() + "/ocp")},
		Releases:    pipeline.ReleaseOptions{SignatureURL: store.URL, SignatureKeys: keys},
	})
	if err != nil {
		t.Fatal(err)
	}
	src.Stop()
	conf, n := registriesConf(t, filepath.Join(res.WorkingDir, "cluster-resources"), "mirror-sets")
	if n == 0 || !strings.Contains(conf, dst.Host()+"/ocp/openshift/release-images") {
		t.Fatalf("the IDMS gives no rule for the payloads (%d rules):\n%s", n, conf)
	}
	if got, err := pullBySourceName(t, conf, rel.PayloadRef()); err != nil || got != rel.Digest {
		t.Errorf("pulling the payload %s: %s, %v; want %s from the mirror", rel.PayloadRef(), got, err, rel.Digest)
	}
	for name, ref := range rel.Components {
		_, want, _ := strings.Cut(ref, "@")
		if got, err := pullBySourceName(t, conf, ref); err != nil || got.String() != want {
			t.Errorf("pulling component %s (%s): %s, %v", name, ref, got, err)
		}
	}
	if _, err := pullBySourceName(t, conf, rel.Ref); err == nil {
		t.Errorf("the payload by tag (%s) was pulled with the source down: the release IDMS should redirect digests only", rel.Ref)
	}
}
