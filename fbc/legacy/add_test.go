package legacy

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// manifestsCatalog is the demo package-manifest folder converted.
func manifestsCatalog(t *testing.T) *fbc.Catalog {
	t.Helper()
	out := filepath.Join(t.TempDir(), "fbc")
	if _, err := ConvertManifests(context.Background(), demoManifests, out, ManifestOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := fbc.LoadDir(context.Background(), out, fbc.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAddBundle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     AddOptions
		edit     func(*BundleInfo)
		empty    bool
		wantErr  string
		replaces string
		head     string
		newChan  bool
	}{
		{name: "stable, replaces from the CSV", opts: AddOptions{Channel: "stable"}, replaces: "demo-operator.v0.3.0", head: "demo-operator.v0.4.0"},
		{name: "new channel", opts: AddOptions{Channel: "fast"}, head: "demo-operator.v0.4.0", newChan: true},
		{name: "explicit replaces", opts: AddOptions{Channel: "alpha", Replaces: "demo-operator.v0.2.0", Skips: []string{}}, replaces: "demo-operator.v0.2.0", head: "demo-operator.v0.4.0"},
		{name: "replaces not in channel", opts: AddOptions{Channel: "alpha", Replaces: "demo-operator.v0.3.0"}, wantErr: "--replaces demo-operator.v0.3.0 is not in channel alpha"},
		{name: "two heads", opts: AddOptions{Channel: "stable", Replaces: "", ReplacesSet: true, Skips: []string{}}, wantErr: "would have two heads"},
		{name: "already present", opts: AddOptions{Channel: "stable"}, edit: func(i *BundleInfo) { i.Bundle.Name = "demo-operator.v0.3.0" }, wantErr: "already holds bundle demo-operator.v0.3.0"},
		{name: "same version", opts: AddOptions{Channel: "fast"}, edit: func(i *BundleInfo) { i.Version = "0.3.0" }, wantErr: "already holds version 0.3.0"},
		{name: "no channel", opts: AddOptions{}, wantErr: "no channel given"},
		{name: "bad skipRange", opts: AddOptions{Channel: "fast", SkipRange: "not a range"}, wantErr: "--skip-range"},
		{name: "empty catalog", opts: AddOptions{Channel: "fast"}, empty: true, head: "demo-operator.v0.4.0", newChan: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := &fbc.Catalog{}
			if !tc.empty {
				cat = manifestsCatalog(t)
			}
			before := fbc.CountCatalog(cat)
			info, err := RenderBundleDir(demoBundle, "")
			if err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(info)
			}
			res, err := AddBundle(cat, info, tc.opts)
			if tc.wantErr != "" {
				if !errors.Is(err, ErrCannotAdd) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				if fbc.CountCatalog(cat) != before {
					t.Error("a refused add changed the catalog")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Replaces != tc.replaces || res.Head != tc.head || res.NewChannel != tc.newChan || res.NewPackage != tc.empty {
				t.Errorf("result = %+v", res)
			}
			if err := validate.Catalog(cat); err != nil {
				t.Fatal(err)
			}
			if got := fbc.CountCatalog(cat).Bundles; got != before.Bundles+1 {
				t.Errorf("%d bundles, want %d", got, before.Bundles+1)
			}
		})
	}
}
