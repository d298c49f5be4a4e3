package validate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/fbc"
)

func TestParseRelease(t *testing.T) {
	for _, ok := range []string{"1", "rc.1", "1.2.3", "a-b", "12345678901234567890"} {
		if err := parseRelease(ok); err != nil {
			t.Errorf("parseRelease(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "01", "a..b", "a+b", "a_b", "123456789012345678901", "."} {
		if err := parseRelease(bad); err == nil {
			t.Errorf("parseRelease(%q): want error", bad)
		}
	}
}

// FuzzValidatePackageProperty validates a one-bundle catalog whose olm.package
// value is arbitrary: Catalog must not panic.
func FuzzValidatePackageProperty(f *testing.F) {
	for _, s := range []string{`{"packageName":"p","version":"1.0.0"}`, `{"version":1}`, `null`, ``, `{"version":"v1"}`, `[]`, `{"version":"1.0.0","release":"01"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, value []byte) {
		b := &fbc.Bundle{Name: "b", Package: "p", Properties: []fbc.Property{{Type: fbc.PropertyPackage, Value: value}}}
		_ = Catalog(&fbc.Catalog{Packages: []*fbc.Package{{Name: "p", DefaultChannel: "c", Declared: 1,
			Channels: []*fbc.Channel{{Name: "c", Package: "p", Entries: []fbc.ChannelEntry{{Name: "b"}}}},
			Bundles:  []*fbc.Bundle{b}}}})
	})
}

// FuzzValidateElided loads arbitrary catalog files with heavy values elided
// and kept: fbc.Load checks the values it elides as Catalog checks kept ones,
// so the problems must be the same.
func FuzzValidateElided(f *testing.F) {
	seeds := []string{
		`{"schema":"olm.bundle","name":"foo.v1","package":"foo","image":"q/x:1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"eyJ9"}},{"type":"olm.csv.metadata","value":{"a":[1,2,{"b":null}]}}],"relatedImages":[{"name":"","image":"q/x:1"}]}`,
		`{"schema":"olm.bundle","name":"foo.v1","package":"foo","properties":[{"type":"olm.bundle.object","value":{"data":"a2luZDogW3VuY2xvc2Vk"}},{"type":"olm.bundle.object","value":{"data":"%%"}},{"type":"olm.bundle.object"},{"type":"olm.csv.metadata","value":{"displayName":5}},{"type":"olm.csv.metadata","value":null},{"type":"","value":null}]}`,
		"schema: olm.package\nname: bar\ndefaultChannel: s\n---\nschema: olm.bundle\nname: b\npackage: bar\nproperties:\n- type: olm.bundle.object\n  value: {data: abc}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "invalid", "property-errors", "*.yaml"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		fsys := fstest.MapFS{"dir/catalog": &fstest.MapFile{Data: data}}
		c, err := fbc.Load(ctx, fsys, fbc.LoadOptions{ElideHeavy: true})
		if err != nil {
			return
		}
		full, err := fbc.Load(ctx, fsys, fbc.LoadOptions{})
		if err != nil {
			t.Fatalf("loads with elision but not without: %v", err)
		}
		if a, b := errString(Catalog(c)), errString(Catalog(full)); a != b {
			t.Fatalf("Catalog differs with heavy values elided:\n%s\n---\nwith values:\n%s", a, b)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "valid"
	}
	return err.Error()
}
