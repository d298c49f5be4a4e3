package workspace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// RecordedTags is what the newest mirror run to destination recorded as at
// the destination after it: by repository, each tag of the images it
// mirrored (copied, or found there) and the digest the tag named. It reads
// the history records from the newest down. The record it returns is read
// from history/recorded-tags.txt when that file was written from it (a few
// megabytes of lines instead of a record's JSON at 20,000 images); else it
// decodes only the one it returns (and the newer ones of other
// destinations or kinds, to skip them). No record of such a run: nil.
func RecordedTags(d Dir, destination string) (map[string]map[string]digest.Digest, error) {
	dir := d.HistoryDir()
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	type numbered struct {
		seq  int
		name string
	}
	var runs []numbered
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "run-%d.json", &n); err == nil && e.Name() == fmt.Sprintf("run-%06d.json", n) {
			runs = append(runs, numbered{n, e.Name()})
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].seq > runs[j].seq })
	want := destinationKey(destination)
	side, sideOK := readRecordedTags(d.RecordedTagsPath())
	for _, r := range runs {
		if sideOK && side.seq == r.seq {
			// Written from this record, a mirror run: it answers, or the
			// run went elsewhere.
			if destinationKey(side.destination) == want {
				return side.tags, nil
			}
			continue
		}
		p := filepath.Join(dir, r.name)
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		// Only what is needed is decoded (the rest is skipped, not built).
		var run struct {
			Kind        string `json:"kind"`
			Destination string `json:"destination"`
			Images      []struct {
				Repository string        `json:"repository"`
				Digest     digest.Digest `json:"digest"`
				Tags       []string      `json:"tags"`
				Status     string        `json:"status"`
			} `json:"images"`
		}
		if err := json.Unmarshal(b, &run); err != nil {
			return nil, fmt.Errorf("history record %s is not valid JSON: %w; it was changed by hand or by a broken disk: restore it from a backup", p, err)
		}
		if run.Kind != RunMirror || destinationKey(run.Destination) != want {
			continue
		}
		images := make([]HistoryImage, len(run.Images))
		for i, im := range run.Images {
			images[i] = HistoryImage{Repository: im.Repository, Digest: im.Digest, Tags: im.Tags, Status: im.Status}
		}
		return recordedTagsOf(images), nil
	}
	return nil, nil
}

// recordedTagsOf is what images leave at their destination: by repository,
// the tags of those mirrored and the digest each names (a later image's tag
// wins).
func recordedTagsOf(images []HistoryImage) map[string]map[string]digest.Digest {
	out := map[string]map[string]digest.Digest{}
	for _, im := range images {
		if !im.Mirrored() || len(im.Tags) == 0 {
			continue
		}
		tags := out[im.Repository]
		if tags == nil {
			tags = map[string]digest.Digest{}
			out[im.Repository] = tags
		}
		for _, t := range im.Tags {
			tags[t] = im.Digest
		}
	}
	return out
}

// recordedTagsHeader opens history/recorded-tags.txt. The file is
//
//	airlock recorded tags 1
//	seq SEQ
//	destination DESTINATION
//	REPOSITORY DIGEST TAG [TAG...]
//	...
//
// one line per mirrored image with tags of the record SEQ, in the record's
// order (a later line's tag wins, as in the record).
const recordedTagsHeader = "airlock recorded tags 1"

// recordedTagsFile is a parsed history/recorded-tags.txt.
type recordedTagsFile struct {
	seq         int
	destination string
	tags        map[string]map[string]digest.Digest
}

// writeRecordedTags writes history/recorded-tags.txt from run, a mirror run
// just recorded. A run whose repositories, digests or tags hold a space or
// a newline (no registry names them so; they would not fit on a line of
// space-separated fields) leaves the file as it was: it names another
// record, and RecordedTags decodes the record instead.
func writeRecordedTags(d Dir, run HistoryRun) error {
	b := formatRecordedTags(run)
	if b == nil {
		return nil
	}
	return atomicfile.WriteFile(d.RecordedTagsPath(), b, 0)
}

// formatRecordedTags is the content of history/recorded-tags.txt for run;
// nil when a field cannot be written on a line of space-separated fields.
func formatRecordedTags(run HistoryRun) []byte {
	if strings.Contains(run.Destination, "\n") {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(run.Images) * 200)
	fmt.Fprintf(&b, "%s\nseq %d\ndestination %s\n", recordedTagsHeader, run.Seq, run.Destination)
	field := func(s string) bool {
		if s == "" || strings.ContainsAny(s, " \n") {
			return false
		}
		b.WriteString(s)
		return true
	}
	for _, im := range run.Images {
		if !im.Mirrored() || len(im.Tags) == 0 {
			continue
		}
		if !field(im.Repository) {
			return nil
		}
		b.WriteByte(' ')
		if !field(string(im.Digest)) {
			return nil
		}
		for _, t := range im.Tags {
			b.WriteByte(' ')
			if !field(t) {
				return nil
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// readRecordedTags reads history/recorded-tags.txt; false when it is
// missing or not such a file (RecordedTags then decodes the record).
func readRecordedTags(path string) (recordedTagsFile, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return recordedTagsFile{}, false
	}
	return parseRecordedTags(b)
}

// parseRecordedTags parses the content of history/recorded-tags.txt.
func parseRecordedTags(b []byte) (recordedTagsFile, bool) {
	var f recordedTagsFile
	line := func() (string, bool) {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return "", false
		}
		l := string(b[:i])
		b = b[i+1:]
		return l, true
	}
	h, ok := line()
	if !ok || h != recordedTagsHeader {
		return f, false
	}
	s, ok := line()
	seq, found := strings.CutPrefix(s, "seq ")
	if !ok || !found {
		return f, false
	}
	var err error
	if f.seq, err = strconv.Atoi(seq); err != nil || f.seq < 1 {
		return f, false
	}
	s, ok = line()
	if f.destination, found = strings.CutPrefix(s, "destination "); !ok || !found {
		return f, false
	}
	f.tags = map[string]map[string]digest.Digest{}
	for len(b) > 0 {
		l, ok := line()
		if !ok {
			return f, false // the last line ends with a newline
		}
		repo, rest, ok := strings.Cut(l, " ")
		if !ok || repo == "" {
			return f, false
		}
		d, rest, ok := strings.Cut(rest, " ")
		if !ok || d == "" || rest == "" {
			return f, false
		}
		tags := f.tags[repo]
		if tags == nil {
			tags = map[string]digest.Digest{}
			f.tags[repo] = tags
		}
		for rest != "" {
			var t string
			t, rest, _ = strings.Cut(rest, " ")
			if t == "" {
				return f, false
			}
			tags[t] = digest.Digest(d)
		}
	}
	return f, true
}
