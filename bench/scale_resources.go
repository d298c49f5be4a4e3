package bench

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// largestObject is the largest cluster resource (ImageDigestMirrorSet,
// ImageTagMirrorSet, CatalogSource, ...: the YAML files of dir, not its
// README) and its size.
func largestObject(dir string) (string, int64) {
	var name string
	var n int64
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json")) {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() > n {
			name, n = filepath.Base(p), fi.Size()
		}
		return nil
	})
	return name, n
}

// mirrorSets sums up the mirror sets of a cluster-resources folder, one
// object per file: the ImageDigestMirrorSet (idms-*.yaml) and
// ImageTagMirrorSet (itms-*.yaml) objects, their mirror rules (the items of
// their one list) and bytes.
type mirrorSets struct {
	IDMS, ITMS           int   // objects
	IDMSRules, ITMSRules int   // rules
	Bytes                int64 // of every object
	Largest              int64 // the largest object's bytes
}

func countMirrorSets(dir string) mirrorSets {
	var s mirrorSets
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		idms, itms := strings.HasPrefix(name, "idms-"), strings.HasPrefix(name, "itms-")
		if e.IsDir() || !strings.HasSuffix(name, ".yaml") || !(idms || itms) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		rules := bytes.Count(b, []byte("\n  - "))
		if idms {
			s.IDMS, s.IDMSRules = s.IDMS+1, s.IDMSRules+rules
		} else {
			s.ITMS, s.ITMSRules = s.ITMS+1, s.ITMSRules+rules
		}
		s.Bytes += int64(len(b))
		s.Largest = max(s.Largest, int64(len(b)))
	}
	return s
}

// noopFloor measures the floor of the no-op re-run at the destination dst
// that holds the scale workload under /mirror: a minimal client (workload.
// HeadManifests, as many at a time as airlock's images) asks for every catalog image's manifest once,
// as a re-run that checks each image must at least; the row gives its wall
// scaled to every image of the run, and the destination's CPU.
func noopFloor(ctx context.Context, seed *seeded, host string, dst *Registry, images int, input string) Row {
	row := Row{Name: "scale: no-op floor (one manifest HEAD per image, minimal client)", Input: input}
	w, err := workload.New(seed.Options)
	if err == nil {
		_, err = w.AddCatalogs(host)
	}
	if err != nil {
		row.Note = "not measured: " + err.Error()
		return row
	}
	w.Tags = w.Tags[:len(w.Tags)-len(w.Catalogs)] // the catalogs are mirrored rebuilt, under other digests
	c0, t0 := dst.CPU(), time.Now()
	st, err := w.HeadManifests(ctx, workload.PushOptions{Registry: dst.Addr(), Parallel: transfer.DefaultParallelImages}, "mirror")
	wall, reg := time.Since(t0), dst.CPU()-c0
	if err != nil {
		row.Note = "not measured: " + err.Error()
		return row
	}
	k := float64(images) / float64(st.Requests)
	row.Wall, row.RegCPU = time.Duration(float64(wall)*k), time.Duration(float64(reg)*k)
	row.Requests = fmt.Sprintf("– / %d", st.Requests)
	row.Note = fmt.Sprintf("%d HEADs, %d at a time, in %s (destination CPU %s), scaled to the %d images: what checking every image costs the destination at least", st.Requests, transfer.DefaultParallelImages, Seconds(wall), Seconds(reg), images)
	return row
}
