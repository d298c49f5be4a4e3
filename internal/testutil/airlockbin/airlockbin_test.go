package airlockbin

import (
	"runtime/debug"
	"slices"
	"testing"
)

func TestFlagsOf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     []string
	}{
		{"none", nil, nil},
		{"race and tags", []debug.BuildSetting{{Key: "-buildmode", Value: "exe"}, {Key: "-race", Value: "true"}, {Key: "-tags", Value: "containers_image_openpgp,isal"}, {Key: "CGO_ENABLED", Value: "1"}},
			[]string{"-race", "-tags", "containers_image_openpgp,isal"}},
		{"race off", []debug.BuildSetting{{Key: "-race", Value: "false"}}, nil},
		{"empty tags", []debug.BuildSetting{{Key: "-tags", Value: ""}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := flagsOf(tc.settings); !slices.Equal(got, tc.want) {
				t.Errorf("flagsOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// The test binary's own flags: go test passes -tags into its build
// information, so a binary built with Flags shares its compiled packages.
func TestFlagsOfThisBinary(t *testing.T) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build information")
	}
	var tags string
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			tags = s.Value
		}
	}
	got := Flags()
	if tags != "" && !slices.Contains(got, tags) {
		t.Errorf("Flags() = %q, want the tags %q", got, tags)
	}
}

// BuildWithoutRace's flags: the tags stay, -race goes.
func TestDropRace(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, nil},
		{[]string{"-race"}, nil},
		{[]string{"-race", "-tags", "containers_image_openpgp,isal"}, []string{"-tags", "containers_image_openpgp,isal"}},
		{[]string{"-tags", "a"}, []string{"-tags", "a"}},
	} {
		if got := dropRace(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("dropRace(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
