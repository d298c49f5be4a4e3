package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"sort"
	"time"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/workspace"
)

// ReadHistory reads the history of the workspace file://DIR.
func ReadHistory(ws location.Location) (*workspace.History, error) {
	wd, err := workspace.OpenLocation(ws)
	if err != nil {
		return nil, err
	}
	return workspace.ReadHistory(wd)
}

// A mirror run's record in the workspace history (workspace.HistoryRun): every
// image the plan selected, where it went and why.

// catalogWants maps each image a (pruned) catalog names to the bundles that use
// it, with their versions and channels.
func catalogWants(catalog string, c *fbc.Catalog) map[string][]workspace.Want {
	type bkey struct{ pkg, bundle string }
	info := map[bkey]workspace.Want{}
	for _, p := range c.Packages {
		chans := map[string][]string{}
		for _, ch := range p.Channels {
			for _, e := range ch.Entries {
				chans[e.Name] = append(chans[e.Name], ch.Name)
			}
		}
		for _, b := range p.Bundles {
			w := workspace.Want{Kind: workspace.WantBundle, Catalog: catalog, Package: p.Name, Bundle: b.Name, Channels: chans[b.Name]}
			if v, err := fbc.BundleVersion(b); err == nil {
				w.Version = v.String()
			}
			sort.Strings(w.Channels)
			info[bkey{p.Name, b.Name}] = w
		}
	}
	uses, _ := fbc.Images(c)
	out := make(map[string][]workspace.Want, len(uses))
	for _, u := range uses {
		for _, b := range u.Bundles {
			w, ok := info[bkey{b.Package, b.Bundle}]
			if !ok {
				w = workspace.Want{Kind: workspace.WantBundle, Catalog: catalog, Package: b.Package, Bundle: b.Bundle}
			}
			out[u.Image] = append(out[u.Image], w)
		}
	}
	return out
}

// noteWants remembers why each image of a catalog is wanted, for the history.
func (r *run) noteWants(catalog string, c *fbc.Catalog) {
	if r.wants == nil {
		r.wants = map[string][]workspace.Want{}
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
	if r.opts.Run.DryRun || r.res.Plan == nil || r.res.Copy == nil || (r.workflow != mirror.MirrorToMirror && r.workflow != mirror.DiskToMirror) {
		return nil
	}
	if r.opts.Run.PlanFile != "" && !r.opts.Run.Finish {
		// One shard of a plan: --finish records the whole plan once every shard
		// is done (a shard alone would look like a selection of its images only).
		return nil
	}
	cfg, err := json.Marshal(r.cfg)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(cfg)
	hr := workspace.HistoryRun{
		Kind: workspace.RunMirror, Time: time.Now().UTC(), Workflow: r.workflow, Destination: r.dest,
		ConfigHash: "sha256:" + hex.EncodeToString(sum[:]), Config: cfg, MaxNestedPaths: r.opts.Destination.MaxNestedPaths,
		Catalogs: r.res.Plan.Catalogs, Complete: r.res.Failed == 0 && !r.res.Interrupted,
	}
	if abs, err := filepath.Abs(r.opts.ConfigPath); err == nil {
		hr.ConfigPath = abs
	}
	for _, s := range r.sources() {
		if os, ok := s.(*operatorSource); ok {
			for c, t := range os.templates {
				if hr.Templates == nil {
					hr.Templates = map[string]string{}
				}
				hr.Templates[c] = t.path
			}
		}
	}
	status := map[string]string{}
	for _, o := range r.res.Images {
		status[o.Destination+"\x00"+o.Digest] = o.Status
	}
	for _, im := range r.res.Plan.Images {
		if im.Error != "" || im.Digest == "" {
			continue
		}
		hi := workspace.HistoryImage{
			Repository: im.DestRepo, Digest: im.Digest, Tags: im.Tags, MediaType: im.MediaType,
			Source: im.Source, Kind: im.Kind, Status: status[im.Destination()+"\x00"+im.Digest.String()],
		}
		hi.WantedBy = wantsFrom(r.sources(), im)
		hr.Images = append(hr.Images, hi)
	}
	_, err = workspace.AppendHistory(r.workDir, hr)
	return err
}
