package workspace

import (
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/location"
)

func TestOpenLocation(t *testing.T) {
	abs, err := filepath.Abs("rel")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		location string
		want     Dir
	}{
		{location: "file:///ws", want: "/ws/working-dir"},
		{location: "file://rel", want: Dir(filepath.Join(abs, "working-dir"))},
		{location: "/ws", want: "/ws/working-dir"},
		{location: "file:///ws/working-dir", want: "/ws/working-dir"},
		{location: "/ws/working-dir/", want: "/ws/working-dir"},
	}
	for _, tt := range tests {
		l, err := location.ParseDir("--workspace", tt.location)
		if err != nil {
			t.Fatal(err)
		}
		got, err := OpenLocation(l)
		if err != nil || got != tt.want {
			t.Errorf("OpenLocation(%q) = %q, %v, want %q", tt.location, got, err, tt.want)
		}
	}
	for _, l := range []location.Location{location.OCI("/ws"), location.Docker("reg/ns"), {}} {
		want := `--workspace "` + l.String() + `" must be file://DIR or DIR`
		if _, err := OpenLocation(l); err == nil || err.Error() != want {
			t.Errorf("OpenLocation(%v) error = %v, want %q", l, err, want)
		}
	}
}
