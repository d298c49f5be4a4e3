package oci

import (
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

func TestParse(t *testing.T) {
	d1, d2, d3 := digest.FromString("1"), digest.FromString("2"), digest.FromString("3")
	tests := []struct {
		name                  string
		mt, raw               string
		children, blobs, frgn int
		err                   error
	}{
		{"oci image", MediaTypeOCIManifest, `{"schemaVersion":2,"config":{"digest":"` + d1.String() + `","size":1},"layers":[{"digest":"` + d2.String() + `","size":2},{"digest":"` + d2.String() + `","size":2}]}`, 0, 2, 0, nil},
		{"foreign layer", MediaTypeDockerManifest, `{"schemaVersion":2,"config":{"digest":"` + d1.String() + `","size":1},"layers":[{"mediaType":"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip","digest":"` + d3.String() + `","size":3,"urls":["https://x"]}]}`, 0, 1, 1, nil},
		{"index", MediaTypeOCIIndex, `{"schemaVersion":2,"manifests":[{"digest":"` + d1.String() + `","size":1,"platform":{"os":"linux","architecture":"arm64","variant":"v8"}}]}`, 1, 0, 0, nil},
		{"schema1", "", `{"schemaVersion":1,"fsLayers":[]}`, 0, 0, 0, ErrUnsupportedManifest},
		{"unknown", "application/x-thing", `{}`, 0, 0, 0, ErrUnsupportedManifest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			refs, err := Parse(Manifest{MediaType: tc.mt, Raw: []byte(tc.raw)})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || len(refs.Manifests) != tc.children || len(refs.Blobs) != tc.blobs || len(refs.Foreign) != tc.frgn {
				t.Fatalf("%+v %v", refs, err)
			}
			if tc.children > 0 && refs.Manifests[0].Platform != "linux/arm64/v8" {
				t.Fatalf("platform %q", refs.Manifests[0].Platform)
			}
		})
	}
	if _, err := Parse(Manifest{MediaType: MediaTypeOCIManifest, Raw: []byte(`{"config":{"digest":"bad","size":1}}`)}); err == nil {
		t.Fatal("bad digest accepted")
	}
}

func FuzzParse(f *testing.F) {
	d := digest.FromString("x").String()
	f.Add(MediaTypeOCIManifest, `{"schemaVersion":2,"config":{"digest":"`+d+`","size":1},"layers":[{"digest":"`+d+`","size":-1}]}`)
	f.Add(MediaTypeOCIIndex, `{"manifests":[{"digest":"`+d+`","size":1,"platform":{"os":"linux"}}]}`)
	f.Add("", `{"schemaVersion":1}`)
	f.Add("", `not json`)
	f.Fuzz(func(t *testing.T, mt, raw string) {
		refs, err := Parse(Manifest{MediaType: mt, Raw: []byte(raw)})
		if err != nil {
			return
		}
		for _, b := range append(refs.Blobs, refs.Foreign...) {
			if b.Digest.Validate() != nil || b.Size < 0 {
				t.Fatalf("invalid blob accepted: %+v", b)
			}
		}
		for _, c := range refs.Manifests {
			if c.Digest.Validate() != nil || c.Size < 0 {
				t.Fatalf("invalid child accepted: %+v", c)
			}
		}
	})
}

func TestVerifier(t *testing.T) {
	body := "hello, registry"
	d := Descriptor{Digest: digest.FromString(body), Size: int64(len(body))}
	tests := []struct {
		name, in string
		d        Descriptor
		ok       bool
	}{
		{"match", body, d, true},
		{"flipped", "hello, regis7ry", d, false},
		{"short", body[:5], d, false},
		{"long", body + "!", d, false},
		{"unknown size", body, Descriptor{Digest: d.Digest, Size: -1}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := NewVerifier(strings.NewReader(tc.in), tc.d)
			_, err := io.ReadAll(v)
			if tc.ok != (err == nil) || tc.ok != v.Verified() {
				t.Fatalf("err %v, verified %v", err, v.Verified())
			}
			if !tc.ok && !errors.Is(err, ErrDigestMismatch) {
				t.Fatalf("err %v, want ErrDigestMismatch", err)
			}
		})
	}
}

// TestVerifierCovers: a Verifier covers a blob from an offset only when it
// verifies that very blob and has passed exactly the bytes before it, and no
// longer once it has read to the end.
func TestVerifierCovers(t *testing.T) {
	body := "hello, registry"
	d := Descriptor{Digest: digest.FromString(body), Size: int64(len(body))}
	h := sha256.New()
	h.Write([]byte(body[:5]))
	for _, tc := range []struct {
		name string
		v    *Verifier
		d    Descriptor
		off  int64
		want bool
	}{
		{"whole blob from 0", NewVerifier(strings.NewReader(body), d), d, 0, true},
		{"another digest", NewVerifier(strings.NewReader(body), d), Descriptor{Digest: digest.FromString("x"), Size: d.Size}, 0, false},
		{"another size", NewVerifier(strings.NewReader(body), d), Descriptor{Digest: d.Digest, Size: 3}, 0, false},
		{"from 0, asked from 5", NewVerifier(strings.NewReader(body[5:]), d), d, 5, false},
		{"resumed at 5", NewVerifierFrom(strings.NewReader(body[5:]), d, 5, h), d, 5, true},
		{"resumed at 5, asked from 0", NewVerifierFrom(strings.NewReader(body[5:]), d, 5, h), d, 0, false},
	} {
		if got := tc.v.Covers(tc.d, tc.off); got != tc.want {
			t.Errorf("%s: Covers %v, want %v", tc.name, got, tc.want)
		}
	}
	v := NewVerifier(strings.NewReader(body), d)
	if _, err := io.ReadAll(v); err != nil || v.Covers(d, d.Size) {
		t.Errorf("after the end: %v, Covers %v", err, v.Covers(d, d.Size))
	}
}

func TestMediaTypeOf(t *testing.T) {
	tests := []struct{ ct, raw, want string }{
		{MediaTypeOCIIndex + "; charset=utf-8", `{}`, MediaTypeOCIIndex},
		{"application/json", `{"mediaType":"` + MediaTypeDockerManifest + `"}`, MediaTypeDockerManifest},
		{"", `{"manifests":[]}`, MediaTypeOCIIndex},
		{"", `{"schemaVersion":1}`, MediaTypeDockerSchema1},
		{"", `{"schemaVersion":2,"config":{}}`, MediaTypeOCIManifest},
		{"", `not json`, ""},
	}
	for _, tc := range tests {
		if got := MediaTypeOf(tc.ct, []byte(tc.raw)); got != tc.want {
			t.Errorf("MediaTypeOf(%q, %s) = %q, want %q", tc.ct, tc.raw, got, tc.want)
		}
	}
}

func TestEmptyJSONDigest(t *testing.T) {
	if got := digest.FromBytes(EmptyJSON()); got != EmptyJSONDigest {
		t.Fatalf("digest of %q is %s, EmptyJSONDigest says %s", EmptyJSON(), got, EmptyJSONDigest)
	}
}
