package imageset

import "testing"

// TestPinCharts: a chart's constraint is pinned to the version mirrored;
// a version it does not accept, or a chart not mirrored, is left alone.
func TestPinCharts(t *testing.T) {
	cfg := &ImageSetConfiguration{Mirror: ImageSetConfigurationSpec{Helm: &Helm{Repositories: []HelmRepository{{
		Name: "apps", URL: "https://charts.example.com",
		Charts: []HelmChart{{Name: "a", Version: ">=1.0 <2"}, {Name: "b", Version: "~3.1"}, {Name: "c"}},
	}}}}}
	pc, err := Pin(cfg, Pins{Charts: map[string]string{"apps/a": "1.4.1", "apps/b": "4.0.0"}})
	if err != nil {
		t.Fatal(err)
	}
	got := pc.Config.Mirror.Helm.Repositories[0].Charts
	if got[0].Version != "1.4.1" || got[1].Version != "~3.1" || got[2].Version != "" {
		t.Fatalf("pinned charts: %+v", got)
	}
	if cfg.Mirror.Helm.Repositories[0].Charts[0].Version != ">=1.0 <2" {
		t.Fatal("Pin changed the configuration it was given")
	}
}
