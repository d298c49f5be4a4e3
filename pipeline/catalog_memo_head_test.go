package pipeline

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// decodeMemoHead reads the head of a memo as writeMemo writes it, and of a
// memo whose fields come in another order, as json.Unmarshal does.
func TestDecodeMemoHead(t *testing.T) {
	head := memoHead{Version: memoVersion, Key: "k", Images: []string{"a@sha256:1", "b"}, Packages: []string{"p"},
		Warnings: []string{"w"}, Rebuilt: &memoRebuilt{LayoutDir: "/l", Tag: "t"}}
	written, err := json.Marshal(catalogMemo{head, memoTail{
		Wants:  map[string][]workspace.Want{"a@sha256:1": {{Kind: "bundle", Catalog: "c"}}},
		Report: &report.Catalog{Source: "c"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Index(string(written), `"wants"`); w < strings.Index(string(written), `"rebuilt"`) {
		t.Fatalf("the tail is not written last: %s", written)
	}
	noRebuilt := head
	noRebuilt.Rebuilt, noRebuilt.Warnings = nil, nil
	late := head
	late.Rebuilt = nil
	for _, tc := range []struct {
		name    string
		memo    string
		want    memoHead
		tailErr bool
	}{
		{"as written", string(written), head, false},
		{"tail first", `{"wants":{},"version":1,"key":"k","images":["a@sha256:1","b"],"packages":["p"]}`, noRebuilt, false},
		// A head field after the tail is not read with the head: the
		// tail's decoding fails the memo.
		{"rebuilt after the tail", `{"version":1,"key":"k","images":["a@sha256:1","b"],"packages":["p"],"warnings":["w"],"report":{}, "rebuilt":{"layoutDir":"/l","tag":"t"}}`, late, true},
		{"no tail", `{"version":1,"key":"k","images":["a@sha256:1","b"],"packages":["p"]}`, noRebuilt, false},
		{"another field", `{"version":1,"other":2,"key":"k","images":["a@sha256:1","b"],"packages":["p"],"wants":{}}`, noRebuilt, false},
		{"tail not JSON", `{"version":1,"key":"k","images":["a@sha256:1","b"],"packages":["p"] , "wants":{"x":5}}`, noRebuilt, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, rest, err := decodeMemoHead([]byte(tc.memo))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("head %+v, want %+v", *got, tc.want)
			}
			tail, err := decodeMemoTail([]byte(tc.memo), rest)
			if (err != nil) != tc.tailErr {
				t.Fatalf("tail %+v, %v; want an error: %v", tail, err, tc.tailErr)
			}
			if tc.name == "as written" && (len(tail.Wants) != 1 || tail.Report == nil || tail.Report.Source != "c") {
				t.Errorf("tail %+v", tail)
			}
		})
	}
	if _, _, err := decodeMemoHead([]byte(`{"version":1,"images":[`)); err == nil {
		t.Error("a memo cut short: no error")
	}
}

// FuzzDecodeMemoHead: any bytes are read without a panic, and a memo as
// writeMemo writes it gives back its head.
func FuzzDecodeMemoHead(f *testing.F) {
	f.Add([]byte(`{"version":1,"key":"k","images":["a"],"packages":[],"wants":{}}`), "img", "warning")
	f.Add([]byte(`{"report":null}`), "", "\u2028\"")
	f.Fuzz(func(t *testing.T, doc []byte, s1, s2 string) {
		if m, rest, err := decodeMemoHead(doc); err == nil && m == nil {
			t.Fatal("no head and no error")
		} else if err == nil {
			_, _ = decodeMemoTail(doc, rest)
		}
		head := memoHead{Version: memoVersion, Key: s1, Images: []string{s1, s2}, Packages: []string{s2}, Warnings: []string{s1}}
		b, err := json.Marshal(catalogMemo{head, memoTail{Wants: map[string][]workspace.Want{s1: {{Kind: s2}}}}})
		if err != nil {
			t.Fatal(err)
		}
		// What json.Unmarshal reads of it (invalid UTF-8 is written as
		// U+FFFD).
		var want catalogMemo
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		got, rest, err := decodeMemoHead(b)
		if err != nil || !reflect.DeepEqual(*got, want.memoHead) {
			t.Fatalf("memo %s: head %+v, %v", b, got, err)
		}
		tail, err := decodeMemoTail(b, rest)
		if err != nil || !reflect.DeepEqual(*tail, want.memoTail) {
			t.Fatalf("memo %s: tail %+v, %v", b, tail, err)
		}
	})
}
