package imageset

import (
	"errors"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

func TestValidateProgrammatic(t *testing.T) {
	c := &ImageSetConfiguration{
		Source: "built",
		Mirror: ImageSetConfigurationSpec{Operators: []Operator{{
			Catalog: "quay.io/a/b:1",
			Line:    3,
			Packages: []IncludePackage{{
				Name: "p", Line: 5,
				Channels: []IncludeChannel{{Name: "s", Line: 7, IncludeBundle: IncludeBundle{MinVersion: "x"}}},
			}},
		}}},
	}
	err := c.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "built:7: mirror.operators[0].packages[0].channels[0].minVersion: minVersion \"x\"") {
		t.Fatalf("Validate = %v", err)
	}
	c.Mirror.Operators[0].Packages[0].Channels[0].MinVersion = "1.0.0"
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	c.Kind = "Foo"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "expected kind ImageSetConfiguration") {
		t.Fatalf("Validate = %v", err)
	}
	d := &DeleteImageSetConfiguration{Delete: DeleteImageSetConfigurationSpec{
		BlockedImages: []Image{{Name: "("}},
		Samples:       []SampleImage{{Image: Image{Name: "x"}}},
	}}
	err = d.Validate()
	if err == nil || !errors.Is(err, ErrNotSupported) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("delete Validate = %v", err)
	}
	if _, perr := d.BlockedPatterns(); perr == nil {
		t.Error("BlockedPatterns accepted a bad pattern")
	}
}

func TestArchiveSizeBytes(t *testing.T) {
	for _, tt := range []struct {
		size int
		want int64
	}{{0, 500 << 30}, {-3, 500 << 30}, {1, 1 << 30}, {4, 4 << 30}, {MaxArchiveSizeGiB * 4, MaxArchiveSizeGiB << 30}} {
		c := &ImageSetConfiguration{ArchiveSize: tt.size}
		if got := c.ArchiveSizeBytes(); got != tt.want {
			t.Errorf("ArchiveSizeBytes(%d) = %d, want %d", tt.size, got, tt.want)
		}
	}
}

func TestBundleRange(t *testing.T) {
	b := IncludeBundle{MinVersion: "1.2.0", MaxVersion: "2.0.0"}
	lo, hi, err := b.Bounds()
	if err != nil || lo.String() != "1.2.0" || hi.String() != "2.0.0" {
		t.Fatalf("Bounds = %v %v %v", lo, hi, err)
	}
	for v, want := range map[string]bool{"1.1.9": false, "1.2.0": true, "1.5.0-rc.1": true, "2.0.0": true, "2.0.1": false} {
		if got := b.Contains(semver.MustParse(v)); got != want {
			t.Errorf("Contains(%s) = %v", v, got)
		}
	}
	if lo, hi, err := (IncludeBundle{}).Bounds(); lo != nil || hi != nil || err != nil {
		t.Errorf("empty Bounds = %v %v %v", lo, hi, err)
	}
	if _, _, err := (IncludeBundle{MaxVersion: "x"}).Bounds(); err == nil {
		t.Error("bad bound accepted")
	}
	if !(IncludeBundle{}).Contains(semver.MustParse("0.0.1")) {
		t.Error("open range must contain everything")
	}
	p := IncludePackage{Channels: []IncludeChannel{{Name: "a"}, {Name: "b", IncludeBundle: IncludeBundle{MaxVersion: "1.0.0"}}}}
	if !p.HasRange() || (IncludePackage{Name: "x"}).HasRange() {
		t.Error("IncludePackage.HasRange wrong")
	}
}

func TestFieldErrorFormat(t *testing.T) {
	for _, tt := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "f.yaml", Line: 3, Column: 5, Field: "a.b", Msg: "bad"}, "f.yaml:3:5: a.b: bad"},
		{FieldError{File: "f.yaml", Line: 3, Msg: "bad"}, "f.yaml:3: bad"},
		{FieldError{Msg: "bad"}, "<config>: bad"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	valid := []string{"name", "defaultChannel", "channels", "minVersion", "maxVersion", "bundles"}
	for in, want := range map[string]string{
		"minversion": "minVersion", "maxVerison": "maxVersion", "channel": "channels",
		"nme": "name", "defaultchannel": "defaultChannel", "zzz": "", "colour": "",
	} {
		if got := nearest(in, valid); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
