package workspace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror"
)

// The history is the workspace's append-only record of what every run put into
// (or deleted from) a registry: working-dir/history/run-NNNNNN.json, one file per
// run, never rewritten. It answers "what is in my mirror and why", and the
// delete planner counts references over it. Beside the records,
// history/recorded-tags.txt repeats what the newest mirror run left at its
// destination, for the next run (recorded.go).

// Run kinds of the history (and RunRetire, retire.go).
const (
	RunMirror = "mirror"
	RunDelete = "delete"
)

// HistoryRun is one run of the history.
type HistoryRun struct {
	// Seq numbers the runs of the workspace from 1.
	Seq  int       `json:"seq"`
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
	// Workflow is mirror-to-mirror or disk-to-mirror (mirror runs).
	Workflow mirror.Workflow `json:"workflow,omitempty"`
	// Destination is the registry and namespace, REGISTRY[:PORT][/NS].
	Destination string `json:"destination"`
	// ConfigPath is the absolute path of the configuration; ConfigHash the
	// SHA-256 of Config, the configuration as loaded (JSON).
	ConfigPath string          `json:"configPath,omitempty"`
	ConfigHash string          `json:"configHash,omitempty"`
	Config     json.RawMessage `json:"config,omitempty"`
	// MaxNestedPaths is the run's --max-nested-paths (cluster resources).
	MaxNestedPaths int `json:"maxNestedPaths,omitempty"`
	// Complete is true when every planned image reached the destination.
	Complete bool `json:"complete"`
	// Images are the run's images: what it selected (every one) and whether it
	// is at the destination (Status).
	Images []HistoryImage `json:"images,omitempty"`
	// Catalogs are the catalogs the run mirrored.
	Catalogs []mirror.PlanCatalog `json:"catalogs,omitempty"`
	// Templates are the targetCatalogSourceTemplate files, by catalog.
	Templates map[string]string `json:"templates,omitempty"`
	// Plan and Deleted describe a delete run: the plan executed and the
	// manifests it removed.
	Plan    string          `json:"plan,omitempty"`
	Deleted []HistoryDelete `json:"deleted,omitempty"`
}

// Statuses of an image the copy engine did not report on (it reports copied,
// skipped and failed).
const (
	// StatusNotRun is the outcome of an image the copy never reached.
	StatusNotRun = "not run"
	// StatusPlanned is an image of a run that copied nothing (dry run,
	// --plan-only).
	StatusPlanned = "planned"
)

// statusFailed is the copy engine's failed status as history records hold it:
// the records are a file format, read back by later versions, so the word is
// kept here rather than taken from the engine (a test checks they agree).
const statusFailed = "failed"

// HistoryImage is one image a run selected.
type HistoryImage struct {
	// Repository and Digest are where it is at the destination.
	Repository string        `json:"repository"`
	Digest     digest.Digest `json:"digest"`
	Tags       []string      `json:"tags,omitempty"`
	MediaType  string        `json:"mediaType,omitempty"`
	// Source is the reference the catalog or the configuration named.
	Source string           `json:"source"`
	Kind   mirror.ImageKind `json:"kind"`
	// Status is the copy's outcome (copied, skipped: already there, failed…).
	Status string `json:"status"`
	// WantedBy says which selections asked for it.
	WantedBy []Want `json:"wantedBy"`
}

// Mirrored reports whether the image is at the destination after the run.
func (h HistoryImage) Mirrored() bool {
	return h.Status != statusFailed && h.Status != StatusNotRun && h.Status != StatusPlanned && h.Status != ""
}

// Destination is "repo:firstTag", or "repo@digest" without a tag.
func (h HistoryImage) Destination() string {
	if len(h.Tags) > 0 {
		return h.Repository + ":" + h.Tags[0]
	}
	return ImageKey(h.Repository, h.Digest)
}

