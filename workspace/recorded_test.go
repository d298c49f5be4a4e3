package workspace

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// RecordedTags reads the newest mirror run to the destination asked for: the
// tags of the images it left there, by repository.
func TestRecordedTags(t *testing.T) {
	d1, d2 := digest.FromString("one"), digest.FromString("two")
	img := func(repo string, d digest.Digest, status string, tags ...string) HistoryImage {
		return HistoryImage{Repository: repo, Digest: d, Tags: tags, Status: status}
	}
	older := HistoryRun{Kind: RunMirror, Destination: "reg/ns", Images: []HistoryImage{img("reg/ns/a", d2, "copied", "old")}}
	newest := HistoryRun{Kind: RunMirror, Destination: "reg/ns/", Images: []HistoryImage{
		img("reg/ns/a", d1, "copied", "sha256-one", "v1"),
		img("reg/ns/a", d2, "skipped", "sha256-two"),
		img("reg/ns/b", d1, "failed", "sha256-one"),
		img("reg/ns/b", d2, StatusNotRun, "sha256-two"),
		img("reg/ns/c", d2, "skipped"), // no tag
	}}
	other := HistoryRun{Kind: RunMirror, Destination: "other/ns", Images: []HistoryImage{img("other/ns/a", d1, "copied", "x")}}
	deleted := HistoryRun{Kind: RunDelete, Destination: "reg/ns", Deleted: []HistoryDelete{{Repository: "reg/ns/a", Digest: d1}}}
	cases := []struct {
		name string
		runs []HistoryRun
		dest string
		want map[string]map[string]digest.Digest
	}{
		{"no history", nil, "reg/ns", nil},
		{"the newest mirror run, mirrored images only", []HistoryRun{older, newest, other, deleted}, "reg/ns",
			map[string]map[string]digest.Digest{"reg/ns/a": {"sha256-one": d1, "v1": d1, "sha256-two": d2}}},
		{"another destination", []HistoryRun{older, newest, other}, "other/ns/", map[string]map[string]digest.Digest{"other/ns/a": {"x": d1}}},
		{"no run to the destination", []HistoryRun{other, deleted}, "reg/ns", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wd := Dir(t.TempDir())
			for _, r := range tc.runs {
				if _, err := AppendHistory(wd, r); err != nil {
					t.Fatal(err)
				}
			}
			got, err := RecordedTags(wd, tc.dest)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RecordedTags = %v, want %v", got, tc.want)
			}
		})
	}
}

// A broken record is an error naming it and what to do; a file that is not a
// record (another name) is left alone.
func TestRecordedTagsBrokenRecord(t *testing.T) {
	wd := Dir(t.TempDir())
	if err := os.MkdirAll(wd.HistoryDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd.HistoryDir(), "run-1.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := RecordedTags(wd, "reg/ns"); err != nil || got != nil {
		t.Fatalf("a file not named as a record: %v, %v", got, err)
	}
	bad := filepath.Join(wd.HistoryDir(), "run-000001.json")
	if err := os.WriteFile(bad, []byte(`{"kind": "mirror", "images": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := RecordedTags(wd, "reg/ns")
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "restore it") {
		t.Fatalf("error %v, want one naming %s and what to do", err, bad)
	}
}

// FuzzRecordedTags: any record is read without a panic, and what it returns
// holds only tags of mirrored images.
func FuzzRecordedTags(f *testing.F) {
	f.Add(`{"seq":1,"kind":"mirror","destination":"reg/ns","images":[{"repository":"reg/ns/a","digest":"sha256:0000000000000000000000000000000000000000000000000000000000000000","tags":["sha256-0"],"status":"copied"}]}`)
	f.Add(`{"kind":"mirror","destination":"reg/ns","images":[{"repository":"reg/ns/a","tags":["x"],"status":"failed"}]}`)
	f.Add(`{"kind":"delete"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, record string) {
		wd := Dir(t.TempDir())
		if err := os.MkdirAll(wd.HistoryDir(), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wd.HistoryDir(), "run-000001.json"), []byte(record), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := RecordedTags(wd, "reg/ns")
		if err != nil && got != nil {
			t.Fatalf("an error and a result: %v, %v", err, got)
		}
		for repo, tags := range got {
			if len(tags) == 0 {
				t.Errorf("repository %s recorded without tags", repo)
			}
		}
	})
}
