package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// The catalog stage is a pure function of three inputs: the catalog image (its
// digest), the operator entry that selects from it, and the airlock build that
// loads and prunes it. Its outputs — the images the pruned catalog names, the
// warnings, what the history and the report record, and the rebuilt catalog
// image in its OCI layout — are kept beside the pruned catalog in a memo. A
// re-run with the same three inputs reads the memo instead of loading the
// catalog again (loading and pruning a 1.7 GB catalog costs seconds; reading the
// memo, milliseconds). The memo is written last, after everything it points at,
// and removed before anything it points at is rewritten; the rebuilt image is
// checked blob by blob in its layout before the memo is trusted.

// memoVersion changes when the memo's content changes meaning.
const memoVersion = 1

// catalogMemo is what the catalog stage derived from one catalog and one
// entry: what planning needs (memoHead) and what only the run's records use
// (memoTail), one JSON object.
type catalogMemo struct {
	memoHead
	memoTail
}

// memoHead is the part of a memo planning needs.
type memoHead struct {
	Version int    `json:"version"`
	Key     string `json:"key"`
	// Images and Packages are the CatalogRequest's.
	Images   []string `json:"images"`
	Packages []string `json:"packages"`
	// Warnings are what the stage added to the run's warnings, in order.
	Warnings []string `json:"warnings,omitempty"`
	// Rebuilt locates the rebuilt catalog image; nil when the catalog is
	// mirrored untouched.
	Rebuilt *memoRebuilt `json:"rebuilt,omitempty"`
}

// memoTail is the part of a memo only the run's records use (at 20,000
// images, three quarters of its bytes): it is decoded while the run plans
// (readMemo).
type memoTail struct {
	// Wants is what the history records about each image.
	Wants map[string][]workspace.Want `json:"wants,omitempty"`
	// Report is the catalog's entry of report.json as the stage made it.
	Report *report.Catalog `json:"report,omitempty"`
}

type memoRebuilt struct {
	LayoutDir   string        `json:"layoutDir"`
	Tag         string        `json:"tag"`
	Digest      digest.Digest `json:"digest"`
	LayerDigest digest.Digest `json:"layerDigest"`
}

// memoKey identifies the inputs of the catalog stage. It is "" (no memo) when
// the airlock build cannot be identified.
func memoKey(fc *catalogimage.Fetched, op imageset.Operator) string {
	build := buildID()
	if build == "" || fc.Digest == "" {
		return ""
	}
	b, _ := json.Marshal(struct {
		Version int
		Digest  digest.Digest
		Entry   string
		Build   string
	}{memoVersion, fc.Digest, filterHash(op), build})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// buildID identifies the running executable: a rebuilt airlock may load or
// prune differently, so its memos are not reused. It is the Go build ID (a hash
// of the binary's content, read from its ELF note in a millisecond), else the
// SHA-256 of the whole file (~60 ms for 60 MB, on the way to the first byte).
var buildID = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if id := goBuildID(exe); id != "" {
		return "go:" + id
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
})

// goBuildID is the Go build ID in the .note.go.buildid section of the ELF
// executable at path ("" when it has none).
func goBuildID(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		return ""
	}
	b, err := s.Data()
	if err != nil || len(b) < 16 {
		return ""
	}
	namesz, descsz := f.ByteOrder.Uint32(b), f.ByteOrder.Uint32(b[4:])
	off := 12 + uint64(namesz+3)&^3
	if namesz != 4 || string(b[12:15]) != "Go\x00" || off+uint64(descsz) > uint64(len(b)) {
		return ""
	}
	return string(b[off : off+uint64(descsz)])
}

// catalogRoot is the folder of the fetched catalog that holds its extracted
// (or converted) catalog and the filtered results.
func catalogRoot(fc *catalogimage.Fetched) string {
	if fc.ConfigsDir != "" {
		return filepath.Dir(fc.ConfigsDir)
	}
	return filepath.Dir(filepath.Dir(fc.DatabaseFile))
}

