package signature

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
)

// TestRecordLearntIsSaved: a Discoverer that reused every image of the record
// read from a file but learnt another image's attachments writes the file.
func TestRecordLearntIsSaved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "attachments.json")
	old := Image{Repo: "reg.example/ns/app", Digest: digest.FromString("old")}
	rec := &Record{Version: recordVersion, Images: map[string]RecordedImage{recordKey(old.Repo, old.Digest, nil): {}}}
	if err := rec.Save(path); err != nil {
		t.Fatal(err)
	}
	back, err := LoadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	d := NewDiscoverer(nil)
	d.Reuse(back)
	if _, ok := d.recorded(old); !ok {
		t.Fatal("the recorded image was not reused")
	}
	if got := d.Record(); got.file != path {
		t.Fatalf("unchanged record: file %q, want %q", got.file, path)
	}
	d.remember(Image{Repo: "reg.example/ns/app", Digest: digest.FromString("new")}, nil)
	if err := os.WriteFile(path, []byte("sentinel"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Record().Save(path); err != nil {
		t.Fatal(err)
	}
	back, err = LoadRecord(path)
	if err != nil || len(back.Images) != 2 {
		t.Errorf("after an image was learnt: %+v, %v; want both images recorded", back, err)
	}
}
