package imageset

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// TestOCMirrorConfigs loads every ImageSetConfiguration of oc-mirror's own
// repository (testdata/oc-mirror, see SOURCES.md there). Each one loads
// unchanged, or gets an error that names the file and line, the field, and what
// airlock does instead; the outcome of every file is in a golden file, so a
// change of behaviour is reviewed.
func TestOCMirrorConfigs(t *testing.T) {
	root := filepath.Join("testdata", "oc-mirror")
	located := regexp.MustCompile(`^testdata/oc-mirror/\S+\.ya?ml:[0-9]+(:[0-9]+)?: \S+`)
	var out bytes.Buffer
	loaded, refused := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		if bytes.Contains(data, []byte("kind: DeleteImageSetConfiguration")) {
			_, err = LoadDeleteFile(p)
		} else {
			_, err = LoadFile(p)
		}
		if err == nil {
			loaded++
			fmt.Fprintf(&out, "%s: loads\n", rel)
			return nil
		}
		refused++
		for _, line := range strings.Split(err.Error(), "\n") {
			if !located.MatchString(line) {
				t.Errorf("%s: error line %q does not start with file:line: field", rel, line)
			}
			// "problem; what to do (what airlock does instead)".
			if _, fix, ok := strings.Cut(line, "; "); !ok || len(fix) < len("remove it") {
				t.Errorf("%s: error line %q says nothing of what to do", rel, line)
			}
			fmt.Fprintf(&out, "%s: %s\n", rel, strings.TrimPrefix(line, "testdata/oc-mirror/"+rel+":"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if loaded+refused < 100 {
		t.Fatalf("only %d configurations found under %s", loaded+refused, root)
	}
	fmt.Fprintf(&out, "# %d configurations: %d load unchanged, %d refused with the line and what airlock does instead\n", loaded+refused, loaded, refused)
	golden.Check(t, filepath.Join("testdata", "ocmirror-configs.golden"), out.Bytes())
}
