package signature_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
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

// source is a registry attachments are read from: its host and whether it
// has the referrers API.
type server struct {
	name string
	api  bool
	host func(t *testing.T) string
}

// sources: the embedded Distribution v3 (no referrers API),
// go-containerregistry's registry with the referrers API, and Debian's
// Distribution 2.8 (no referrers API; skipped when docker-registry is absent,
// CI installs it).
var sources = []server{
	{registrytest.DistributionV3, false, func(t *testing.T) string { return registrytest.StartKind(t, registrytest.DistributionV3).Host }},
	{"ggcr-referrers-api", true, startReferrersAPI},
	{registrytest.Distribution28, false, func(t *testing.T) string { return registrytest.StartKind(t, registrytest.Distribution28).Host }},
}

func startReferrersAPI(t *testing.T) string {
	s := httptest.NewServer(ggcrregistry.New(ggcrregistry.WithReferrersSupport(true), ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// destination is a registry attachments are carried to: every kind of the
// registry matrix (registrytest.Kinds: Distribution 2.8 and v3, token
// authentication, CDN redirects, a private CA, htpasswd), none with the
// referrers API, and go-containerregistry's registry with it.
type destination struct {
	name   string
	api    bool
	client *registry.Client
	host   string
	remote []remote.Option
}

func destinations(t *testing.T, kind string) destination {
	t.Helper()
	if kind == "ggcr-referrers-api" {
		return destination{name: kind, api: true, client: registry.New(registry.Options{}), host: startReferrersAPI(t)}
	}
	tg := registrytest.StartKind(t, kind)
	return destination{name: kind, host: tg.Host, remote: tg.Remote(tg.Push),
		client: registry.New(registry.Options{AuthFile: tg.AuthFile(t, tg.Push), CertDir: tg.CertDir})}
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
	for _, src := range sources {
		for _, kind := range append([]string{"ggcr-referrers-api"}, registrytest.Kinds...) {
			t.Run(src.name+"→"+kind, func(t *testing.T) {
				if why := registrytest.Missing(kind); why != "" {
					t.Skipf("%s: %s", kind, why)
				}
				s := seed(t, src.host(t))
				dst := destinations(t, kind)
				dstHost := dst.host
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
				rep, err := transfer.Copy(ctx, reg, dst.client, jobs, transfer.Options{})
				if err != nil {
					t.Fatalf("copy: %v (%+v)", err, rep.Failed())
				}
				api, err := signature.HasReferrersAPI(ctx, dst.client, dstRepo, s.image.Digest)
				if err != nil || api != dst.api {
					t.Fatalf("HasReferrersAPI = %v, %v; want %v", api, err, dst.api)
				}
				st, err := signature.KeepFindable(ctx, dst.client, []signature.Referrers{{Repo: dstRepo, Subject: s.image.Digest, List: refs}})
				if err != nil {
					t.Fatal(err)
				}
				if (st.WithAPI == 1) != dst.api || (st.Indexes == 1) == dst.api {
					t.Errorf("KeepFindable %+v on a registry with API=%v", st, dst.api)
				}
				for _, f := range found {
					if _, err := dst.client.Manifest(ctx, dstRepo, f.Digest.String()); err != nil {
						t.Errorf("%s not at the destination by digest: %v", f.Digest, err)
					}
					if f.Tag != "" {
						if dd, err := dst.client.Resolve(ctx, dstRepo+":"+f.Tag); err != nil || dd.Digest != f.Digest {
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
				for _, r := range signtest.Referrers(t, dstRepo, s.image.Digest, dst.remote...) {
					ok = ok || (r.Digest.String() == s.sbom.String() && r.ArtifactType == wantType)
				}
				if !ok {
					t.Errorf("go-containerregistry finds no SBOM referrer of %s@%s: %+v", dstRepo, s.image.Digest, signtest.Referrers(t, dstRepo, s.image.Digest, dst.remote...))
				}
				// Again: nothing to do, the index is not pushed twice.
				if _, err := signature.KeepFindable(ctx, dst.client, []signature.Referrers{{Repo: dstRepo, Subject: s.image.Digest, List: refs}}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

func hash(d digest.Digest) v1.Hash {
	return v1.Hash{Algorithm: d.Algorithm().String(), Hex: d.Encoded()}
}
