package signature_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/signature"
)

// noSource fails every request: a discoverer answering from its record makes none.
type noSource struct {
	endpoint.Source
	asked *int
}

func (s noSource) Manifest(context.Context, string, string) (endpoint.Manifest, error) {
	*s.asked++
	return endpoint.Manifest{}, os.ErrNotExist
}

func TestRecordRoundTripAndReuse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "attachments.json")
	img := digest.FromString("image")
	sig := digest.FromString("sig")
	rec, err := signature.LoadRecord(path)
	if err != nil || len(rec.Images) != 0 {
		t.Fatalf("missing file: %+v, %v; want an empty record", rec, err)
	}
	rec.Images["reg.example/ns/app@"+img.String()] = signature.RecordedImage{Found: []signature.Found{{
		Digest: sig, MediaType: oci.MediaTypeOf("", []byte(`{"mediaType":"application/vnd.oci.image.manifest.v1+json"}`)), Tag: "sha256-" + img.Encoded() + ".sig",
		Attachment: oci.Attachment{Of: "reg.example/ns/app:old", Subject: img, Kind: oci.AttachmentSignature, Size: 10},
	}}}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := signature.LoadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	d := signature.NewDiscoverer(noSource{asked: &asked})
	d.Reuse(back)
	found, err := d.Discover(context.Background(), signature.Image{Source: "reg.example/ns/app@" + img.String(), Repo: "reg.example/ns/app", Digest: img})
	if err != nil || asked != 0 || len(found) != 1 || found[0].Digest != sig || found[0].Attachment.Of != "reg.example/ns/app@"+img.String() {
		t.Fatalf("reused: %+v, %v, %d requests; want the recorded signature, owned by the image as now named, and no request", found, err, asked)
	}
	if d.Reused() != 1 || d.Requests() != 0 || len(d.Record().Images) != 1 {
		t.Errorf("reused %d, requests %d, record %+v", d.Reused(), d.Requests(), d.Record())
	}
	// An image the record does not hold is asked about, and a failed
	// discovery is not recorded.
	other := digest.FromString("other")
	if _, err := d.Discover(context.Background(), signature.Image{Repo: "reg.example/ns/app", Digest: other}); err == nil || asked == 0 {
		t.Fatalf("unrecorded image: err %v after %d requests", err, asked)
	}
	if _, ok := d.Record().Images["reg.example/ns/app@"+other.String()]; ok {
		t.Error("a failed discovery was recorded")
	}
}

func TestLoadRecordRefusesWhatItCannotRead(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"not json", "{", "unexpected end of JSON input"},
		{"other version", `{"version": 7, "images": {}}`, "version 7, want 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "attachments.json")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			rec, err := signature.LoadRecord(path)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want one naming %s and %q", err, path, tc.want)
			}
			if rec == nil || len(rec.Images) != 0 {
				t.Fatalf("record %+v: want an empty one (everything looked at again)", rec)
			}
		})
	}
}

// TestRecordSavedOnlyWhenChanged: a Discoverer that reused every image of the
// record read from a file, and learnt nothing, leaves the file as it is; one
// that reused fewer images, or was given no record, writes it; a record read
// and changed by hand is written. (One that learnt an image: record_internal_test.go.)
func TestRecordSavedOnlyWhenChanged(t *testing.T) {
	ctx := context.Background()
	imgs := []digest.Digest{digest.FromString("a"), digest.FromString("b")}
	for _, tc := range []struct {
		name  string
		asked []digest.Digest // images discovered
		reuse bool            // the record read is given to the Discoverer
		want  bool            // the file is written
	}{
		{"every image reused", imgs, true, false},
		{"one image not asked", imgs[:1], true, true},
		{"no record reused", imgs, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, back := recordFile(t, imgs)
			asked := 0
			d := signature.NewDiscoverer(noSource{asked: &asked})
			if tc.reuse {
				d.Reuse(back)
			}
			for _, dg := range tc.asked {
				_, _ = d.Discover(ctx, signature.Image{Repo: "reg.example/ns/app", Digest: dg})
			}
			if err := d.Record().Save(path); err != nil {
				t.Fatal(err)
			}
			if got := written(t, path); got != tc.want {
				t.Errorf("file written: %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("changed by hand", func(t *testing.T) {
		path, back := recordFile(t, imgs)
		delete(back.Images, "reg.example/ns/app@"+imgs[0].String())
		if err := back.Save(path); err != nil {
			t.Fatal(err)
		}
		if !written(t, path) {
			t.Error("a record changed by hand was not written")
		}
	})
}

// recordFile saves a record of imgs (nothing found) in a new file, reads it
// back, and replaces the file's content with "sentinel": a Save that writes
// replaces it (written).
func recordFile(t *testing.T, imgs []digest.Digest) (string, *signature.Record) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "attachments.json")
	rec, _ := signature.LoadRecord(path)
	for _, d := range imgs {
		rec.Images["reg.example/ns/app@"+d.String()] = signature.RecordedImage{}
	}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := signature.LoadRecord(path)
	if err != nil || len(back.Images) != len(imgs) {
		t.Fatalf("read back %+v, %v", back, err)
	}
	if err := os.WriteFile(path, []byte("sentinel"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, back
}

func written(t *testing.T, path string) bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) != "sentinel"
}
