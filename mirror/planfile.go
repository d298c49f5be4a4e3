package mirror

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// The plan file --plan-only writes, as --plan, airlock kube job and a shard's
// pod read it back.

// LoadPlan reads a plan written by --plan-only: plain JSON or gzip-compressed,
// in path or, when there is no such file, split in parts path.000, path.001…
// (how airlock kube job carries a plan over the ConfigMap size limit).
func LoadPlan(path string) (*Plan, error) {
	b, err := readPlanFile(path)
	if err != nil {
		return nil, err
	}
	var p Plan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("plan %s is not a plan airlock wrote: %w", path, err)
	}
	switch p.Workflow {
	case MirrorToMirror, MirrorToDisk:
	default:
		return nil, fmt.Errorf("plan %s: workflow %q cannot be sharded (make the plan with airlock mirror --plan-only, mirror-to-mirror or mirror-to-disk)", path, p.Workflow)
	}
	return &p, nil
}

// maxPlanSize bounds a decompressed plan (a plan of a million images is about
// 1 GiB).
const maxPlanSize = 4 << 30

// readPlanFile reads path, or its parts path.000, path.001… put together, and
// decompresses it when it is gzip.
func readPlanFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		var parts []byte
		for i := 0; ; i++ {
			p, perr := os.ReadFile(fmt.Sprintf("%s.%03d", path, i))
			if errors.Is(perr, fs.ErrNotExist) && i > 0 {
				break
			}
			if perr != nil {
				return nil, fmt.Errorf("read the plan: %w", err)
			}
			parts = append(parts, p...)
		}
		b, err = parts, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the plan: %w", err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("plan %s: %w", path, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, maxPlanSize+1))
	if err != nil {
		return nil, fmt.Errorf("plan %s is damaged (gzip: %v): make it again, or copy it again", path, err)
	}
	if len(out) > maxPlanSize {
		return nil, fmt.Errorf("plan %s decompresses to more than %d bytes: not a plan airlock wrote", path, maxPlanSize)
	}
	return out, nil
}

// PartitionFile reads a plan and partitions it into n shards (airlock kube job
// uses it to size the Job and show the spread).
func PartitionFile(path string, n int) (*Plan, *Partition, error) {
	p, err := LoadPlan(path)
	if err != nil {
		return nil, nil, err
	}
	part, err := PartitionPlan(p, n)
	if err != nil {
		return nil, nil, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, part, nil
}