// readMemo returns the head of the memo at path when it was made for key and
// what it points at is still there; otherwise nil (and the reason, for the
// debug log). The head is read from the start of the memo, where writeMemo
// puts it, up to the tail (decodeMemoHead); the tail is decoded in the
// background returned, beside planning, which fails when the memo is not
// valid JSON or holds a field of the head after its tail.
func readMemo(ctx context.Context, path, key string, fc *catalogimage.Fetched) (*memoHead, *background[*memoTail], *catalogimage.Rebuilt, error) {
	if key == "" {
		return nil, nil, nil, errors.New("no memo key")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	m, rest, err := decodeMemoHead(b)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.Version != memoVersion || m.Key != key {
		return nil, nil, nil, errors.New("made for other inputs")
	}
	var rb *catalogimage.Rebuilt
	if m.Rebuilt != nil {
		rb, err = catalogimage.OpenRebuilt(fc, m.Rebuilt.LayoutDir, m.Rebuilt.Tag, m.Rebuilt.Digest, m.Rebuilt.LayerDigest)
		if err != nil {
			return nil, nil, nil, err
		}
	}
	tail := goBackground(ctx, func(context.Context) (*memoTail, error) {
		t, err := decodeMemoTail(b, rest)
		if err != nil {
			// Its planning part was used already: this run cannot record
			// the catalog. Without the memo the next one prunes it anew.
			if derr := dropMemo(path); derr != nil {
				return nil, fmt.Errorf("catalog memo %s: %w: remove it and run again (the catalog is then pruned anew)", path, err)
			}
			return nil, fmt.Errorf("catalog memo %s: %w: it was removed; run again (the catalog is then pruned anew)", path, err)
		}
		return t, nil
	})
	return m, tail, rb, nil
}

// decodeMemoHead decodes the fields of memo b that come before the first of
// its tail (all of the head, in the order writeMemo writes them), without
// reading the tail: at 20,000 images three quarters of a memo's bytes. rest
// is the memo from its first tail field on; a memo whose head does not all
// come first is decoded whole (rest nil).
func decodeMemoHead(b []byte) (_ *memoHead, rest []byte, _ error) {
	var m memoHead
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return decodeMemoWhole(b)
	}
	for dec.More() {
		off := dec.InputOffset() // the comma before the key, if any
		t, err := dec.Token()
		if err != nil {
			return decodeMemoWhole(b)
		}
		var field any
		switch t {
		case "version":
			field = &m.Version
		case "key":
			field = &m.Key
		case "images":
			field = &m.Images
		case "packages":
			field = &m.Packages
		case "warnings":
			field = &m.Warnings
		case "rebuilt":
			field = &m.Rebuilt
		case "wants", "report":
			// The tail: the head is read if it was all before it.
			if m.Version == 0 || m.Key == "" || m.Images == nil || m.Packages == nil {
				return decodeMemoWhole(b)
			}
			return &m, bytes.TrimLeft(b[off:], ", \t\r\n"), nil
		default:
			return decodeMemoWhole(b)
		}
		if err := dec.Decode(field); err != nil {
			return decodeMemoWhole(b)
		}
	}
	return decodeMemoWhole(b)
}

// decodeMemoWhole decodes the head of memo b from all of b.
func decodeMemoWhole(b []byte) (*memoHead, []byte, error) {
	var m memoHead
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, nil, err
	}
	return &m, nil, nil
}

// decodeMemoTail decodes the tail of memo b, whose head decodeMemoHead read:
// from rest, which must hold no field of the head; without rest, from all of
// b.
func decodeMemoTail(b, rest []byte) (*memoTail, error) {
	var m catalogMemo
	if rest == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, err
		}
		return &m.memoTail, nil
	}
	if err := json.Unmarshal(append([]byte{'{'}, rest...), &m); err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(m.memoHead, memoHead{}) {
		return nil, errors.New("a field of its planning part comes after the rest")
	}
	return &m.memoTail, nil
}

// catalogRecords is what one catalog of the run leaves for the run's records:
// the wants of its images (tail's, or wants) and, for a memo read, its
// report entry, filled in from the memo's tail (rc).
type catalogRecords struct {
	tail  *background[*memoTail]
	rc    *report.Catalog
	wants map[string][]workspace.Want
}

// settleCatalogs waits for the catalogs' memo tails and merges what each
// catalog left for the records into the run (wants, report entries), in the
// order of the catalogs. It is called before the records or the report read
// them; more than once is fine (the first error stays).
func (r *run) settleCatalogs() error {
	for _, c := range r.catalogRecs {
		wants := c.wants
		if c.tail != nil {
			t, err := c.tail.wait()
			if err != nil {
				if r.catalogsErr == nil {
					r.catalogsErr = err
				}
				continue
			}
			if t.Report != nil {
				*c.rc = *t.Report
			}
			wants = t.Wants
		}
		if r.wants == nil {
			r.wants = map[string][]workspace.Want{}
		}
		for img, ws := range wants {
			r.wants[img] = append(r.wants[img], ws...)
		}
	}
	r.catalogRecs = nil
	return r.catalogsErr
}

// writeMemo records m at path (atomically: a reader sees the old memo, none, or
// this one).
func writeMemo(path string, m *catalogMemo) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return writeFile(path, b)
}

// dropMemo removes the memo at path before what it points at is rewritten.
func dropMemo(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// copyReportCatalog is a deep copy of rc, as the memo keeps it (later stages
// fill in the run's own copy).
func copyReportCatalog(rc *report.Catalog) (*report.Catalog, error) {
	b, err := json.Marshal(rc)
	if err != nil {
		return nil, err
	}
	var out report.Catalog
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
