package fbc

import (
	"encoding/json"
	"testing"
)

// TestStringObjectAgrees checks stringObject against encoding/json on the
// values it accepts and on some it must leave to encoding/json.
func TestStringObjectAgrees(t *testing.T) {
	cases := []struct {
		raw    string
		accept bool
	}{
		{`{"group":"a.io","kind":"K","version":"v1"}`, true},
		{` { "Group" : "a.io" , "KIND":"K" } `, true},
		{`{"group":"a","group":"b"}`, true},
		{`{"group":"a","GROUP":"b","extra":"x"}`, true},
		{`{}`, true},
		{`{"group":"é"}`, true},
		{`{"group":"a\"b"}`, false},
		{`{"group":1}`, false},
		{`{"group":null}`, false},
		{`{"extra":{"a":1},"group":"g"}`, false},
		{`{"grouſ":"a"}`, false},
		{`{"verſion":"v1"}`, false},
		{`null`, false},
		{`{"group":"a"} x`, false},
		{`{"group":"a",}`, false},
		{`{"group":"a"`, false},
		{`{"group":"` + "\xff" + `"}`, false},
		{`["a"]`, false},
		{``, false},
	}
	for _, c := range cases {
		var got gvkValue
		ok := stringObject([]byte(c.raw), gvkNames, []*string{&got.Group, &got.Kind, &got.Version})
		if ok != c.accept {
			t.Errorf("stringObject(%s) = %v, want %v", c.raw, ok, c.accept)
			continue
		}
		if !ok {
			continue
		}
		var want gvkValue
		if err := json.Unmarshal([]byte(c.raw), &want); err != nil {
			t.Errorf("stringObject accepted %s, encoding/json says %v", c.raw, err)
		} else if got != want {
			t.Errorf("stringObject(%s) = %+v, encoding/json %+v", c.raw, got, want)
		}
	}
}

func FuzzStringObject(f *testing.F) {
	for _, s := range []string{`{"group":"a.io","kind":"K","version":"v1"}`, `{"Group":"a","group":"b"}`, `{"packageName":"p","version":"1.0.0","release":"r"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var got PackagePropertyValue
		if !stringObject(raw, packagePropertyNames, []*string{&got.PackageName, &got.Version, &got.Release}) {
			return
		}
		var want PackagePropertyValue
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("stringObject accepted %q, encoding/json says %v", raw, err)
		}
		if got != want {
			t.Fatalf("stringObject(%q) = %+v, encoding/json %+v", raw, got, want)
		}
	})
}
