package fbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blang/semver/v4"
)

func TestParseSkipRange(t *testing.T) {
	tests := []struct {
		rng     string
		in, out []string
		wantErr bool
	}{
		{rng: ">=1.0.0 <1.2.0", in: []string{"1.0.0", "1.1.9", "1.2.0-rc1"}, out: []string{"0.9.0", "1.2.0"}},
		{rng: "<0.3.1-0", in: []string{"0.3.0", "0.3.0-rc.1"}, out: []string{"0.3.1-0", "0.3.1-rc.1", "0.3.1"}},
		{rng: ">= 1.0.0 < 2.0.0", in: []string{"1.5.0"}, out: []string{"2.0.0"}},
		{rng: "<1.0.0 || >=2.0.0", in: []string{"0.1.0", "2.1.0"}, out: []string{"1.5.0"}},
		{rng: "1.2.x", in: []string{"1.2.0", "1.2.99"}, out: []string{"1.3.0", "1.1.9"}},
		{rng: "!=1.0.0", in: []string{"1.0.1"}, out: []string{"1.0.0"}},
		{rng: "<1.0.3", in: []string{"1.0.3-rc1", "1.0.3-rc1+build"}},
		{rng: ">=1.0", wantErr: true},
		{rng: ">=1.0.0, <2.0.0", wantErr: true},
		{rng: "v1.0.0", wantErr: true},
		{rng: "bogus", wantErr: true},
		{rng: "", wantErr: true},
		{rng: ">1.0.0-fix", wantErr: true}, // blang routes terms containing "x" through wildcard expansion
	}
	for _, tt := range tests {
		r, err := ParseSkipRange(tt.rng)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseSkipRange(%q): want error", tt.rng)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSkipRange(%q): %v", tt.rng, err)
			continue
		}
		for _, v := range tt.in {
			if !r(semver.MustParse(v)) {
				t.Errorf("%q should contain %s", tt.rng, v)
			}
		}
		for _, v := range tt.out {
			if r(semver.MustParse(v)) {
				t.Errorf("%q should not contain %s", tt.rng, v)
			}
		}
	}
}

func TestBundleVersion(t *testing.T) {
	tests := []struct {
		name    string
		props   []Property
		want    string
		wantErr string
	}{
		{"plain", []Property{pkgProp("p", "1.2.3")}, "1.2.3", ""},
		{"prerelease and build", []Property{{Type: PropertyGVK, Value: json.RawMessage(`{}`)}, pkgProp("p", "1.2.3-rc.1+b")}, "1.2.3-rc.1+b", ""},
		{"release is not part of the version", []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"p","version":"1.0.0","release":"2"}`)}}, "1.0.0", ""},
		{"leading v", []Property{pkgProp("p", "v1.2.3")}, "", `error parsing bundle "b" version "v1.2.3"`},
		{"two parts", []Property{pkgProp("p", "1.2")}, "", `version "1.2"`},
		{"number", []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"p","version":1}`)}}, "", `parse property[0] of type "olm.package"`},
		{"none", nil, "", "no olm.package property"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := BundleVersion(&Bundle{Name: "b", Package: "p", Properties: tt.props})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.String() != tt.want {
				t.Errorf("version %s, want %s", v, tt.want)
			}
		})
	}
	if _, err := BundleVersion(&Bundle{Name: "b"}); !errors.Is(err, ErrNoPackageProperty) {
		t.Errorf("want ErrNoPackageProperty, got %v", err)
	}
}

func FuzzParseSkipRange(f *testing.F) {
	for _, s := range []string{">=1.0.0 <1.2.0", "<0.3.1-0", "1.2.x", ">=1.x", "<1.0.0 || >=2.0.0", "!1.0.0", "", "x", ">=", "1.x.x", "||", ">=1.0.0-fix"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseSkipRange(s)
		if err == nil && r == nil {
			t.Fatalf("nil range without error for %q", s)
		}
		if err == nil {
			_ = r(semver.MustParse("1.0.0"))
		}
	})
}

func FuzzBundleVersion(f *testing.F) {
	for _, s := range []string{`{"packageName":"p","version":"1.0.0"}`, `{"version":1}`, `null`, ``, `{"version":"v1"}`, `[]`, `{"version":"1.0.0","release":"01"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		b := &Bundle{Name: "b", Package: "p", Properties: []Property{{Type: PropertyPackage, Value: value}}}
		_, _ = BundleVersion(b)
	})
}

// pkgProp returns an olm.package property.
func pkgProp(pkg, version string) Property {
	return Property{Type: PropertyPackage, Value: json.RawMessage(fmt.Sprintf(`{"packageName":%q,"version":%q}`, pkg, version))}
}
