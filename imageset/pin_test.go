package imageset

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

const (
	dA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	dC = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	dD = "sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
)

func testPins() Pins {
	return Pins{
		Catalogs: map[string]CatalogPin{
			"registry.example.com/redhat/redhat-operator-index:v4.18": {Digest: dA, Bundles: map[string][]string{
				"foo": {"foo.v0.3.1", "foo.v0.3.0"}, "bar": {"bar.v1.0.0"}, "dep": {"dep.v2.0.0", "dep.v2.0.0"},
			}},
			"docker://quay.io/example/full-index:v1": {Digest: dB},
			"quay.io/example/pinned-index@sha256:1111111111111111111111111111111111111111111111111111111111111111": {Digest: "sha256:1111111111111111111111111111111111111111111111111111111111111111"},
		},
		Images: map[string]string{
			"registry.example.com/tools/debug:1.0": dC,
			"docker.io/library/busybox":            dD,
			"quay.io/example/app@sha256:2222222222222222222222222222222222222222222222222222222222222222": "sha256:2222222222222222222222222222222222222222222222222222222222222222",
		},
	}
}

// TestPin: every docker catalog and additional image is pinned REPO:TAG@DIGEST
// (a reference without tag gets the latest it was mirrored as), what is pinned
// already and oci:// catalogs stay; the file keeps the v2alpha1 format (it
// loads again, equal to the pinned configuration) and names the bundles.
func TestPin(t *testing.T) {
	cfg, err := LoadFile(filepath.Join("testdata", "pin", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	orig := cfg.Mirror.Operators[0].Catalog
	pc, err := Pin(cfg, testPins())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mirror.Operators[0].Catalog != orig {
		t.Errorf("Pin changed its input: %s", cfg.Mirror.Operators[0].Catalog)
	}
	out, err := pc.YAML("pinned by a test")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "pin", "pinned.golden.yaml"), out)
	back, err := Load(bytes.NewReader(out), "pinned.yaml")
	if err != nil {
		t.Fatalf("the pinned file does not load: %v\n%s", err, out)
	}
	back.Source = pc.Config.Source
	clearLines(back)
	clearLines(pc.Config)
	if !reflect.DeepEqual(back, pc.Config) {
		t.Errorf("the pinned file loads as\n%+v\nwant\n%+v", back.Mirror, pc.Config.Mirror)
	}
	for ref, want := range map[string]string{
		back.Mirror.Operators[0].Catalog:          "registry.example.com/redhat/redhat-operator-index:v4.18@" + dA,
		back.Mirror.Operators[1].Catalog:          "docker://quay.io/example/full-index:v1@" + dB,
		back.Mirror.Operators[2].Catalog:          "oci:///srv/catalogs/local",
		back.Mirror.AdditionalImages[1].Name:      "docker.io/library/busybox:latest@" + dD,
		back.Mirror.AdditionalImages[1].TargetTag: "1.36",
	} {
		if ref != want {
			t.Errorf("got %s, want %s", ref, want)
		}
	}
}

// TestPinMissing: a reference the run did not resolve is an error naming it.
func TestPinMissing(t *testing.T) {
	cfg, err := LoadFile(filepath.Join("testdata", "pin", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		drop func(*Pins)
		want string
	}{
		{"catalog", func(p *Pins) { delete(p.Catalogs, "docker://quay.io/example/full-index:v1") }, "catalog docker://quay.io/example/full-index:v1"},
		{"image", func(p *Pins) { delete(p.Images, "registry.example.com/tools/debug:1.0") }, "additional image registry.example.com/tools/debug:1.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPins()
			tc.drop(&p)
			if _, err := Pin(cfg, p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func clearLines(c *ImageSetConfiguration) {
	for i := range c.Mirror.Operators {
		op := &c.Mirror.Operators[i]
		op.Line = 0
		for j := range op.Packages {
			op.Packages[j].Line = 0
			for k := range op.Packages[j].Channels {
				op.Packages[j].Channels[k].Line = 0
			}
		}
	}
	for i := range c.Mirror.AdditionalImages {
		c.Mirror.AdditionalImages[i].Line = 0
	}
	for i := range c.Mirror.BlockedImages {
		c.Mirror.BlockedImages[i].Line = 0
	}
}

// TestPinBlockedAdditionalImage: an additional image blockedImages matches was
// left out of the run, so it has no digest; it stays as written (blocked again).
func TestPinBlockedAdditionalImage(t *testing.T) {
	cfg, err := LoadFile(filepath.Join("testdata", "pin", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mirror.BlockedImages = append(cfg.Mirror.BlockedImages, Image{Name: "/tools/debug"})
	p := testPins()
	delete(p.Images, "registry.example.com/tools/debug:1.0")
	pc, err := Pin(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range pc.Config.Mirror.AdditionalImages {
		if strings.Contains(im.Name, "tools/debug") && im.Name != "registry.example.com/tools/debug:1.0" {
			t.Errorf("blocked image pinned as %s", im.Name)
		}
	}
}

// TestPinRelease: platform.release is pinned REPO:TAG@DIGEST; channels stay
// as written; a release the pins do not name is an error.
func TestPinRelease(t *testing.T) {
	cfg := &ImageSetConfiguration{Mirror: ImageSetConfigurationSpec{Platform: &Platform{Release: "quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64"}}}
	pc, err := Pin(cfg, Pins{Releases: map[string]string{"quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64": dA}})
	if err != nil {
		t.Fatal(err)
	}
	if got := pc.Config.Mirror.Platform.Release; got != "quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64@"+dA {
		t.Errorf("pinned release %s", got)
	}
	if cfg.Mirror.Platform.Release != "quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64" {
		t.Error("Pin changed its input")
	}
	if _, err := Pin(cfg, Pins{}); err == nil || !strings.Contains(err.Error(), "release quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64") {
		t.Errorf("a release without a pin: %v", err)
	}
	ch := &ImageSetConfiguration{Mirror: ImageSetConfigurationSpec{Platform: &Platform{Channels: []ReleaseChannel{{Name: "stable-4.15", MinVersion: "4.15.1"}}}}}
	pc, err = Pin(ch, Pins{})
	if err != nil || !reflect.DeepEqual(pc.Config.Mirror.Platform.Channels, ch.Mirror.Platform.Channels) {
		t.Errorf("channels: %+v, %v", pc, err)
	}
}
