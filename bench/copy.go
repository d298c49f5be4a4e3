package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/location"
)

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	return p.Host
}

// runCopy measures the copy section.
func runCopy(ctx context.Context, cfg Config) ([]Row, error) {
	log := cfg.Log
	work := filepath.Join(cfg.WorkDir, "copy")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	t0 := time.Now()
	// The catalog names the images by tag, as skopeo sync reads them: every
	// tool resolves the same tags, and the rows stay comparable with earlier
	// runs (the catalog-scale section pins them by digest).
	o := cfg.Workload
	o.TagRefs = true
	w, err := workload.New(o)
	if err != nil {
		return nil, err
	}
	log.Info("generated the copy workload", "took", time.Since(t0).Round(time.Millisecond))

	var regs []*Registry
	defer func() {
		for _, r := range regs {
			r.Stop()
		}
	}()
	start := func(name string) (*Registry, error) {
		r, err := StartRegistry(ctx, cfg.Registry, filepath.Join(work, name))
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", name, err)
		}
		regs = append(regs, r)
		return r, nil
	}
	stop := func(r *Registry) {
		r.Stop()
		for i, x := range regs {
			if x == r {
				regs = append(regs[:i], regs[i+1:]...)
				break
			}
		}
	}
	src, err := start("src")
	if err != nil {
		return nil, err
	}
	catRef := ""
	if cfg.CopyMode == "catalog" {
		if catRef, err = w.AddCatalog(src.Addr()); err != nil {
			return nil, err
		}
	}
	st := w.Stats()
	unique := st.BlobBytes
	t0 = time.Now()
	if _, err := w.Push(ctx, workload.PushOptions{Registry: hostOf(src.URL), Parallel: 8}); err != nil {
		return nil, fmt.Errorf("seed the source registry: %w", err)
	}
	log.Info("seeded the source registry", "tags", st.Tags, "blobs", st.Blobs, "bytes", Bytes(unique), "took", time.Since(t0).Round(time.Millisecond))

	// The ImageSetConfiguration.
	var isc strings.Builder
	isc.WriteString("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n")
	if catRef != "" {
		fmt.Fprintf(&isc, "  operators:\n  - catalog: %s\n    full: true\n", catRef)
	} else {
		isc.WriteString("  additionalImages:\n")
		for _, t := range w.Tags {
			fmt.Fprintf(&isc, "  - name: %s\n", t.Ref(src.Addr()))
		}
	}
	iscPath := filepath.Join(work, "isc.yaml")
	if err := os.WriteFile(iscPath, []byte(isc.String()), 0o644); err != nil {
		return nil, err
	}
	tune := []string{}
	if cfg.ParallelImages > 0 {
		tune = append(tune, "--parallel-images", strconv.Itoa(cfg.ParallelImages))
	}
	if cfg.ParallelLayers > 0 {
		tune = append(tune, "--parallel-layers", strconv.Itoa(cfg.ParallelLayers))
	}

	input := fmt.Sprintf("%s workload, %s", presetName(cfg), Bytes(unique))
	// measure runs c with src and dst (either may be nil) counted.
	measure := func(name string, c Command, srcR, dstR *Registry) (copyRun, error) {
		var s0, d0 Counts
		var cpu0 time.Duration
		if srcR != nil {
			s0 = srcR.Proxy.Counts()
			cpu0 += srcR.CPU()
		}
		if dstR != nil {
			d0 = dstR.Proxy.Counts()
			cpu0 += dstR.CPU()
		}
		log.Info("measuring", "what", name)
		px0 := selfCPU()
		m, err := Exec(ctx, c)
		if err != nil {
			return copyRun{}, err
		}
		proxies := selfCPU() - px0
		var ds, dd Counts
		var cpu1 time.Duration
		if srcR != nil {
			ds = srcR.Proxy.Counts().Sub(s0)
			cpu1 += srcR.CPU()
		}
		if dstR != nil {
			dd = dstR.Proxy.Counts().Sub(d0)
			cpu1 += dstR.CPU()
		}
		r := Row{Name: name, Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(), RegCPU: cpu1 - cpu0,
			Pulled: ds.BytesOut, Pushed: dd.BytesIn, Counted: true}
		r.Blobs = fmt.Sprintf("%d (%d)", dd.BlobsCommitted, dd.Mounted)
		r.Requests = fmt.Sprintf("%d / %d", ds.Requests, dd.Requests)
		if dstR == nil {
			r.Blobs, r.Requests = "–", fmt.Sprintf("%d / –", ds.Requests)
		}
		if srcR == nil {
			r.Requests = fmt.Sprintf("– / %d", dd.Requests)
		}
		r.Note = breakdown(ds, dd, srcR != nil, dstR != nil) + fmt.Sprintf("; the bench's counting proxies %.2f s CPU", proxies.Seconds())
		cr := copyRun{row: r, wall: m.Wall, blobs: dd.BlobsCommitted, upload: dd.UploadBytesIn, dstReq: dd.Requests, ok: m.Exit == 0, cpu: m.CPU() + (cpu1 - cpu0) + proxies}
		if m.Exit != 0 {
			cr.row.Note = fmt.Sprintf("FAILED (exit %d): %s", m.Exit, lastLine(m.Stderr))
			return cr, fmt.Errorf("%s: exit %d: %s", name, m.Exit, lastLine(m.Stderr))
		}
		switch {
		case dd.UploadBytesIn > unique/10:
			r.Throughput = Rate(dd.UploadBytesIn, m.Wall)
		case ds.BlobBytesOut > unique/10:
			r.Throughput = Rate(ds.BlobBytesOut, m.Wall)
		}
		cr.row = r
		return cr, nil
	}

	rows := []Row{heading(fmt.Sprintf("copy: %s workload: %d tags (%d two-arch indexes) in %d repositories, %d unique blobs, %s; mode %s",
		presetName(cfg), st.Tags, st.Indexes, st.Repos, st.Blobs, Bytes(unique), cfg.CopyMode))}
	shards := func(single, singleDisk time.Duration) ([]Row, error) {
		in := shardInput{airlock: cfg.Airlock, registry: cfg.Registry, work: work, iscPath: iscPath, input: input, src: src, unique: unique, tune: tune, single: single}
		rows, err := runShards(ctx, in)
		if err != nil {
			return rows, err
		}
		dr, err := runDiskShards(ctx, in, singleDisk)
		return append(rows, dr...), err
	}
	if cfg.ShardsOnly {
		sr, err := shards(0, 0)
		return append(rows, sr...), err
	}
	var errs []error
	add := func(cr copyRun, err error) copyRun {
		if err != nil {
			errs = append(errs, err)
		}
		if cr.row.Name != "" {
			rows = append(rows, cr.row)
		}
		return cr
	}
	sentRatio := func(cr copyRun) string {
		s := fmt.Sprintf("sent / unique %.2f", float64(cr.upload)/float64(unique))
		if cr.row.Note != "" {
			s += "; " + cr.row.Note
		}
		return s
	}
	a := cfg.Airlock

	// 1. Mirror to mirror, then the no-op re-run.
	var m2m, noop copyRun
	if cfg.AirgapOnly {
		// only the air-gap rows below
	} else if dst, err := start("dst-m2m"); err != nil {
		errs = append(errs, err)
	} else {
		args := append([]string{"mirror", "-c", iscPath, "--workspace", location.File(filepath.Join(work, "ws")).String(),
			location.Docker(dst.Addr() + "/mirror").String(), "--dest-tls-verify=false", "--src-tls-verify=false"}, tune...)
		m2m = add(measure("airlock mirror m2m, first run", Command{Name: a, Args: args}, src, dst))
		if m2m.ok {
			m2m.row.Note = sentRatio(m2m)
			m2m.row.Target = "bytes sent / unique = 1.00"
			m2m.row.Met = met(fmt.Sprintf("%.2f", float64(m2m.upload)/float64(unique)) == "1.00")
			rows[len(rows)-1] = m2m.row
		}
		noop = add(measure("airlock mirror m2m, no-op re-run", Command{Name: a, Args: args}, src, dst))
		if noop.ok {
			noop.row.Note = sentRatio(noop)
			noop.row.Target = "< 1 s, 0 blobs sent"
			noop.row.Met = met(noop.wall < time.Second && noop.blobs == 0 && noop.upload == 0)
			rows[len(rows)-1] = noop.row
		}
		stop(dst)
	}

	// 2. skopeo sync of the same tags.
	var sko copyRun
	if cfg.AirgapOnly {
		// only the air-gap rows below
	} else if skopeo, note := findSkopeo(ctx, cfg); skopeo == "" {
		rows = append(rows, Row{Name: "skopeo sync --all", Input: input, Note: "skipped: " + note})
	} else if dst, err := start("dst-skopeo"); err != nil {
		errs = append(errs, err)
	} else {
		var y strings.Builder
		fmt.Fprintf(&y, "%s:\n  tls-verify: false\n  images:\n", src.Addr())
		byRepo := map[string][]string{}
		var repos []string
		for _, t := range w.Tags {
			if _, ok := byRepo[t.Repo]; !ok {
				repos = append(repos, t.Repo)
			}
			byRepo[t.Repo] = append(byRepo[t.Repo], t.Tag)
		}
		for _, r := range repos {
			fmt.Fprintf(&y, "    %s:\n", r)
			for _, t := range byRepo[r] {
				fmt.Fprintf(&y, "    - %q\n", t)
			}
		}
		yp := filepath.Join(work, "skopeo-sync.yaml")
		if err := os.WriteFile(yp, []byte(y.String()), 0o644); err != nil {
			return rows, err
		}
		// Not --scoped: it puts the source host, port included, into the
		// destination path, which makes an invalid reference; without it skopeo
		// keeps each repository's last path component, unique in the workload.
		args := []string{"sync", "--all", "--src", "yaml", "--dest", "docker", "--dest-tls-verify=false", yp, dst.Addr() + "/mirror"}
		sko = add(measure("skopeo sync --all --src yaml --dest docker", Command{Name: skopeo, Args: args}, src, dst))
		if sko.ok {
			sko.row.Note = sentRatio(sko) + "; " + skopeoVersion(skopeo) + "; one process, images one after another"
			rows[len(rows)-1] = sko.row
		}
		stop(dst)
	}

	// 3. The floors, each into a fresh registry: the ingestion floor pushes
	// every unique blob and manifest once, in parallel (the content is
	// generated, not pulled); the copy floor does the same with each blob read
	// from the source (through its counting proxy, as airlock reads it), which
	// is the least a mirror-to-mirror copy costs on this machine; the verifying
	// copy floor also hashes every blob it streams (airlock verifies every byte).
	fl := &floors{ctx: ctx, cfg: cfg, w: w, o: o, src: src, start: start, stop: stop, input: input, sentRatio: sentRatio}
	if catRef != "" {
		fl.catalog = src.Addr()
	}
	floorRun := func(name, from string, verify bool) copyRun {
		return add(fl.run(name, workload.PushOptions{From: from, Verify: verify}))
	}
	var floor, copyFloor, verifyFloor copyRun
	if !cfg.AirgapOnly {
		floor = floorRun("ingestion floor (minimal client: each blob and manifest pushed once, parallel)", "", false)
		copyFloor = floorRun("copy floor (the same, each blob read from the source: GET streamed into the upload, unverified)", src.Addr(), false)
		verifyFloor = floorRun("verifying copy floor (the copy floor hashing each blob as it streams: SHA-256 checked at its end)", src.Addr(), true)

	}
	// 4. cp -r of the source registry's storage (page cache warm).
	if cfg.AirgapOnly {
		// only the air-gap rows below
	} else if m, err := Exec(ctx, Command{Name: "cp", Args: []string{"-r", src.Root, filepath.Join(work, "cp-copy")}}); err != nil || m.Exit != 0 {
		errs = append(errs, fmt.Errorf("cp -r: %v %s", err, lastLine(m.Stderr)))
	} else {
		_, n, _ := dirSize(src.Root)
		rows = append(rows, Row{Name: "cp -r of the source registry storage", Input: input, Wall: m.Wall, RSS: m.MaxRSS, CPU: m.CPU(),
			Throughput: Rate(n, m.Wall), Note: "storage " + Bytes(n) + ", page cache warm"})
		_ = os.RemoveAll(filepath.Join(work, "cp-copy"))
	}

	// 5. Mirror to disk, then disk to mirror, each after its floor: the
	// blobs read from the source, hashed and written into one file, synced;
	// then pushed from that file, hashed (the registry's CPU apart).
	blobFile := filepath.Join(work, "disk-floor.blobs")
	diskFloor := add(fl.run("mirror-to-disk floor (each blob read from the source, hashed, written into one file at its place; synced)", workload.PushOptions{From: src.Addr(), ToFile: blobFile}))
	var d2mFloor, d2m copyRun
	if diskFloor.ok {
		d2mFloor = add(fl.run("disk-to-mirror floor (each blob read from that file, hashed, pushed once; manifests from memory)", workload.PushOptions{FromFile: blobFile, Verify: true}))
		_ = os.Remove(blobFile)
	}
	arch := filepath.Join(work, "m2d")
	m2d := add(measure("airlock mirror m2d (to an archive)", Command{Name: a, Args: append([]string{"mirror", "-c", iscPath, location.File(arch).String(), "--src-tls-verify=false"}, tune...)}, src, nil))
	if m2d.ok {
		n, b, _ := archiveSize(filepath.Join(arch, "batch-0001"))
		m2d.row.Pushed = b
		m2d.row.Throughput = Rate(b, m2d.wall)
		m2d.row.Note = strings.TrimSuffix(fmt.Sprintf("pushed = %d archive files written; written / unique %.2f; %s", n, float64(b)/float64(unique), m2d.row.Note), "; ")
		rows[len(rows)-1] = m2d.row
		if dst, err := start("dst-d2m"); err != nil {
			errs = append(errs, err)
		} else {
			args := append([]string{"mirror", "-c", iscPath, "--from", location.File(filepath.Join(arch, "batch-0001")).String(),
				"--workspace", location.File(filepath.Join(work, "d2m-workspace")).String(), location.Docker(dst.Addr() + "/mirror").String(), "--dest-tls-verify=false"}, tune...)
			d2m = add(measure("airlock mirror d2m (from the archive)", Command{Name: a, Args: args}, nil, dst))
			if d2m.ok {
				d2m.row.Pulled = -1
				d2m.row.Note = sentRatio(d2m)
				rows[len(rows)-1] = d2m.row
			}
			stop(dst)
		}
	}

	// 6. Sharded mirror-to-mirror.
	if cfg.Shards && !cfg.AirgapOnly {
		single, singleDisk := time.Duration(0), time.Duration(0)
		if m2m.ok {
			single = m2m.wall
		}
		if m2d.ok {
			singleDisk = m2d.wall
		}
		sr, err := shards(single, singleDisk)
		rows = append(rows, sr...)
		if err != nil {
			errs = append(errs, fmt.Errorf("shards: %w", err))
		}
	}

	// 7. Ratios and targets.
	rows = append(rows, heading("copy: ratios (reference figures: skopeo sync 18 s, crane copy 22 s sending 2.7×, oc-mirror v2 24 s sending 4.1×, floor 11 s, cp -r 2.5 s)"))
	if m2m.ok && floor.ok {
		ratio := float64(m2m.wall) / float64(floor.wall)
		// On a machine of n cores a CPU-bound run cannot finish in less than its
		// CPU / n: say what both runs cost the machine, the harness included.
		n := runtime.NumCPU()
		note := fmt.Sprintf("CPU of everything the run cost this %d-core machine (client, registries, the bench's proxies): m2m %.2f s, floor %.2f s (%.2f×); m2m cannot take less than %.2f s here",
			n, m2m.cpu.Seconds(), floor.cpu.Seconds(), m2m.cpu.Seconds()/floor.cpu.Seconds(), m2m.cpu.Seconds()/float64(n))
		rows = append(rows, Row{Name: "airlock m2m / ingestion floor (wall)", Input: input, WallText: fmt.Sprintf("%.2f×", ratio), Target: "≤ 1.20×", Met: met(ratio <= 1.2), Note: note})
	}
	if m2m.ok && copyFloor.ok {
		ratio := float64(m2m.wall) / float64(copyFloor.wall)
		rows = append(rows, Row{Name: "airlock m2m / copy floor (wall)", Input: input, WallText: fmt.Sprintf("%.2f×", ratio),
			Note: fmt.Sprintf("CPU: m2m %.2f s, copy floor %.2f s (%.2f×); airlock also reads the manifests (the floor sends them from memory) and verifies every byte", m2m.cpu.Seconds(), copyFloor.cpu.Seconds(), m2m.cpu.Seconds()/copyFloor.cpu.Seconds())})
	}
	if m2d.ok && diskFloor.ok {
		rows = append(rows, diskRatio("airlock m2d / mirror-to-disk floor (wall)", input, m2d, diskFloor))
	}
	if d2m.ok && d2mFloor.ok {
		rows = append(rows, diskRatio("airlock d2m / disk-to-mirror floor (wall)", input, d2m, d2mFloor))
	}
	if m2m.ok && sko.ok {
		ratio := float64(sko.wall) / float64(m2m.wall)
		rows = append(rows, Row{Name: "skopeo sync / airlock m2m (wall: speed-up)", Input: input, WallText: fmt.Sprintf("%.2f×", ratio), Target: "≥ 1.50×", Met: met(ratio >= 1.5)})
	}
	for _, cr := range []copyRun{m2m, sko, floor} {
		if cr.ok && cr.row.Name != "" {
			rows = append(rows, Row{Name: "bytes sent / unique: " + strings.SplitN(cr.row.Name, " (", 2)[0], Input: input,
				WallText: fmt.Sprintf("%.2f", float64(cr.upload)/float64(unique)), Target: "1.00"})
		}
	}
	rows = append(rows, loopbackRows(input, unique, st.Blobs, m2m, copyFloor, verifyFloor)...)
	return rows, errors.Join(errs...)
}

