package signature_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// server is a registry of the matrix: its host and whether it has the
// referrers API.
type server struct {
	name string
	api  bool
	host func(t *testing.T) string
}

// servers are the registries attachments are carried between: the embedded
// Distribution v3 (no referrers API), go-containerregistry's registry with
// the referrers API, and Debian's Distribution 2.8 (no referrers API) when
// /usr/bin/docker-registry is installed.
var servers = []server{
	{"distribution-v3", false, func(t *testing.T) string { return registrytest.Start(t).Host() }},
	{"ggcr-referrers-api", true, func(t *testing.T) string {
		s := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
		t.Cleanup(s.Close)
		return s.Listener.Addr().String()
	}},
	{"distribution-2.8", false, startDistribution28},
}

// startDistribution28 runs Debian's docker-registry (Distribution 2.8) on
// 127.0.0.1, storing under t.TempDir(); the test skips when it is absent (CI
// installs it).
func startDistribution28(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Skip("docker-registry (Distribution 2.8) is not installed (Debian: apt-get install docker-registry); CI installs it")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yml")
	conf := fmt.Sprintf("version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", cfg)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := c.Get("http://" + addr + "/v2/"); err == nil {
			resp.Body.Close()
			return addr
		}
	}
	t.Fatalf("docker-registry did not answer on %s within 30 s", addr)
	return ""
}

// source is an image with a cosign signature, an SBOM referrer and a cosign
// signature of the SBOM (an attachment of an attachment), and a multi-arch
// index with a signature of one instance.
type source struct {
	repo, multiRepo string
	image, index    imagetest.Pushed
	sig, sbom       digest.Digest
	sbomSig         digest.Digest
	childSig        digest.Digest
}

