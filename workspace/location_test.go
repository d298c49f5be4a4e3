package workspace

import (
	"path/filepath"
	"testing"
)

func TestFileDir(t *testing.T) {
	tests := []struct {
		location, want, wantErr string
	}{
		{location: "file:///ws", want: "/ws"},
		{location: "file://out/", want: "out"},
		{location: "file://a/../b", want: "b"},
		{location: "file://", wantErr: `--from "file://" must be file://DIR or DIR`},
		{location: "/ws", want: "/ws"},
		{location: "rel/./x/", want: "rel/x"},
		{location: "", wantErr: `--from "" must be file://DIR or DIR`},
		{location: "docker://reg/ns", wantErr: `--from "docker://reg/ns" must be file://DIR or DIR`},
	}
	for _, tt := range tests {
		got, err := FileDir(tt.location, "--from")
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("FileDir(%q) error = %v, want %q", tt.location, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("FileDir(%q) = %q, %v, want %q", tt.location, got, err, tt.want)
		}
	}
}

func TestOpenLocation(t *testing.T) {
	abs, err := filepath.Abs("rel")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		location string
		want     Dir
		wantErr  string
	}{
		{location: "file:///ws", want: "/ws/working-dir"},
		{location: "file://rel", want: Dir(filepath.Join(abs, "working-dir"))},
		{location: "/ws", want: "/ws/working-dir"},
		{location: "file:///ws/working-dir", want: "/ws/working-dir"},
		{location: "/ws/working-dir/", want: "/ws/working-dir"},
		{location: "oci:///ws", wantErr: `--workspace "oci:///ws" must be file://DIR or DIR`},
	}
	for _, tt := range tests {
		got, err := OpenLocation(tt.location)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("OpenLocation(%q) error = %v, want %q", tt.location, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("OpenLocation(%q) = %q, %v, want %q", tt.location, got, err, tt.want)
		}
	}
}
