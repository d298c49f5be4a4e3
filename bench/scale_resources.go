package bench

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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