func seed(t *testing.T, host string) source {
	t.Helper()
	k := signtest.NewKey(t)
	s := source{repo: host + "/apps/app", multiRepo: host + "/apps/multi"}
	s.image = imagetest.MustPush(t, s.repo+":1.0", fakeimage.Spec{Seed: 21, Layers: 2})
	s.index = imagetest.MustPush(t, s.multiRepo+":1.0", fakeimage.Spec{Seed: 22, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	reg := registry.New(registry.Options{})
	ctx := context.Background()
	s.sig = signtest.Sign(t, k, s.repo, s.image.Digest)
	m, err := reg.Manifest(ctx, s.repo, s.image.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	s.sbom = signtest.PushSBOM(t, s.repo, v1.Descriptor{MediaType: types.MediaType(m.MediaType), Digest: hash(s.image.Digest), Size: int64(len(m.Raw))}, []byte(`{"spdxVersion":"SPDX-2.3"}`))
	s.sbomSig = signtest.Sign(t, k, s.repo, s.sbom)
	s.childSig = signtest.Sign(t, k, s.multiRepo, s.index.Manifests[1])
	return s
}

func TestDiscoverAndCarry(t *testing.T) {
	for _, src := range servers {
		for _, dst := range servers {
			t.Run(src.name+"→"+dst.name, func(t *testing.T) {
				s := seed(t, src.host(t))
				dstHost := dst.host(t)
				ctx := context.Background()
				reg := registry.New(registry.Options{})
				d := signature.NewDiscoverer(reg)
				found, err := d.Discover(ctx, signature.Image{Source: "app", Repo: s.repo, Digest: s.image.Digest})
				if err != nil {
					t.Fatal(err)
				}
				got := map[digest.Digest]string{}
				for _, f := range found {
					got[f.Digest] = f.Attachment.Kind + " of " + string(f.Attachment.Subject)
				}
				want := map[digest.Digest]string{
					s.sig:     "sig of " + string(s.image.Digest),
					s.sbom:    "referrer of " + string(s.image.Digest),
					s.sbomSig: "sig of " + string(s.sbom),
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("found %v, want %v", got, want)
				}
				multi, err := d.Discover(ctx, signature.Image{Source: "multi", Repo: s.multiRepo, Digest: s.index.Digest})
				if err != nil {
					t.Fatal(err)
				}
				if len(multi) != 1 || multi[0].Digest != s.childSig || multi[0].Attachment.Subject != s.index.Manifests[1] {
					t.Fatalf("index attachments %+v, want the instance's signature %s", multi, s.childSig)
				}
				t.Logf("%d requests for 2 images (%d subjects)", d.Requests(), 2+len(s.index.Manifests))

				// Carried as the plan carries them: one job per attachment, by
				// digest, cosign ones under their tag; then kept findable.
				dstRepo := dstHost + "/mirror/app"
				jobs := []transfer.Job{{Source: s.repo, Digest: s.image.Digest, Dest: dstRepo, Tags: []string{"1.0"}}}
				var refs []oci.Referrer
				for _, f := range found {
					j := transfer.Job{Source: s.repo, Digest: f.Digest, Dest: dstRepo}
					if f.Tag != "" {
						j.Tags = []string{f.Tag}
					}
					jobs = append(jobs, j)
					if f.Attachment.Kind == oci.AttachmentReferrer {
						refs = append(refs, oci.Referrer{Descriptor: oci.Descriptor{MediaType: f.MediaType, Digest: f.Digest, Size: f.Attachment.Size}, ArtifactType: f.Attachment.ArtifactType})
					}
				}
				rep, err := transfer.Copy(ctx, reg, reg, jobs, transfer.Options{})
				if err != nil {
					t.Fatalf("copy: %v (%+v)", err, rep.Failed())
				}
				api, err := signature.HasReferrersAPI(ctx, reg, dstRepo, s.image.Digest)
				if err != nil || api != dst.api {
					t.Fatalf("HasReferrersAPI = %v, %v; want %v", api, err, dst.api)
				}
				st, err := signature.KeepFindable(ctx, reg, []signature.Referrers{{Repo: dstRepo, Subject: s.image.Digest, List: refs}})
				if err != nil {
					t.Fatal(err)
				}
				if (st.WithAPI == 1) != dst.api || (st.Indexes == 1) == dst.api {
					t.Errorf("KeepFindable %+v on a registry with API=%v", st, dst.api)
				}
				for _, f := range found {
					if _, err := reg.Manifest(ctx, dstRepo, f.Digest.String()); err != nil {
						t.Errorf("%s not at the destination by digest: %v", f.Digest, err)
					}
					if f.Tag != "" {
						if dd, err := reg.Resolve(ctx, dstRepo+":"+f.Tag); err != nil || dd.Digest != f.Digest {
							t.Errorf("tag %s resolves to %v (%v), want %s", f.Tag, dd.Digest, err, f.Digest)
						}
					}
				}
				// An independent client finds the SBOM as a referrer. (The
				// ggcr registry's referrers API gives the config's media type
				// as artifactType, ignoring the manifest's artifactType.)
				wantType := signtest.SBOMArtifactType
				if src.api || dst.api {
					wantType = oci.MediaTypeEmptyJSON
				}
				ok := false
				for _, r := range signtest.Referrers(t, dstRepo, s.image.Digest) {
					ok = ok || (r.Digest.String() == s.sbom.String() && r.ArtifactType == wantType)
				}
				if !ok {
					t.Errorf("go-containerregistry finds no SBOM referrer of %s@%s: %+v", dstRepo, s.image.Digest, signtest.Referrers(t, dstRepo, s.image.Digest))
				}
				// Again: nothing to do, the index is not pushed twice.
				if _, err := signature.KeepFindable(ctx, reg, []signature.Referrers{{Repo: dstRepo, Subject: s.image.Digest, List: refs}}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func hash(d digest.Digest) v1.Hash {
	return v1.Hash{Algorithm: d.Algorithm().String(), Hex: d.Encoded()}
}
