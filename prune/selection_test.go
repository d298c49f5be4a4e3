package prune

import (
	"testing"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

func TestParseVersionRange(t *testing.T) {
	for _, tc := range []struct {
		min, max, str, err string
	}{
		{"", "", "", ""},
		{"1.0.0", "", ">=1.0.0", ""},
		{"v1.2", "2.0.0", ">=1.2.0 <=2.0.0", ""},
		{"x", "2.0.0", "<=2.0.0", `invalid minVersion "x": Invalid character(s) found in major number "x": use a semantic version such as 1.2.3`},
		{"2.0.0", "1.0.0", ">=2.0.0 <=1.0.0", "minVersion 2.0.0 is greater than maxVersion 1.0.0: swap them"},
	} {
		r, err := ParseVersionRange(imageset.IncludeBundle{MinVersion: tc.min, MaxVersion: tc.max})
		if r.String() != tc.str {
			t.Errorf("%q-%q: range %q, want %q", tc.min, tc.max, r, tc.str)
		}
		if got := ""; err != nil {
			got = err.Error()
			if got != tc.err {
				t.Errorf("%q-%q: error %q, want %q", tc.min, tc.max, got, tc.err)
			}
		} else if tc.err != "" {
			t.Errorf("%q-%q: no error, want %q", tc.min, tc.max, tc.err)
		}
	}
}

func TestSelectionContains(t *testing.T) {
	v := func(s string) *semver.Version { x := semver.MustParse(s); return &x }
	rng := func(lo, hi *semver.Version) Selection { return Selection{Range: VersionRange{Min: lo, Max: hi}} }
	head := v("3.0.0")
	for _, tc := range []struct {
		name       string
		have, want Selection
		ok         bool
	}{
		{"all holds all", Selection{All: true}, Selection{All: true}, true},
		{"head does not hold all", Selection{HeadOnly: true}, Selection{All: true}, false},
		{"head holds head", Selection{HeadOnly: true}, Selection{HeadOnly: true}, true},
		{"open range holds head", rng(v("1.0.0"), nil), Selection{HeadOnly: true}, true},
		{"bounded range does not hold head", rng(v("1.0.0"), v("2.0.0")), Selection{HeadOnly: true}, false},
		{"wider holds narrower", rng(v("1.0.0"), v("2.0.0")), rng(v("1.1.0"), v("1.9.0")), true},
		{"narrower does not hold wider", rng(v("1.1.0"), v("1.9.0")), rng(v("1.0.0"), v("2.0.0")), false},
		{"head holds a range from the head", Selection{HeadOnly: true}, rng(v("3.0.0"), nil), true},
		{"head does not hold a range below it", Selection{HeadOnly: true}, rng(v("2.0.0"), nil), false},
		{"bundles hold bundles", Selection{Bundles: []string{"a"}}, Selection{Bundles: []string{"b"}}, true},
		{"bundles do not hold a range", Selection{Bundles: []string{"a"}}, rng(v("1.0.0"), nil), false},
	} {
		if got := tc.have.Contains(tc.want, head); got != tc.ok {
			t.Errorf("%s: %s contains %s = %v", tc.name, tc.have, tc.want, got)
		}
	}
}

func TestSelectionOf(t *testing.T) {
	p := &imageset.IncludePackage{Name: "p", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.0.0"},
		Channels: []imageset.IncludeChannel{{Name: "a"}, {Name: "b", IncludeBundle: imageset.IncludeBundle{MaxVersion: "2.0.0"}}}}
	for _, tc := range []struct {
		op   imageset.Operator
		p    *imageset.IncludePackage
		ch   *imageset.IncludeChannel
		want string
	}{
		{imageset.Operator{Full: true}, nil, nil, "every version"},
		{imageset.Operator{}, nil, nil, "the channel head only"},
		{imageset.Operator{}, p, &p.Channels[0], "versions 1.0.0 to the channel head"},
		{imageset.Operator{}, p, &p.Channels[1], "versions up to 2.0.0"},
		{imageset.Operator{}, &imageset.IncludePackage{Name: "q", SelectedBundles: []imageset.SelectedBundle{{Name: "q.v1"}}}, nil, "bundles q.v1"},
		{imageset.Operator{}, &imageset.IncludePackage{Name: "q"}, nil, "the channel head only"},
	} {
		s, err := SelectionOf(tc.op, tc.p, tc.ch)
		if err != nil || s.String() != tc.want {
			t.Errorf("SelectionOf = %s, %v; want %s", s, err, tc.want)
		}
	}
}

func TestSelectsBundle(t *testing.T) {
	p := imageset.IncludePackage{Name: "p", IncludeBundle: imageset.IncludeBundle{MinVersion: "1.0.0", MaxVersion: "2.0.0"}}
	withChannels := imageset.IncludePackage{Name: "p", Channels: []imageset.IncludeChannel{{Name: "stable", IncludeBundle: imageset.IncludeBundle{MaxVersion: "1.5.0"}}}}
	byName := imageset.IncludePackage{Name: "p", SelectedBundles: []imageset.SelectedBundle{{Name: "p.v1"}}}
	for _, tc := range []struct {
		name    string
		p       imageset.IncludePackage
		bundle  string
		version string
		chans   []string
		want    bool
	}{
		{"in range", p, "p.v1", "1.5.0", nil, true},
		{"above range", p, "p.v3", "3.0.0", nil, false},
		{"unparsable version", p, "p.vx", "x", nil, false},
		{"no range", imageset.IncludePackage{Name: "p"}, "p.vx", "x", nil, true},
		{"channel and range", withChannels, "p.v1", "1.0.0", []string{"stable"}, true},
		{"other channel", withChannels, "p.v1", "1.0.0", []string{"fast"}, false},
		{"channel, out of range", withChannels, "p.v2", "2.0.0", []string{"stable"}, false},
		{"by name", byName, "p.v1", "9.0.0", nil, true},
		{"not named", byName, "p.v2", "1.0.0", nil, false},
	} {
		if got := SelectsBundle(tc.p, tc.bundle, tc.version, tc.chans); got != tc.want {
			t.Errorf("%s: SelectsBundle = %v, want %v", tc.name, got, tc.want)
		}
	}
}