// Want is one reason an image was mirrored: a bundle of a catalog's package, a
// catalog itself, an additionalImages entry, or an entry of another kind of
// content (its source names the Kind, and the entry in Catalog or Image).
type Want struct {
	// Kind is "bundle", "catalog", "additionalImages", "release",
	// "graph-image" or another kind of content's.
	Kind    string `json:"kind"`
	Catalog string `json:"catalog,omitempty"`
	Package string `json:"package,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Version string `json:"version,omitempty"`
	// Channels of the package holding the bundle (in the pruned catalog).
	Channels []string `json:"channels,omitempty"`
	// Image is the additionalImages reference; of a release, its payload.
	Image string `json:"image,omitempty"`
	// Arch is a release's architecture (amd64, …, multi).
	Arch string `json:"arch,omitempty"`
}

// Want kinds.
const (
	WantBundle     = "bundle"
	WantCatalog    = "catalog"
	WantAdditional = "additionalImages"
	WantRelease    = "release"
	// WantGraphImage is the graph-data image of an in-cluster update
	// service (mirror.platform.graph): built by the run, not a release.
	WantGraphImage = "graph-image"
)

// Key identifies what the want names (not the version it had).
func (w Want) Key() string {
	switch w.Kind {
	case WantBundle:
		return "bundle " + w.Catalog + " " + w.Package + "/" + w.Bundle
	case WantCatalog:
		return "catalog " + w.Catalog
	case WantAdditional:
		return "additional " + w.Image
	case WantRelease:
		return "release " + w.Version + " " + w.Arch
	case WantGraphImage:
		return WantGraphImage
	}
	return w.Kind + " " + w.Catalog + " " + w.Image // another kind of content
}

func (w Want) String() string {
	switch w.Kind {
	case WantBundle:
		if w.Bundle == "" {
			return "catalog " + w.Catalog
		}
		return fmt.Sprintf("bundle %s of package %s (catalog %s)", w.Bundle, w.Package, w.Catalog)
	case WantCatalog:
		return "catalog image " + w.Catalog
	case WantAdditional:
		return "additionalImages " + w.Image
	case WantRelease:
		return fmt.Sprintf("release %s (%s, payload %s)", w.Version, w.Arch, w.Image)
	case WantGraphImage:
		return "the graph-data image (mirror.platform.graph)"
	}
	return strings.Join(slices.DeleteFunc([]string{w.Kind, w.Catalog, w.Image}, func(s string) bool { return s == "" }), " ")
}

// HistoryDelete is one manifest a delete run removed.
type HistoryDelete struct {
	Repository string        `json:"repository"`
	Digest     digest.Digest `json:"digest"`
	Tags       []string      `json:"tags,omitempty"`
}

// History is every run of a workspace, in order.
type History struct {
	Dir  string       `json:"dir"`
	Runs []HistoryRun `json:"runs"`
}

// ReadHistory reads the history of the working directory d.
func ReadHistory(d Dir) (*History, error) {
	dir := d.HistoryDir()
	h := &History{Dir: dir}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(d.Path()); serr != nil {
			return nil, fmt.Errorf("no workspace at %s: give the --workspace of your mirror runs", d.Workspace())
		}
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, "run-") || !strings.HasSuffix(n, ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		var run HistoryRun
		if err := json.Unmarshal(b, &run); err != nil {
			return nil, fmt.Errorf("history record %s is not valid JSON: %w; it was changed by hand or by a broken disk: restore it from a backup", filepath.Join(dir, n), err)
		}
		run.Destination = destinationKey(run.Destination)
		h.Runs = append(h.Runs, run)
	}
	sort.Slice(h.Runs, func(i, j int) bool { return h.Runs[i].Seq < h.Runs[j].Seq })
	return h, nil
}

// AppendHistory adds run to the history of d with the next number. A run file
// is created once and never replaced: it is written to a temporary file,
// synced, then linked to its name, which fails if the name exists.
func AppendHistory(d Dir, run HistoryRun) (HistoryRun, error) {
	dir := d.HistoryDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, fmt.Errorf("create history folder: %w", err)
	}
	for attempt := 0; attempt < 100; attempt++ {
		seq, err := lastSeq(dir)
		if err != nil {
			return run, err
		}
		run.Seq = seq + 1
		// Compact: a quarter smaller than indented (three records of 5,157
		// images: 9.2 MB against 12.4 MB), faster to write and to read back
		// (RecordedTags, every re-run); airlock history --json indents them.
		// Encoded straight into the file, a newline after it (12 MB at
		// 20,000 images, not held in a buffer too).
		err = atomicfile.WriteNewFunc(filepath.Join(dir, fmt.Sprintf("run-%06d.json", run.Seq)), 0, func(w io.Writer) error {
			return json.NewEncoder(w).Encode(run)
		})
		if err == nil {
			if run.Kind == RunMirror {
				// What the next run reads of this record (RecordedTags). A
				// failure costs it only the decoding of the record: the
				// file names another record, or none.
				_ = writeRecordedTags(d, run)
			}
			return run, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return run, fmt.Errorf("record the run in the history: %w", err)
		}
		// Another run took the number: take the next one.
	}
	return run, errors.New("record the run in the history: too many concurrent runs")
}

// lastSeq is the highest run number in the history folder (from the file names:
// the records themselves may be large).
func lastSeq(dir string) (int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	last := 0
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "run-%d.json", &n); err == nil && n > last {
			last = n
		}
	}
	return last, nil
}

// ImageKey identifies a manifest at the destination: REPOSITORY@DIGEST.
func ImageKey(repo string, d digest.Digest) string { return repo + "@" + d.String() }

// WriteText prints the history: one paragraph per run, with the images it added
// to its destination (those no earlier run had put there) and what it deleted.
func (h *History) WriteText(w io.Writer) error {
	if len(h.Runs) == 0 {
		_, err := fmt.Fprintf(w, "no runs recorded in %s yet: mirror-to-mirror and disk-to-mirror runs with this --workspace are recorded\n", h.Dir)
		return err
	}
	present := map[string]bool{}
	for _, run := range h.Runs {
		when := run.Time.UTC().Format("2006-01-02 15:04:05Z")
		switch run.Kind {
		case RunDelete:
			fmt.Fprintf(w, "run %d  %s  delete from %s  plan %s: %d manifest(s) deleted\n", run.Seq, when, run.Destination, run.Plan, len(run.Deleted))
			for _, d := range run.Deleted {
				delete(present, ImageKey(d.Repository, d.Digest))
				fmt.Fprintf(w, "  - %s\n", ImageKey(d.Repository, d.Digest))
			}
		case RunRetire:
			fmt.Fprintf(w, "run %d  %s  retired the selection of %s at %s (delete --stale no longer counts it)\n", run.Seq, when, run.ConfigPath, run.Destination)
		default:
			state := "complete"
			if !run.Complete {
				state = "incomplete"
			}
			var added []HistoryImage
			kinds := map[mirror.ImageKind]int{}
			for _, im := range run.Images {
				kinds[im.Kind]++
				k := ImageKey(im.Repository, im.Digest)
				if im.Mirrored() && !present[k] {
					present[k] = true
					added = append(added, im)
				}
			}
			cfg := run.ConfigPath
			if len(run.ConfigHash) > 15 {
				cfg += " (" + run.ConfigHash[:15] + ")"
			}
			fmt.Fprintf(w, "run %d  %s  %s to %s  config %s  %s\n", run.Seq, when, run.Workflow, run.Destination, cfg, state)
			fmt.Fprintf(w, "  selected %d images (%d catalog, %d operator, %d additional); %d new at the destination\n",
				len(run.Images), kinds[mirror.KindCatalog], kinds[mirror.KindOperator], kinds[mirror.KindGeneric], len(added))
			for _, im := range added {
				var why []string
				for _, wt := range im.WantedBy {
					why = append(why, wt.String())
				}
				fmt.Fprintf(w, "  + %s  %s\n", ImageKey(im.Repository, im.Digest), strings.Join(why, "; "))
			}
		}
	}
	return nil
}

// destinationKey is a recorded destination as it is compared: records
// written before destinations were parsed as locations kept a namespace's
// trailing slash ("reg/ns/"), which names the same place as "reg/ns".
func destinationKey(dest string) string {
	return strings.TrimRight(dest, "/")
}
