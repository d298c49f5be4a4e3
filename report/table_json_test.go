package report

import (
	"encoding/json"
	"testing"
)

// rowAsAny is a row as the script reads it, built for encoding/json: the
// reference appendJSON must match byte for byte.
func rowAsAny(r tableRow) []any {
	v := make([]any, 0, len(r.Cells)+1)
	for _, c := range r.Cells {
		v = append(v, c)
	}
	if r.Bad != 0 || r.Link != "" || r.Suffix != "" {
		meta := map[string]any{}
		if r.Bad != 0 {
			meta["b"] = r.Bad
		}
		if r.Link != "" {
			meta["h"] = r.Link
		}
		if r.Suffix != "" {
			meta["s"] = r.Suffix
		}
		v = append(v, meta)
	}
	return v
}

// checkRows fails unless Data of rows is what json.Marshal writes for them
// in the script's form.
func checkRows(t *testing.T, rows []tableRow) {
	t.Helper()
	var ref any
	if rows != nil {
		v := make([][]any, len(rows))
		for i, r := range rows {
			v[i] = rowAsAny(r)
		}
		ref = v
	}
	want, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&longTable{Rows: rows}).Data()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("rows %+v:\ngot  %s\nwant %s", rows, got, want)
	}
	for _, r := range rows {
		b, err := json.Marshal(r) // MarshalJSON through the encoder
		if err != nil {
			t.Fatal(err)
		}
		w, _ := json.Marshal(rowAsAny(r))
		if string(b) != string(w) {
			t.Errorf("row %q: MarshalJSON %s, want %s", r.Cells, b, w)
		}
	}
}

func TestTableDataMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		rows []tableRow
	}{
		{"nil", nil},
		{"empty", []tableRow{}},
		{"no cells", []tableRow{{}}},
		{"only meta", []tableRow{{Bad: 3}}},
		{"plain", []tableRow{{Cells: []string{"quay.io/a/b@sha256:0123", "operator", "12.3 kB", ""}}}},
		{"meta", []tableRow{{Cells: []string{"a", "b"}, Bad: 1 << 31, Link: "#c-0", Suffix: "(default)"}, {Cells: []string{"x"}, Suffix: "s"}}},
		{"escapes", []tableRow{{Cells: []string{`"q"`, `back\\slash`, "<script>&</script>", "tab\there\nnl\r\b\f\x01\x1f", "\x7f"}, Link: "<a>"}}},
		{"unicode", []tableRow{{Cells: []string{"héllo", "\u2028\u2029", "\xff\xfe bad utf-8", "日本語", "\U0001F600"}, Suffix: "\u2028"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRows(t, tt.rows) })
	}
}

func FuzzTableRowJSON(f *testing.F) {
	f.Add("quay.io/a/b:v1", "<&>", uint32(0), "", "")
	f.Add("\xff\u2028\"\\", "\x00", uint32(5), "#x", "muted")
	f.Fuzz(func(t *testing.T, a, b string, bad uint32, link, suffix string) {
		checkRows(t, []tableRow{{Cells: []string{a, b}, Bad: bad, Link: link, Suffix: suffix}, {Cells: []string{b}}})
	})
}
