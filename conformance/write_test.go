package conformance

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"

	"github.com/airlock-mirror/airlock/fbc"
)

// TestWriteRoundTrip writes every valid catalog with fbc.Write (JSON and YAML,
// from a model loaded with heavy values elided, as the CLI does, and with them
// kept) and checks that opm loads the written catalog to the same documents, and
// to the same model, as the original.
func TestWriteRoundTrip(t *testing.T) {
	ctx := context.Background()
	n := 0
	for _, src := range allSources(t) {
		if src.Kind == "invalid" {
			continue
		}
		t.Run(src.Name, func(t *testing.T) {
			orig, err := opmLoad(ctx, src.Dir)
			if err != nil {
				t.Skipf("opm cannot load it: %v", err)
			}
			want := canonOpm(orig)
			origModel, err := declcfg.ConvertToModel(*orig)
			if err != nil {
				t.Skipf("not a valid catalog: %v", err)
			}
			wantModel := canonOpm(ptr(declcfg.ConvertFromModel(origModel)))
			for _, mode := range []struct {
				name   string
				elide  bool
				format string
			}{{"elided-json", true, fbc.FormatJSON}, {"values-yaml", false, fbc.FormatYAML}} {
				c, err := fbc.LoadDir(ctx, src.Dir, fbc.LoadOptions{ElideHeavy: mode.elide})
				if err != nil {
					t.Fatalf("%s: load: %v", mode.name, err)
				}
				dir := filepath.Join(t.TempDir(), mode.name)
				if err := fbc.Write(ctx, c, dir, fbc.WriteOptions{Format: mode.format}); err != nil {
					t.Fatalf("%s: write: %v", mode.name, err)
				}
				got, err := opmLoad(ctx, dir)
				if err != nil {
					t.Fatalf("%s: opm cannot load what airlock wrote: %v", mode.name, err)
				}
				if d := want.diff(canonOpm(got), 20); d != "" {
					t.Errorf("%s: opm loads the written catalog to other documents (first: original, second: written):\n%s", mode.name, d)
				}
				m, err := declcfg.ConvertToModel(*got)
				if err != nil {
					t.Errorf("%s: opm validate refuses the written catalog: %v", mode.name, err)
					continue
				}
				if d := wantModel.diff(canonOpm(ptr(declcfg.ConvertFromModel(m))), 20); d != "" {
					t.Errorf("%s: opm's model of the written catalog differs (first: original):\n%s", mode.name, d)
				}
				n++
			}
		})
	}
	t.Logf("write: %d round trips compared", n)
}

func ptr[T any](v T) *T { return &v }
