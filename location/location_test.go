package location

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// parsers are the parsers of the flags, by the name the tests use.
var parsers = []struct {
	name  string
	parse func(string) (Location, error)
}{
	{"Parse", Parse},
	{"ParseDestination", ParseDestination},
	{"ParseDir", func(s string) (Location, error) { return ParseDir("--from", s) }},
	{"ParseRegistry", func(s string) (Location, error) { return ParseRegistry("destination", s) }},
	{"ParseImage", func(s string) (Location, error) { return ParseImage("destination", s) }},
}

func parserNamed(t *testing.T, name string) func(string) (Location, error) {
	t.Helper()
	for _, p := range parsers {
		if p.name == name {
			return p.parse
		}
	}
	t.Fatalf("no parser %s", name)
	return nil
}

func TestParse(t *testing.T) {
	d, f, o := SchemeDocker, SchemeFile, SchemeOCI
	tests := []struct {
		parser, in string
		want       Location // zero: refused
		canonical  string
	}{
		{"Parse", "docker://reg:5000/ns", Location{d, "reg:5000/ns"}, "docker://reg:5000/ns"},
		{"Parse", "docker://reg/a/b/", Location{d, "reg/a/b"}, "docker://reg/a/b"},
		{"Parse", "file:///ws", Location{f, "/ws"}, "file:///ws"},
		{"Parse", "file://out/", Location{f, "out"}, "file://out"},
		{"Parse", "oci:///srv/layout:v1", Location{o, "/srv/layout:v1"}, "oci:///srv/layout:v1"},
		{"Parse", "oci://rel/layout/", Location{o, "rel/layout/"}, "oci://rel/layout/"},
		{"Parse", "docker://", Location{}, ""},
		{"Parse", "docker:///ns", Location{}, ""},
		{"Parse", "file://", Location{}, ""},
		{"Parse", "oci://", Location{}, ""},
		{"Parse", "/ws", Location{}, ""},
		{"Parse", "reg/ns", Location{}, ""},
		{"Parse", "", Location{}, ""},

		{"ParseDestination", "docker://localhost:5000/ns", Location{d, "localhost:5000/ns"}, "docker://localhost:5000/ns"},
		{"ParseDestination", "docker://reg", Location{d, "reg"}, "docker://reg"},
		{"ParseDestination", "file:///tmp/x", Location{f, "/tmp/x"}, "file:///tmp/x"},
		{"ParseDestination", "file://a/../b", Location{f, "b"}, "file://b"},
		{"ParseDestination", "localhost:5000/ns", Location{}, ""},
		{"ParseDestination", "/tmp/x", Location{}, ""},
		{"ParseDestination", "oci:///tmp/x", Location{}, ""},
		{"ParseDestination", "file://", Location{}, ""},
		{"ParseDestination", "docker://", Location{}, ""},
		{"ParseDestination", "DOCKER://reg/ns", Location{}, ""},

		{"ParseDir", "file:///ws", Location{f, "/ws"}, "file:///ws"},
		{"ParseDir", "file://out/", Location{f, "out"}, "file://out"},
		{"ParseDir", "file://a/../b", Location{f, "b"}, "file://b"},
		{"ParseDir", "/ws", Location{f, "/ws"}, "file:///ws"},
		{"ParseDir", "rel/./x/", Location{f, "rel/x"}, "file://rel/x"},
		{"ParseDir", "a:b", Location{f, "a:b"}, "file://a:b"},
		{"ParseDir", "file://", Location{}, ""},
		{"ParseDir", "", Location{}, ""},
		{"ParseDir", "docker://reg/ns", Location{}, ""},
		{"ParseDir", "oci:///ws", Location{}, ""},

		{"ParseRegistry", "docker://reg:5000/ns/", Location{d, "reg:5000/ns"}, "docker://reg:5000/ns"},
		{"ParseRegistry", "docker://reg", Location{d, "reg"}, "docker://reg"},
		{"ParseRegistry", "reg:5000/ns", Location{}, ""},
		{"ParseRegistry", "docker://", Location{}, ""},
		{"ParseRegistry", "docker:///ns", Location{}, ""},
		{"ParseRegistry", "file:///ws", Location{}, ""},

		{"ParseImage", "docker://reg/tools/airlock:v1", Location{d, "reg/tools/airlock:v1"}, "docker://reg/tools/airlock:v1"},
		{"ParseImage", "reg/tools/airlock:v1", Location{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.parser+"/"+tc.in, func(t *testing.T) {
			got, err := parserNamed(t, tc.parser)(tc.in)
			if tc.want.IsZero() {
				var le *Error
				if err == nil || !errors.Is(err, ErrInvalid) || !errors.As(err, &le) || le.Input != tc.in {
					t.Fatalf("got %v, %v; want an *Error for %q", got, err, tc.in)
				}
				if !got.IsZero() {
					t.Errorf("a refused input gave %v", got)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %#v, %v; want %#v", got, err, tc.want)
			}
			if s := got.String(); s != tc.canonical {
				t.Errorf("String() = %q, want %q", s, tc.canonical)
			}
			if again, err := parserNamed(t, tc.parser)(got.String()); err != nil || again != got {
				t.Errorf("the canonical form %q parses to %v, %v", got.String(), again, err)
			}
		})
	}
}

// TestErrors keeps every parser's messages in testdata/errors.golden: each
// names the flag, repeats the input and says what to write.
func TestErrors(t *testing.T) {
	inputs := []string{"", "reg/ns", "/ws", "docker://", "docker:///ns", "file://", "oci://", "oci:///layout", "file:///ws", "docker://reg/ns", "s3://bucket"}
	var b strings.Builder
	for _, p := range parsers {
		for _, in := range inputs {
			if _, err := p.parse(in); err != nil {
				fmt.Fprintf(&b, "%s(%q): %v\n", p.name, in, err)
			}
		}
	}
	golden.Check(t, filepath.Join("testdata", "errors.golden"), []byte(b.String()))
}

func TestAccessors(t *testing.T) {
	tests := []struct {
		l              Location
		registry, ns   string
		scheme, prefix string
	}{
		{Docker("reg:5000/a/b/"), "reg:5000", "a/b", "docker", "docker://"},
		{Docker("reg"), "reg", "", "docker", "docker://"},
		{File("/ws/"), "", "", "file", "file://"},
		{OCI("/layout"), "", "", "oci", "oci://"},
		{Location{}, "", "", "", ""},
	}
	for _, tc := range tests {
		if got := tc.l.Registry(); got != tc.registry {
			t.Errorf("%v.Registry() = %q, want %q", tc.l, got, tc.registry)
		}
		if got := tc.l.Namespace(); got != tc.ns {
			t.Errorf("%v.Namespace() = %q, want %q", tc.l, got, tc.ns)
		}
		if got := tc.l.Scheme.String(); got != tc.scheme {
			t.Errorf("%v scheme = %q, want %q", tc.l, got, tc.scheme)
		}
		if got := tc.l.Scheme.Prefix(); got != tc.prefix {
			t.Errorf("%v prefix = %q, want %q", tc.l, got, tc.prefix)
		}
		if !tc.l.IsZero() && !tc.l.Is(tc.l.Scheme) {
			t.Errorf("%v.Is(its scheme) is false", tc.l)
		}
	}
	if s := (Location{}).String(); s != "" {
		t.Errorf("the zero Location prints %q", s)
	}
}

func TestReferences(t *testing.T) {
	for in, want := range map[string]string{
		"docker://quay.io/a/b:1": "quay.io/a/b:1",
		"quay.io/a/b:1":          "quay.io/a/b:1",
		"docker://":              "",
		"oci:///x":               "oci:///x",
	} {
		if got := ImageRef(in); got != want {
			t.Errorf("ImageRef(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{"oci:///srv/l:v1": "/srv/l:v1", "oci://": ""} {
		if got, ok := CutLayout(in); !ok || got != want || !IsLayout(in) {
			t.Errorf("CutLayout(%q) = %q, %v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"docker://oci/x", "quay.io/oci:1", "file:///x"} {
		if _, ok := CutLayout(in); ok || IsLayout(in) {
			t.Errorf("CutLayout(%q) took a registry reference for a layout", in)
		}
	}
	for in, want := range map[string]Scheme{"docker://": SchemeDocker, "file://x": SchemeFile, "oci://": SchemeOCI, "quay.io/a": 0, "oci:x": 0, "": 0} {
		if got := SchemeOf(in); got != want {
			t.Errorf("SchemeOf(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzParse checks that no parser panics, that every refusal is an *Error
// naming the input, and that a location's canonical form parses back to it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"docker://reg:5000/ns/", "file://a/../b", "oci:///l:v1", "/ws", "", "docker://", "file://docker://x", "a://b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range parsers {
			l, err := p.parse(s)
			if err != nil {
				var le *Error
				if !errors.As(err, &le) || le.Input != s || !errors.Is(err, ErrInvalid) {
					t.Fatalf("%s(%q): %v is not an *Error for the input", p.name, s, err)
				}
				if le.Suggest != "" {
					if _, err := p.parse(le.Suggest); err != nil {
						t.Fatalf("%s(%q) suggests %q, which it refuses: %v", p.name, s, le.Suggest, err)
					}
				}
				continue
			}
			if l.IsZero() {
				t.Fatalf("%s(%q) accepted it as the zero Location", p.name, s)
			}
			back, err := p.parse(l.String())
			if err != nil || back != l {
				t.Fatalf("%s(%q) = %#v, whose form %q parses to %#v, %v", p.name, s, l, l.String(), back, err)
			}
			if any, err := Parse(l.String()); err != nil || any != l {
				t.Fatalf("Parse(%q) = %#v, %v; want %#v", l.String(), any, err, l)
			}
		}
		if sc := SchemeOf(s); sc != 0 && !strings.HasPrefix(s, sc.Prefix()) {
			t.Fatalf("SchemeOf(%q) = %v", s, sc)
		}
		if p, ok := CutLayout(s); ok && OCI(p).String() != s {
			t.Fatalf("CutLayout(%q) = %q does not rebuild it", s, p)
		}
		if r := ImageRef(s); r != s && SchemeDocker.Prefix()+r != s {
			t.Fatalf("ImageRef(%q) = %q", s, r)
		}
	})
}
