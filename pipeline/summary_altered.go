package pipeline

import (
	"fmt"
	"io"

	"github.com/airlock-mirror/airlock/internal/humanize"
)

// maxAlteredLines bounds the altered manifests the summary names (results.json
// and the report list them all).
const maxAlteredLines = 10

// gcAdvice names the registry's garbage collection, which removes manifest
// revisions nothing tags once the registry refuses to delete them.
const gcAdvice = "the registry's garbage collection removes them (Distribution: registry garbage-collect --delete-untagged CONFIG; Quay and Harbor: their scheduled garbage collection)"

// resumedNote is what the summary adds to the bytes of its blobs line when
// part of them was resumed from an interrupted run ("" when nothing was).
func (r *Result) resumedNote() string {
	if r.BytesResumed <= 0 {
		return ""
	}
	return fmt.Sprintf("; %s of it resumed from where an interrupted run stopped, not fetched again", humanize.Bytes(r.BytesResumed))
}

// writeAltered writes the manifest revisions the destination stored altered
// and refused to delete: each by repository and digest, with what removes
// them.
func (r *Result) writeAltered(w io.Writer) {
	if len(r.AlteredManifests) == 0 {
		return
	}
	fmt.Fprintf(w, "  altered:   %s stored altered on the way stay readable by digest: the destination refuses deletes (their tags were pushed again and are right); %s:\n",
		plural(len(r.AlteredManifests), "manifest revision", "manifest revisions"), gcAdvice)
	for i, a := range r.AlteredManifests {
		if i == maxAlteredLines {
			fmt.Fprintf(w, "    … and %d more (results.json: alteredManifests)\n", len(r.AlteredManifests)-maxAlteredLines)
			break
		}
		fmt.Fprintf(w, "    %s@%s\n", a.Repository, a.Digest)
	}
}
