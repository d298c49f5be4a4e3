package archive

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExtrasTravel: the files content sources carry arrive with the archive,
// sorted, and are part of its identity; bad ones are refused by name.
func TestExtrasTravel(t *testing.T) {
	ctx := context.Background()
	write := func(extras []ExtraRecord) (*Manifest, error) {
		imgs := testSet(1)
		w, err := NewWriter(t.TempDir(), WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			push(t, ctx, w, img)
		}
		meta := metaFor(imgs)
		meta.Extras = extras
		m, err := w.Finish(ctx, meta)
		if err == nil {
			r, err := Open(w.dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			return r.ArchiveManifest(), nil
		}
		return m, err
	}
	plain, err := write(nil)
	if err != nil {
		t.Fatal(err)
	}
	graph := []byte(`{"nodes":[]}`)
	m, err := write([]ExtraRecord{{Source: "releases", Name: "graph.json", Data: graph}, {Source: "charts", Name: "index.yaml", Data: []byte("entries: {}\n")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Extras) != 2 || m.Extras[0].Source != "charts" || m.Extras[1].Name != "graph.json" || !bytes.Equal(m.Extras[1].Data, graph) {
		t.Errorf("extras read back: %+v", m.Extras)
	}
	if m.ArchiveID == plain.ArchiveID {
		t.Error("the extras are not part of the archive ID")
	}
	for _, tc := range []struct {
		extras []ExtraRecord
		want   string
	}{
		{[]ExtraRecord{{Source: "releases", Data: graph}}, "a source and a name are needed"},
		{[]ExtraRecord{{Source: "r", Name: "g"}, {Source: "r", Name: "g"}}, "given twice"},
		{[]ExtraRecord{{Source: "r", Name: "g", Data: make([]byte, maxExtraBytes+1)}}, "exceed"},
	} {
		if _, err := write(tc.extras); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d extras: error %v, want %q", len(tc.extras), err, tc.want)
		}
	}
}
