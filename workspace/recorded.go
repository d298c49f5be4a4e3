package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/opencontainers/go-digest"
)

// RecordedTags is what the newest mirror run to destination recorded as at
// the destination after it: by repository, each tag of the images it
// mirrored (copied, or found there) and the digest the tag named. It reads
// the history records from the newest down and decodes only the one it
// returns (and the newer ones of other destinations or kinds, to skip them).
// No record of such a run: nil.
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
	for _, r := range runs {
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
		out := map[string]map[string]digest.Digest{}
		for _, im := range run.Images {
			if !(HistoryImage{Status: im.Status}).Mirrored() || len(im.Tags) == 0 {
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
		return out, nil
	}
	return nil, nil
}
