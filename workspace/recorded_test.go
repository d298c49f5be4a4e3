package workspace

import (
	"fmt"
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
	// The same answer from history/recorded-tags.txt as written, without it
	// (the record decoded), and with one that names no record or is broken.
	sides := []struct {
		name  string
		write func(t *testing.T, wd Dir)
	}{
		{"as written", func(*testing.T, Dir) {}},
		{"no recorded-tags.txt", func(t *testing.T, wd Dir) {
			if err := os.Remove(wd.RecordedTagsPath()); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}},
		{"recorded-tags.txt of another record", func(t *testing.T, wd Dir) {
			writeSide(t, wd, recordedTagsHeader+"\nseq 99\ndestination reg/ns\nreg/ns/z "+string(d1)+" zz\n")
		}},
		{"recorded-tags.txt cut short", func(t *testing.T, wd Dir) {
			writeSide(t, wd, recordedTagsHeader+"\nseq 2\ndestination reg/ns\nreg/ns/z "+string(d1))
		}},
	}
	for _, tc := range cases {
		for _, side := range sides {
			t.Run(tc.name+"/"+side.name, func(t *testing.T) {
				wd := Dir(t.TempDir())
				for _, r := range tc.runs {
					if _, err := AppendHistory(wd, r); err != nil {
						t.Fatal(err)
					}
				}
				side.write(t, wd)
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
}

func writeSide(t *testing.T, wd Dir, content string) {
	t.Helper()
	if err := os.MkdirAll(wd.HistoryDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wd.RecordedTagsPath(), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A mirror run's record leaves history/recorded-tags.txt naming it, which
// RecordedTags reads instead of the record: a record changed afterwards is
// not read (the file answers for it); other kinds of runs leave it as it was.
func TestRecordedTagsFile(t *testing.T) {
	wd := Dir(t.TempDir())
	d1 := digest.FromString("one")
	run, err := AppendHistory(wd, HistoryRun{Kind: RunMirror, Destination: "reg/ns", Images: []HistoryImage{
		{Repository: "reg/ns/a", Digest: d1, Tags: []string{"sha256-one", "v1"}, Status: "copied"},
		{Repository: "reg/ns/b", Digest: d1, Tags: []string{"sha256-one"}, Status: "failed"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(wd.RecordedTagsPath())
	if err != nil {
		t.Fatal(err)
	}
	want := recordedTagsHeader + "\nseq 1\ndestination reg/ns\nreg/ns/a " + string(d1) + " sha256-one v1\n"
	if string(b) != want {
		t.Fatalf("recorded-tags.txt:\n%s\nwant:\n%s", b, want)
	}
	if _, err := AppendHistory(wd, HistoryRun{Kind: RunDelete, Destination: "reg/ns"}); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(wd.RecordedTagsPath()); string(b2) != want {
		t.Fatalf("a delete run rewrote recorded-tags.txt:\n%s", b2)
	}
	// Proof that the file is what is read: the record is no longer JSON.
	if err := os.WriteFile(filepath.Join(wd.HistoryDir(), fmt.Sprintf("run-%06d.json", run.Seq)), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RecordedTags(wd, "reg/ns/")
	if err != nil || !reflect.DeepEqual(got, map[string]map[string]digest.Digest{"reg/ns/a": {"sha256-one": d1, "v1": d1}}) {
		t.Fatalf("RecordedTags = %v, %v", got, err)
	}
	// A name no line can hold: no file for that record.
	if _, err := AppendHistory(wd, HistoryRun{Kind: RunMirror, Destination: "reg/ns", Images: []HistoryImage{
		{Repository: "reg/ns/a", Digest: d1, Tags: []string{"a tag"}, Status: "copied"},
	}}); err != nil {
		t.Fatal(err)
	}
	if b2, _ := os.ReadFile(wd.RecordedTagsPath()); string(b2) != want {
		t.Fatalf("recorded-tags.txt rewritten for a tag with a space:\n%s", b2)
	}
	if got, err := RecordedTags(wd, "reg/ns"); err != nil || !reflect.DeepEqual(got, map[string]map[string]digest.Digest{"reg/ns/a": {"a tag": d1}}) {
		t.Fatalf("RecordedTags from the record = %v, %v", got, err)
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

// FuzzParseRecordedTags: any content of history/recorded-tags.txt is read
// without a panic, and what it reads is written back to the same content's
// meaning (parse, format, parse gives the same tags).
func FuzzParseRecordedTags(f *testing.F) {
	f.Add(recordedTagsHeader + "\nseq 3\ndestination reg/ns\nreg/ns/a sha256:00 sha256-00 v1\nreg/ns/a sha256:01 v1\n")
	f.Add(recordedTagsHeader + "\nseq 1\ndestination \n")
	f.Add(recordedTagsHeader + "\nseq 1\ndestination reg\nrepo digest\n")
	f.Add(recordedTagsHeader + "\nseq -1\ndestination reg\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, content string) {
		got, ok := parseRecordedTags([]byte(content))
		if !ok {
			return
		}
		if got.seq < 1 || got.tags == nil {
			t.Fatalf("parsed %q as seq %d, tags %v", content, got.seq, got.tags)
		}
		run := HistoryRun{Seq: got.seq, Kind: RunMirror, Destination: got.destination}
		for repo, tags := range got.tags {
			for tag, d := range tags {
				run.Images = append(run.Images, HistoryImage{Repository: repo, Digest: d, Tags: []string{tag}, Status: "copied"})
			}
		}
		b := formatRecordedTags(run)
		if b == nil {
			t.Fatalf("%q parsed but cannot be written again", content)
		}
		again, ok := parseRecordedTags(b)
		if !ok || again.seq != got.seq || again.destination != got.destination || !reflect.DeepEqual(again.tags, got.tags) {
			t.Fatalf("%q: written as %q, read back as %+v", content, b, again)
		}
	})
}
