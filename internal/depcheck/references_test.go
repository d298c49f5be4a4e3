package depcheck

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// internalRef matches a reference to the project's own work items: numbered
// issues and pull requests, numbered rounds and sessions of work, goals set
// by an unnamed issue; a reader of the repository cannot follow them, so docs and
// comments say what a thing is instead.
var internalRef = regexp.MustCompile(`(?i)\b(?:issues?|pr|pull requests?)\s*#?\s*\d+|\bissue-\d+|\(issue\)|\bthe issue\b|\bissue['’]s\b|\b(?:round|session)s? \d+\b`)

// upstreams are projects whose public issue and pull request numbers a doc or
// comment may cite, written as "oc-mirror's issue #1037" or "opm PR #1231"
// (a link to it, .../issues/N, is always fine).
var upstreams = []string{
	"oc-mirror", "opm", "operator-registry", "operator-framework", "olm",
	"go-containerregistry", "ggcr", "distribution", "docker", "containers/image",
	"skopeo", "regclient", "crane", "cosign", "sigstore", "hauler", "zarf", "go", "golang", "kubernetes",
}

// upstreamBefore matches the project name that qualifies a reference: the
// word just before it, possibly possessive ("oc-mirror's").
var upstreamBefore = regexp.MustCompile(`([A-Za-z0-9_./-]+?)(?:'s|’s)?\s+$`)

// internalRefs returns the internal references in line, those an upstream
// project's name qualifies left out.
func internalRefs(line string) []string {
	var out []string
	for _, m := range internalRef.FindAllStringIndex(line, -1) {
		if w := upstreamBefore.FindStringSubmatch(line[:m[0]]); w != nil && slices.Contains(upstreams, strings.ToLower(w[1])) {
			continue
		}
		out = append(out, line[m[0]:m[1]])
	}
	return out
}

// referenceFiles lists the files whose text speaks to users and maintainers:
// every Markdown file and every Go file (comments, strings, messages) of the
// repository and its nested modules, and the scripts; vendored code and test
// data excluded.
func referenceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	walkFiles(t, root, func(p, rel string) {
		if ext := filepath.Ext(p); ext == ".md" || ext == ".go" || strings.HasPrefix(rel, "scripts/") || rel == "Makefile" {
			files = append(files, p)
		}
	})
	return files
}

// TestNoInternalReferences keeps docs and comments readable by someone who
// has only the repository: no numbered work item of the project's own, which
// points outside it (TestNoInternalReferencesCatches shows what is refused).
// Upstream projects' issues ("oc-mirror's issue #1037") are public and fine.
func TestNoInternalReferences(t *testing.T) {
	root := moduleRoot(t)
	files := referenceFiles(t, root)
	if len(files) < 100 || !slices.Contains(files, filepath.Join(root, "README.md")) {
		t.Fatalf("found only %d files (README.md among them: %v): the walk is broken", len(files), slices.Contains(files, filepath.Join(root, "README.md")))
	}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for n := 1; sc.Scan(); n++ {
			for _, ref := range internalRefs(sc.Text()) {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: %q refers to an internal work item: say what the thing is (an upstream issue names its project)", rel, n, ref)
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		f.Close()
	}
}

// TestNoInternalReferencesCatches feeds the checker lines it must refuse and
// lines it must let through, so that a pattern that matches nothing fails here.
// The bad lines are assembled so that this file does not hold them itself.
func TestNoInternalReferencesCatches(t *testing.T) {
	is := "iss" + "ue"
	bad := []string{
		"the signature handling of " + is + " 29",
		"// second PUT (" + is + " 31: destination requests per blob).",
		"## YAML catalogs (" + is + " 18, 2026-11-23)",
		"Since " + strings.ToUpper(is[:1]) + is[1:] + " 31's request work",
		"see " + is + "s 28-31",
		"fixed in " + is + " #12",
		"measured in " + "PR" + " 7",
		"(" + is + ")",
		"the " + is + "'s reference workload",
		"runs the\n" + is + "'s measure",
		"[figures](benchmarks.md#sharded-mirror-" + is + "-15-2026-11-24)",
		"as asked in " + "round" + " 3",
		"full run (" + "session" + " 5)",
		"airlock's " + is + " 4", // airlock is not an upstream project
	}
	for _, line := range bad {
		if got := internalRefs(line); len(got) == 0 {
			t.Errorf("%q: no internal reference found", line)
		}
	}
	good := []string{
		"oc-mirror's " + is + " #1037 describes the same failure",
		"opm PR #1231's range mode",
		"see https://github.com/openshift/oc-mirror/" + is + "s/1037",
		"go-containerregistry's " + is + " 1234",
		"a round trip per request; 3 rounds of 429s",
		"the session is reused",
		"known " + is + "s with registries",
	}
	for _, line := range good {
		if got := internalRefs(line); len(got) != 0 {
			t.Errorf("%q: reported %q", line, fmt.Sprint(got))
		}
	}
}
