package signature

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// Record is what discovery found for each image, by source repository and
// manifest digest, kept between runs (working-dir/attachments.json) so that a
// re-run does not ask the source again about an image it already looked at:
// the digest names the image's content, so the only thing that can change is
// that signatures are added to it later, which a run with refresh (airlock's
// --refresh-signatures) looks for. Tags are not recorded: a tag that moves
// resolves to another digest, which has no entry and is looked at anew.
type Record struct {
	Version int                      `json:"version"`
	Images  map[string]RecordedImage `json:"images"` // by "repo@digest" (recordKey)

	// from is the file LoadRecord read the record from. file is the file
	// that holds what the record holds already: set on the Record of a
	// Discoverer that reused a record read from file for every image and
	// learnt nothing; Save to it writes nothing (at 20,000 images a no-op
	// re-run rewrote megabytes of identical JSON).
	from, file string
}

// RecordedImage is one image's discovery: when it was asked, what it found.
type RecordedImage struct {
	Checked time.Time `json:"checked"`
	Found   []Found   `json:"found,omitempty"`
}

// recordVersion is the format of Record; a file of another version is
// ignored (everything is looked at again).
const recordVersion = 1

// recordKey names an image in a Record: "repo@digest", and the platform
// subset its children were looked at for (" platforms=os/arch,…").
func recordKey(repo string, d digest.Digest, platforms []string) string {
	k := repo + "@" + d.String()
	if len(platforms) > 0 {
		p := slices.Clone(platforms)
		slices.Sort(p)
		k += " platforms=" + strings.Join(p, ",")
	}
	return k
}

// LoadRecord reads a Record written by Save. A missing file is an empty
// record; an unreadable or malformed one is an empty record and an error
// naming the file (the caller warns: the run then looks at everything again).
func LoadRecord(path string) (*Record, error) {
	rec := &Record{Version: recordVersion, Images: map[string]RecordedImage{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("attachments found by earlier runs: %w; looking for every image's again", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.Version != recordVersion {
		if err == nil {
			err = fmt.Errorf("version %d, want %d", r.Version, recordVersion)
		}
		return rec, fmt.Errorf("attachments found by earlier runs: %s: %v; looking for every image's again (the file is rewritten)", path, err)
	}
	if r.Images != nil {
		rec.Images = r.Images
	}
	rec.from = path
	return rec, nil
}

// Save writes r to path atomically; a nil r, or one path holds already
// (read from it and unchanged since), writes nothing.
func (r *Record) Save(path string) error {
	if r == nil || r.file == path {
		return nil
	}
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the attachments found: %w", err)
	}
	return nil
}

// Reuse makes d answer from rec for the images rec holds, without a request
// (nil: none). Call it before the first Discover.
func (d *Discoverer) Reuse(rec *Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.known = rec
}

// Record is what d found (or reused) for every image it was asked about
// successfully, to Save for the next run.
func (d *Discoverer) Record() *Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &Record{Version: recordVersion, Images: make(map[string]RecordedImage, len(d.found))}
	for k, v := range d.found {
		out.Images[k] = v
	}
	// Every image reused, nothing learnt: the same images with the same
	// findings as the file the reused record was read from.
	if k := d.known; k != nil && !d.learnt && len(d.found) == len(k.Images) {
		out.file = k.from
	}
	return out
}

// Reused is how many images d answered from the record it was given.
func (d *Discoverer) Reused() int64 { return d.reused.Load() }

// recorded returns im's attachments from the reused record, owned by im.
func (d *Discoverer) recorded(im Image) ([]Found, bool) {
	key := recordKey(im.Repo, im.Digest, im.Platforms)
	d.mu.Lock()
	var ri RecordedImage
	ok := false
	if d.known != nil {
		ri, ok = d.known.Images[key]
	}
	if ok {
		d.found[key] = ri
	}
	d.mu.Unlock()
	if !ok {
		return nil, false
	}
	d.reused.Add(1)
	out := make([]Found, len(ri.Found))
	for i, f := range ri.Found {
		f.Attachment.Of = im.Source
		out[i] = f
	}
	return out, true
}

// remember records what Discover found for im.
func (d *Discoverer) remember(im Image, found []Found) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.found[recordKey(im.Repo, im.Digest, im.Platforms)] = RecordedImage{Checked: d.now(), Found: found}
	d.learnt = true
}
