package imageset

import (
	"reflect"
	"testing"
)

// TestPinCharts: a chart's constraint is pinned to the newest version
// mirrored that it accepts; a version it does not accept, or a chart not
// mirrored, is left alone; a repository that lists no charts gets one entry
// per chart version mirrored.
func TestPinCharts(t *testing.T) {
	cfg := &ImageSetConfiguration{Mirror: ImageSetConfigurationSpec{Helm: &Helm{Repositories: []HelmRepository{{
		Name: "apps", URL: "https://charts.example.com",
		Charts: []HelmChart{{Name: "a", Version: ">=1.0 <2"}, {Name: "b", Version: "~3.1"}, {Name: "c"}, {Name: "a", Version: "2.0.0"}},
	}, {Name: "all", URL: "https://all.example.com"}}}}}
	pc, err := Pin(cfg, Pins{Charts: map[string][]string{
		"apps/a": {"1.4.1", "1.10.0", "2.0.0"}, "apps/b": {"4.0.0"},
		"all/y": {"1.0.0", "0.9.0"}, "all/x": {"2.0.0"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := pc.Config.Mirror.Helm.Repositories[0].Charts
	if got[0].Version != "1.10.0" || got[1].Version != "~3.1" || got[2].Version != "" || got[3].Version != "2.0.0" {
		t.Fatalf("pinned charts: %+v", got)
	}
	all := pc.Config.Mirror.Helm.Repositories[1].Charts
	want := []HelmChart{{Name: "x", Version: "2.0.0"}, {Name: "y", Version: "0.9.0"}, {Name: "y", Version: "1.0.0"}}
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("every chart of a repository pinned as %+v, want %+v", all, want)
	}
	if cfg.Mirror.Helm.Repositories[0].Charts[0].Version != ">=1.0 <2" || len(cfg.Mirror.Helm.Repositories[1].Charts) != 0 {
		t.Fatal("Pin changed the configuration it was given")
	}
}
