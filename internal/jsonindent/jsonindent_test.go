package jsonindent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type record struct {
	Name    string            `json:"name"`
	Count   int               `json:"count"`
	Ratio   float64           `json:"ratio,omitempty"`
	Tags    []string          `json:"tags"`
	Labels  map[string]string `json:"labels"`
	Nested  *record           `json:"nested,omitempty"`
	Empty   struct{}          `json:"empty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Flag    bool              `json:"flag"`
	Nothing any               `json:"nothing"`
}

func TestMarshalMatchesMarshalIndent(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"number", 12.5e30},
		{"string with escapes", "a \"quoted\" \\ back\\\\slash\" <html> & \u2028 \x01 \t"},
		{"empty array", []int{}},
		{"empty object", map[string]int{}},
		{"nested empties", [][]any{{}, {map[string]any{}}, nil}},
		{"record", record{Name: `x":{[,]}`, Count: -3, Ratio: 0.25, Tags: []string{"a", "", `\`}, Labels: map[string]string{"k:": "v,", "": "}"},
			Nested: &record{Name: "inner", Tags: nil}, Raw: json.RawMessage(` { "a" : [ 1 , 2 ] } `), Flag: true}},
		{"deep", []any{[]any{[]any{[]any{map[string]any{"a": []any{1, "two", nil, true}}}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, indent := range []string{"  ", " ", "\t"} {
				want, err := json.MarshalIndent(tt.v, "", indent)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Marshal(tt.v, indent)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("indent %q:\ngot  %s\nwant %s", indent, got, want)
				}
			}
		})
	}
}

// chunks is a writer that keeps every Write apart.
type chunks struct {
	writes [][]byte
	fail   error
}

func (c *chunks) Write(p []byte) (int, error) {
	if c.fail != nil && len(c.writes) > 0 {
		return 0, c.fail
	}
	c.writes = append(c.writes, bytes.Clone(p))
	return len(p), nil
}

// Encode writes json.MarshalIndent's bytes and a newline, in pieces of
// about flushAt bytes, and stops at the first write that fails.
func TestEncode(t *testing.T) {
	recs := make([]record, 3000)
	for i := range recs {
		recs[i] = record{Name: strings.Repeat(`n"\`, i%40), Count: i, Tags: []string{"a", strings.Repeat("b", i%300)}, Labels: map[string]string{"k": "v"}}
	}
	for _, v := range []any{nil, "one", recs} {
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var c chunks
		if err := Encode(&c, v, "  "); err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(c.writes, nil); !bytes.Equal(got, append(want, '\n')) {
			t.Fatalf("Encode wrote %d bytes unlike MarshalIndent's %d", len(got), len(want)+1)
		}
		for i, w := range c.writes {
			if len(w) > 2*flushAt {
				t.Errorf("write %d of %d: %d bytes, want pieces of about %d", i, len(c.writes), len(w), flushAt)
			}
		}
		if len(want) > 3*flushAt && len(c.writes) < len(want)/(2*flushAt) {
			t.Errorf("%d bytes in %d writes", len(want), len(c.writes))
		}
	}
	full := errors.New("disk full")
	if err := Encode(&chunks{fail: full}, recs, "  "); !errors.Is(err, full) {
		t.Errorf("Encode into a failing writer: %v, want %v", err, full)
	}
	if err := Encode(&chunks{}, make(chan int), "  "); err == nil {
		t.Error("Encode of a channel: no error")
	}
}

func TestMarshalError(t *testing.T) {
	if _, err := Marshal(make(chan int), "  "); err == nil {
		t.Error("a channel marshalled without an error")
	}
}

// Indenting allocates nothing beyond the buffer it is given room in: a
// regression to a per-value cost shows here.
func TestAppendAllocations(t *testing.T) {
	recs := make([]record, 500)
	for i := range recs {
		recs[i] = record{Name: strings.Repeat("n", i%30), Count: i, Tags: []string{"a", "b"}, Labels: map[string]string{"k": "v"}}
	}
	src, err := json.Marshal(recs)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, 4*len(src))
	allocs := testing.AllocsPerRun(20, func() { dst = Append(dst[:0], src, "  ") })
	if allocs != 0 {
		t.Errorf("%.0f allocations indenting %d bytes into a large enough buffer, want 0", allocs, len(src))
	}
}

// FuzzAppend compares Append with json.Indent on the compact form of any
// valid JSON document.
func FuzzAppend(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c\"d"}],"e":{},"f":[]}`), "  ")
	f.Add([]byte(`"\\\\\""`), "\t")
	f.Add([]byte(`[[],[{}],{"x":null}]`), " ")
	f.Fuzz(func(t *testing.T, doc []byte, indent string) {
		if !json.Valid(doc) {
			return
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, doc); err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", indent); err != nil {
			t.Fatal(err)
		}
		if got := Append(nil, compact.Bytes(), indent); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("compact %s, indent %q:\ngot  %q\nwant %q", compact.Bytes(), indent, got, want.Bytes())
		}
	})
}

// FuzzEncode compares Encode with json.MarshalIndent on any JSON document
// decoded into Go values.
func FuzzEncode(f *testing.F) {
	f.Add([]byte(`{"a":[1,2,{"b":"c\"d"}],"e":{},"f":[]}`))
	f.Add([]byte(`["<&>", 1e300, null, true, "\u2028"]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return
		}
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := Encode(&got, v, "  "); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), append(want, '\n')) {
			t.Errorf("doc %s:\ngot  %q\nwant %q", doc, got.Bytes(), want)
		}
	})
}

func BenchmarkMarshal(b *testing.B) {
	recs := make([]record, 5000)
	for i := range recs {
		recs[i] = record{Name: strings.Repeat("n", i%30), Count: i, Tags: []string{"a", "b"}, Labels: map[string]string{"k": "v"}}
	}
	b.Run("jsonindent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Marshal(recs, "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalIndent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.MarshalIndent(recs, "", "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
}
