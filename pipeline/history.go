package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror"
)

// The history is the workspace's append-only record of what every run put into
// (or deleted from) a registry: working-dir/history/run-NNNNNN.json, one file per
// run, never rewritten. It answers "what is in my mirror and why", and the
// delete planner counts references over it.

// historyDirName is the history folder inside working-dir.
const historyDirName = "history"

// Run kinds of the history.
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
	return h.Status != mirror.StatusFailed && h.Status != statusNotRun && h.Status != "planned" && h.Status != ""
}

// Want is one reason an image was mirrored: a bundle of a catalog's package, a
// catalog itself, or an additionalImages entry.
type Want struct {
	// Kind is "bundle", "catalog" or "additionalImages".
	Kind    string `json:"kind"`
	Catalog string `json:"catalog,omitempty"`
	Package string `json:"package,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Version string `json:"version,omitempty"`
	// Channels of the package holding the bundle (in the pruned catalog).
	Channels []string `json:"channels,omitempty"`
	// Image is the additionalImages reference.
	Image string `json:"image,omitempty"`
}

// Want kinds.
const (
	WantBundle     = "bundle"
	WantCatalog    = "catalog"
	WantAdditional = "additionalImages"
)

// Key identifies what the want names (not the version it had).
func (w Want) Key() string {
	switch w.Kind {
	case WantBundle:
		return "bundle " + w.Catalog + " " + w.Package + "/" + w.Bundle
	case WantCatalog:
		return "catalog " + w.Catalog
	}
	return "additional " + w.Image
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
	}
	return "additionalImages " + w.Image
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

func historyDir(workDir string) string { return filepath.Join(workDir, historyDirName) }

// workingDir returns DIR/working-dir of a --workspace file://DIR.
func workingDir(workspace string) (string, error) {
	dir, err := fileDir(workspace, "--workspace")
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(abs, "working-dir"), nil
}

// ReadHistory reads the history of the workspace file://DIR.
func ReadHistory(workspace string) (*History, error) {
	wd, err := workingDir(workspace)
	if err != nil {
		return nil, err
	}
	return readHistory(wd)
}

func readHistory(workDir string) (*History, error) {
	dir := historyDir(workDir)
	h := &History{Dir: dir}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(workDir); serr != nil {
			return nil, fmt.Errorf("no workspace at %s: give the --workspace of your mirror runs", filepath.Dir(workDir))
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
		h.Runs = append(h.Runs, run)
	}
	sort.Slice(h.Runs, func(i, j int) bool { return h.Runs[i].Seq < h.Runs[j].Seq })
	return h, nil
}

// appendHistory adds run to the history of workDir with the next number. A run
// file is created once and never replaced: it is written to a temporary file,
// synced, then linked to its name, which fails if the name exists.
func appendHistory(workDir string, run HistoryRun) (HistoryRun, error) {
	dir := historyDir(workDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, fmt.Errorf("create history folder: %w", err)
	}
	for attempt := 0; attempt < 100; attempt++ {
		seq, err := lastSeq(dir)
		if err != nil {
			return run, err
		}
		run.Seq = seq + 1
		b, err := json.MarshalIndent(run, "", "  ")
		if err != nil {
			return run, err
		}
		err = atomicfile.WriteNew(filepath.Join(dir, fmt.Sprintf("run-%06d.json", run.Seq)), append(b, '\n'), 0)
		if err == nil {
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

// catalogWants maps each image a (pruned) catalog names to the bundles that use
// it, with their versions and channels.
func catalogWants(catalog string, c *fbc.Catalog) map[string][]Want {
	type bkey struct{ pkg, bundle string }
	info := map[bkey]Want{}
	for _, p := range c.Packages {
		chans := map[string][]string{}
		for _, ch := range p.Channels {
			for _, e := range ch.Entries {
				chans[e.Name] = append(chans[e.Name], ch.Name)
			}
		}
		for _, b := range p.Bundles {
			w := Want{Kind: WantBundle, Catalog: catalog, Package: p.Name, Bundle: b.Name, Channels: chans[b.Name]}
			if v, err := fbc.BundleVersion(b); err == nil {
				w.Version = v.String()
			}
			sort.Strings(w.Channels)
			info[bkey{p.Name, b.Name}] = w
		}
	}
	uses, _ := fbc.Images(c)
	out := make(map[string][]Want, len(uses))
	for _, u := range uses {
		for _, b := range u.Bundles {
			w, ok := info[bkey{b.Package, b.Bundle}]
			if !ok {
				w = Want{Kind: WantBundle, Catalog: catalog, Package: b.Package, Bundle: b.Bundle}
			}
			out[u.Image] = append(out[u.Image], w)
		}
	}
	return out
}

// noteWants remembers why each image of a catalog is wanted, for the history.
func (r *run) noteWants(catalog string, c *fbc.Catalog) {
	if r.wants == nil {
		r.wants = map[string][]Want{}
	}
	for img, ws := range catalogWants(catalog, c) {
		r.wants[img] = append(r.wants[img], ws...)
	}
}

// recordHistory appends the run to the workspace history: every image the plan
// selected, where it went and why. Only runs that wrote to a registry are
// recorded (not dry runs, not mirror-to-disk, not --plan-only), and a sharded
// run once, by --finish.
func (r *run) recordHistory() error {
	if r.opts.DryRun || r.res.Plan == nil || r.res.Copy == nil || (r.workflow != mirror.MirrorToMirror && r.workflow != mirror.DiskToMirror) {
		return nil
	}
	if r.opts.PlanFile != "" && !r.opts.Finish {
		// One shard of a plan: --finish records the whole plan once every shard
		// is done (a shard alone would look like a selection of its images only).
		return nil
	}
	cfg, err := json.Marshal(r.cfg)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(cfg)
	hr := HistoryRun{
		Kind: RunMirror, Time: time.Now().UTC(), Workflow: r.workflow, Destination: r.dest,
		ConfigHash: "sha256:" + hex.EncodeToString(sum[:]), Config: cfg, MaxNestedPaths: r.opts.MaxNestedPaths,
		Catalogs: r.res.Plan.Catalogs, Complete: r.res.Failed == 0 && !r.res.Interrupted,
	}
	if abs, err := filepath.Abs(r.opts.ConfigPath); err == nil {
		hr.ConfigPath = abs
	}
	for c, t := range r.templates {
		if hr.Templates == nil {
			hr.Templates = map[string]string{}
		}
		hr.Templates[c] = t.path
	}
	status := map[string]string{}
	for _, o := range r.res.Images {
		status[o.Destination+"\x00"+o.Digest] = o.Status
	}
	for _, im := range r.res.Plan.Images {
		if im.Error != "" || im.Digest == "" {
			continue
		}
		hi := HistoryImage{
			Repository: im.DestRepo, Digest: im.Digest, Tags: im.Tags, MediaType: im.MediaType,
			Source: im.Source, Kind: im.Kind, Status: status[im.Destination()+"\x00"+im.Digest.String()],
		}
		hi.WantedBy = r.wantsOf(im)
		hr.Images = append(hr.Images, hi)
	}
	_, err = appendHistory(r.workDir, hr)
	return err
}

// wantsOf says why the plan has im.
func (r *run) wantsOf(im mirror.PlanImage) []Want {
	var out []Want
	seen := map[string]bool{}
	add := func(w Want) {
		if k := w.Key(); !seen[k] {
			seen[k] = true
			out = append(out, w)
		}
	}
	if im.Kind == mirror.KindCatalog {
		add(Want{Kind: WantCatalog, Catalog: im.Source})
		return out
	}
	origins := map[string]bool{}
	for _, o := range im.Origins {
		origins[o] = true
	}
	for _, w := range r.wants[im.Source] {
		if origins[w.Catalog] {
			add(w)
		}
	}
	for _, o := range im.Origins {
		switch {
		case o == "additionalImages":
			add(Want{Kind: WantAdditional, Image: im.Source})
		case !wantedFrom(out, o):
			// Known by catalog only (an archive loaded as it was packed).
			add(Want{Kind: WantBundle, Catalog: o})
		}
	}
	return out
}

func wantedFrom(ws []Want, catalog string) bool {
	for _, w := range ws {
		if w.Catalog == catalog {
			return true
		}
	}
	return false
}

// imageKey identifies a manifest at the destination.
func imageKey(repo string, d digest.Digest) string { return repo + "@" + d.String() }

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
				delete(present, imageKey(d.Repository, d.Digest))
				fmt.Fprintf(w, "  - %s\n", imageKey(d.Repository, d.Digest))
			}
		default:
			state := "complete"
			if !run.Complete {
				state = "incomplete"
			}
			var added []HistoryImage
			kinds := map[mirror.ImageKind]int{}
			for _, im := range run.Images {
				kinds[im.Kind]++
				k := imageKey(im.Repository, im.Digest)
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
				fmt.Fprintf(w, "  + %s  %s\n", imageKey(im.Repository, im.Digest), strings.Join(why, "; "))
			}
		}
	}
	return nil
}
