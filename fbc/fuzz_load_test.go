package fbc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// emptyToNil makes empty and nil optional lists compare equal: Write omits
// empty properties, relatedImages and skips, as opm does.
func emptyToNil(c *Catalog) *Catalog {
	props := func(p []Property) []Property {
		if len(p) == 0 {
			return nil
		}
		return p
	}
	for _, p := range c.Packages {
		p.Properties = props(p.Properties)
		if p.Declared > 1 {
			p.Declared = 1 // Write writes one olm.package document per package
		}
		for _, ch := range p.Channels {
			ch.Properties = props(ch.Properties)
			for i := range ch.Entries {
				if len(ch.Entries[i].Skips) == 0 {
					ch.Entries[i].Skips = nil
				}
			}
		}
		for _, b := range p.Bundles {
			b.Properties = props(b.Properties)
			if len(b.RelatedImages) == 0 {
				b.RelatedImages = nil
			}
		}
	}
	return c
}

func FuzzLoad(f *testing.F) {
	seeds := []string{
		pkgFoo,
		pkgFoo + "\n" + `{"schema":"olm.channel","name":"s","package":"foo","entries":[{"name":"foo.v1","skips":["a"],"skipRange":"<1.0.0"}]}`,
		`{"schema":"olm.bundle","name":"foo.v1","package":"foo","image":"q/x:1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":"eyJ9"}},{"type":"olm.csv.metadata","value":{"a":[1,2,{"b":null}]}}],"relatedImages":[{"name":"","image":"q/x:1"}]}`,
		`{"schema":"olm.bundle","name":"foo.v1","package":"foo","properties":[{"type":"olm.bundle.object","value":{"data":"a2luZDogW3VuY2xvc2Vk"}},{"type":"olm.bundle.object","value":{"data":"%%"}},{"type":"olm.bundle.object"},{"type":"olm.csv.metadata","value":{"displayName":5}},{"type":"olm.csv.metadata","value":null},{"type":"","value":null}]}`,
		`{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.package"},"message":"m"}]}`,
		`{"schema":"x.custom","package":"foo","v":"\u00e9\ud83d\ude00\n"} {"schema":"x.global","n":-1.5e3}`,
		"schema: olm.package\nname: bar\ndefaultChannel: s\n---\nschema: olm.bundle\nname: b\npackage: bar\nproperties:\n- type: olm.bundle.object\n  value: {data: abc}\n",
		"---\n# nothing\n---\n",
		`{"Schema":"olm.package","NAME":"x","icon":{"base64data":"AAEC","mediatype":"image/png"}}`,
		`[1]`, `{"schema":"olm.package",`, `{"schema":1}`, "\xff\xfe", `{"schema":"a","a":"\x01"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "io", "catalog", "foo", "catalog.json")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx := context.Background()
		fsys := fstest.MapFS{"dir/catalog": &fstest.MapFile{Data: data}}
		c, err := Load(ctx, fsys, LoadOptions{ElideHeavy: true})
		if err != nil {
			if c != nil {
				t.Fatal("Load returned a catalog and an error")
			}
			return
		}
		full, err := Load(ctx, fsys, LoadOptions{})
		if err != nil {
			t.Fatalf("loads with elision but not without: %v", err)
		}
		// That Load checks the values it elides as validate.Catalog checks
		// kept ones is validate's FuzzValidateElided.
		out := filepath.Join(t.TempDir(), "out")
		if err := Write(ctx, c, out, WriteOptions{}); err != nil {
			if strings.Contains(err.Error(), "cannot be used as a directory name") {
				return
			}
			t.Fatalf("write: %v", err)
		}
		again, err := LoadDir(ctx, out, LoadOptions{})
		if err != nil {
			t.Fatalf("reload of written catalog: %v", err)
		}
		want, got := emptyToNil(normalized(full)), emptyToNil(normalized(again))
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("Load -> Write -> Load changed the model:\nwant %s\ngot  %s", dump(want), dump(got))
		}
		// Render of the elided and full models agree.
		var a, b bytes.Buffer
		if err := Render(ctx, c, &a, "json"); err != nil {
			t.Fatal(err)
		}
		if err := Render(ctx, full, &b, "json"); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("rendering the elided model differs from rendering the full model")
		}
	})
}

func dump(c *Catalog) string {
	var b bytes.Buffer
	_ = Render(context.Background(), c, &b, "json")
	return b.String()
}