func presetName(cfg Config) string {
	for _, n := range []string{"reference", "quick", "tiny"} {
		if o, _ := workload.Preset(n); o == cfg.Workload {
			return n
		}
	}
	return "custom"
}

// archiveSize sums the archive chunks (airlock_*.tar) under dir; when there
// are none it sums every file.
func archiveSize(dir string) (files int, bytes int64, err error) {
	chunks, _ := filepath.Glob(filepath.Join(dir, "*.tar"))
	if len(chunks) == 0 {
		return dirSize(dir)
	}
	for _, c := range chunks {
		fi, err := os.Stat(c)
		if err != nil {
			return 0, 0, err
		}
		files++
		bytes += fi.Size()
	}
	return files, bytes, nil
}

// findSkopeo returns the skopeo binary, installing it with apt-get when asked;
// else "" and why.
func findSkopeo(ctx context.Context, cfg Config) (string, string) {
	if !cfg.Skopeo {
		return "", "turned off (-skopeo=false)"
	}
	if p, err := exec.LookPath("skopeo"); err == nil {
		return p, ""
	}
	if !cfg.InstallSkopeo {
		return "", "skopeo is not installed (apt-get install -y skopeo)"
	}
	cfg.Log.Info("installing skopeo with apt-get")
	out, err := exec.CommandContext(ctx, "apt-get", "install", "-y", "skopeo").CombinedOutput()
	if err != nil {
		return "", fmt.Sprintf("apt-get install -y skopeo failed: %v: %s", err, lastLine(string(out)))
	}
	if p, err := exec.LookPath("skopeo"); err == nil {
		return p, ""
	}
	return "", "skopeo not found after apt-get install"
}

func skopeoVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "skopeo"
	}
	return strings.TrimSpace(string(out))
}

// breakdown lists the requests by kind: what the source served, what the
// destination received.
func breakdown(src, dst Counts, hasSrc, hasDst bool) string {
	var parts []string
	if hasSrc {
		parts = append(parts, fmt.Sprintf("src: %d manifest GET, %d HEAD; %d blob GET, %d HEAD",
			src.ManifestGET, src.ManifestHEAD, src.BlobGET, src.BlobHEAD))
	}
	if hasDst {
		parts = append(parts, fmt.Sprintf("dst: %d blob HEAD, %d upload POST, %d PATCH, %d PUT; %d manifest HEAD, %d GET, %d PUT (%d by digest)",
			dst.BlobHEAD, dst.UploadPOST, dst.UploadPATCH, dst.UploadPUT, dst.ManifestHEAD, dst.ManifestGET, dst.ManifestPUT, dst.ManifestPUTByDigest))
	}
	return strings.Join(parts, "; ")
}
