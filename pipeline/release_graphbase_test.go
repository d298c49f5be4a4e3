package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// The graph-data image's base image obeys the rules of every image a run
// plans: a base image mirror.blockedImages matches, one in a registry
// registries.conf blocks, or a short name is refused before anything is
// read from the source (at the pattern's line, saying what to do), and
// registries.conf's mirrors serve it when its registry is down.
func TestReleaseGraphBaseRules(t *testing.T) {
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 2})
	holder := registrytest.Start(t)
	dead := registrytest.ClosedAddr(t)
	base := imagetest.MustPush(t, holder.Host()+"/mirror/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 1, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}})
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte(`[[registry]]
location = "`+dead+`"
[[registry.mirror]]
location = "`+holder.Host()+`/mirror"

[[registry]]
prefix = "`+e.src.Host()+`/ubi9"
location = "`+e.src.Host()+`/ubi9"
blocked = true
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stanza := "    release: " + e.rel.Ref + "\n    graph: true\n"
	blockedCfg := releaseConfig(t, stanza+"  blockedImages:\n  - name: ^"+dead+"/ubi9/\n")
	plainCfg := releaseConfig(t, stanza)
	opts := func(cfg, baseRef string) Options {
		o := Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1},
			Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataFile: graphDataTarball, GraphBaseImage: baseRef}}
		o.Source.RegistriesConf = conf
		o.Workspace = location.File(t.TempDir())
		return o
	}
	for _, tc := range []struct {
		name, cfg, base string
		want            []string
		is              error
	}{
		{"blockedImages", blockedCfg, dead + "/ubi9/ubi:latest", []string{blockedCfg + ":8", "mirror.blockedImages", "--graph-base-image", "remove the pattern"}, nil},
		{"blocked registry", plainCfg, e.src.Host() + "/ubi9/ubi:latest", []string{conf, "blocked = true", "--graph-base-image"}, registry.ErrBlocked},
		{"short name", plainCfg, "ubi9/ubi:latest", []string{"ubi9/ubi:latest", "--graph-base-image"}, registry.ErrShortName},
		{"default base blocked", releaseConfig(t, stanza+"  blockedImages:\n  - name: registry.access.redhat.com\n"), "", []string{":8", "registry.access.redhat.com/ubi9/ubi:latest"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := registrytest.Start(t)
			e.src.Reset()
			o := opts(tc.cfg, tc.base)
			o.Destination.Location = location.Docker(dst.Host() + "/m2m")
			_, err := Mirror(ctx, o)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Mirror: %v, want a refusal (%v)", err, tc.is)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Mirror: %v, want it to say %q", err, w)
				}
			}
			if c := e.src.Counts(); c.ManifestGET+c.ManifestHEAD+c.BlobGET > 0 {
				t.Errorf("the source registry was read (%+v) before the base image was refused", c)
			}
		})
	}

	t.Run("registries.conf mirror", func(t *testing.T) {
		dst := registrytest.Start(t)
		o := opts(plainCfg, dead+"/ubi9/ubi:latest")
		o.Destination.Location = location.Docker(dst.Host() + "/m2m")
		res, err := Mirror(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		checkGraphImage(t, "base through a registries.conf mirror", res, dst.Host()+"/m2m")
		if !strings.Contains(strings.Join(res.Sources, "\n"), "base "+dead+"/ubi9/ubi:latest@"+base.Digest.String()) {
			t.Errorf("summary %q does not name the base %s by its digest %s", res.Sources, dead+"/ubi9/ubi:latest", base.Digest)
		}
	})
}
