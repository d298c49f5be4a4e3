package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// catalogTemplate is a targetCatalogSourceTemplate read (and checked) before the
// run copies anything.
type catalogTemplate struct {
	path string
	data []byte
}

// preflight checks, before the first byte moves, everything a run can check:
// the catalog source templates, and that every registry the run needs (the
// catalogs' and the destination) answers and accepts the credentials.
// Registries are probed once each, concurrently; the first failure stops the
// run with one message that names the registry, the cause and the fix.
//
// The probes run beside the catalog stage, which only reads the source (a
// mirror-to-mirror or mirror-to-disk run that is not a shard): planSources
// waits for them (r.checked) before planning, the first to write, and a
// failed probe cancels the returned context. Other runs wait here.
func (r *run) preflight(ctx context.Context) (context.Context, error) {
	r.stage("preflight")
	if err := r.readTemplates(); err != nil {
		return ctx, err
	}
	seen := map[string]bool{}
	var probes []probe
	add := func(reg *registry.Client, repo string, push bool, what string) {
		host, _, _ := strings.Cut(repo, "/")
		key := fmt.Sprint(host, push)
		if seen[key] {
			return
		}
		seen[key] = true
		probes = append(probes, probe{reg, repo, push, what})
	}
	if r.workflow != mirror.DiskToMirror {
		for _, op := range r.cfg.Mirror.Operators {
			if op.IsOCI() {
				continue
			}
			if ref, err := oci.ParseReference(op.Catalog); err == nil {
				add(r.srcRegistry(), ref.Repository(), false, "source registry of catalog "+op.Catalog)
			}
		}
		// The registries of additionalImages are probed with the catalogs'
		// images (probeImageHosts): one that cannot be reached fails its
		// images, not the run.
	}
	if r.dest != "" {
		add(r.destRegistry(), strings.TrimSuffix(r.dest, "/")+"/airlock-preflight", true, "destination registry")
	}
	sort.SliceStable(probes, func(i, j int) bool { return probes[i].push && !probes[j].push })
	pctx, cancel := context.WithCancelCause(ctx)
	failed := make(chan error, 1)
	go func() {
		for _, err := range probeAll(ctx, probes) {
			if err != nil {
				cancel(err)
				failed <- err
				return
			}
		}
		failed <- nil
	}()
	r.checked = sync.OnceValue(func() error { return <-failed })
	if r.workflow == mirror.DiskToMirror || r.opts.Run.PlanFile != "" {
		return pctx, r.checked()
	}
	return pctx, nil
}

// probe is one registry check: reach repo's host with the credentials, for
// push when push is set.
type probe struct {
	reg  *registry.Client
	repo string
	push bool
	what string
}

// probeAll runs the probes concurrently, within preflightTimeout, and returns
// their errors by index.
func probeAll(ctx context.Context, probes []probe) []error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	errs := make([]error, len(probes))
	var g errgroup.Group
	g.SetLimit(16)
	for i, p := range probes {
		g.Go(func() error {
			if err := p.reg.Probe(ctx, p.repo, p.push); err != nil {
				errs[i] = fmt.Errorf("%s: %w", p.what, err)
			}
			return nil
		})
	}
	_ = g.Wait()
	return errs
}

// probeImageHosts checks, before planning, every registry the catalogs' and
// the configuration's images live on, once each and concurrently. A host that
// cannot be reached is reported once, here, and returned: its images then fail
// at once (mirror.Plan.FailHosts) instead of each waiting through retries, and
// without stopping the copy of the others, which are planned as usual.
func (r *run) probeImageHosts(ctx context.Context, src *registry.Client, refs []string) map[string]error {
	count := map[string]int{}
	var probes []probe
	for _, ref := range refs {
		p, err := oci.ParseReference(ref)
		if err != nil {
			continue
		}
		if count[p.Registry]++; count[p.Registry] == 1 {
			probes = append(probes, probe{reg: src, repo: p.Repository(), what: "registry " + p.Registry})
		}
	}
	down := map[string]error{}
	for i, err := range probeAll(ctx, probes) {
		if err != nil && ctx.Err() == nil {
			host, _, _ := strings.Cut(probes[i].repo, "/")
			r.log.Warn(fmt.Sprintf("%d image(s) cannot be mirrored from it", count[host]), "error", err.Error())
			if errors.Is(err, endpoint.ErrRegistryUnreachable) {
				down[host] = err
			}
		}
	}
	return down
}

// preflightTimeout bounds the registry probes: a registry that answers nothing
// (a firewall dropping packets) is reported instead of waited for.
const preflightTimeout = 20 * time.Second

// readTemplates reads and checks every targetCatalogSourceTemplate.
func (r *run) readTemplates() error {
	r.templates = map[string]catalogTemplate{}
	for _, op := range r.cfg.Mirror.Operators {
		t := op.TargetCatalogSourceTemplate
		if t == "" {
			continue
		}
		path := t
		if !filepath.IsAbs(path) && r.cfg.Source != "" {
			path = filepath.Join(filepath.Dir(r.cfg.Source), path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("targetCatalogSourceTemplate of catalog %s (%s line %d): %w", op.Catalog, r.cfg.Source, op.Line, err)
		}
		if err := manifests.CheckTemplate(b, path); err != nil {
			return fmt.Errorf("catalog %s (%s line %d): %w", op.Catalog, r.cfg.Source, op.Line, err)
		}
		r.templates[op.Catalog] = catalogTemplate{path: path, data: b}
	}
	return nil
}
