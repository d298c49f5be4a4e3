package legacy

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// refBundleObjects is bundleObjects as it was written first: each manifest's
// end found by valueEnd, then checked with encoding/json.
func refBundleObjects(s string) (objs []string, csv string, err error) {
	if s == "" {
		return nil, "", nil
	}
	b := []byte(s)
	for i := skipSpace(b, 0); i < len(b); i = skipSpace(b, i) {
		if b[i] != '{' {
			return nil, "", fmt.Errorf("manifest %d is not a Kubernetes object (a JSON object)", len(objs)+1)
		}
		end := valueEnd(b, i)
		m := b[i:end]
		if !json.Valid(m) {
			var v any
			err := json.Unmarshal(m, &v)
			return nil, "", fmt.Errorf("manifest %d: %v", len(objs)+1, err)
		}
		objs = append(objs, s[i:end])
		i = end
		if csv != "" {
			continue
		}
		if kind, ok := member(m, "kind"); ok && string(kind) == `"ClusterServiceVersion"` {
			csv = s[i-len(m) : i]
		}
	}
	if csv == "" && len(objs) > 0 {
		return nil, "", fmt.Errorf("no ClusterServiceVersion among its %d manifests", len(objs))
	}
	return objs, csv, nil
}

// FuzzBundleObjects: splitting operatorbundle.bundle with prune's fast JSON
// scanner finds the same manifests, CSV and errors as encoding/json.
func FuzzBundleObjects(f *testing.F) {
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	for _, s := range []string{
		``, `{"kind":"ClusterServiceVersion"}`, `{"kind":"ClusterServiceVersion"}{"kind":"CustomResourceDefinition","spec":{"a":[1,2.5e3,-0,true,null]}}`,
		` {"kind":"ConfigMap"} {"kind":"ClusterServiceVersion","x":"\u00e9\n"}`, `{"kind":"ClusterServiceVersion"`, `{"kind":"ClusterServiceVersion","a":01}`,
		`{"kind":"ClusterServiceVersion","a":"` + "\x01" + `"}`, `{"kind":"ClusterServiceVersion"}]`, `[]`, `{"a":` + deep + `,"kind":"ClusterServiceVersion"}`,
		`{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `,"kind":"ClusterServiceVersion"}`,
		`{"kind":"ClusterServiceVersion","a":"\x"}`, `{"kind":"ClusterServiceVersion","a":"\ud800"}`, "{\"kind\":\"ClusterServiceVersion\",\"a\":\"\xff\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		objs, csv, err := bundleObjects(s)
		wobjs, wcsv, werr := refBundleObjects(s)
		if fmt.Sprint(err) != fmt.Sprint(werr) || csv != wcsv || !reflect.DeepEqual(objs, wobjs) {
			t.Fatalf("bundle %.200q:\ngot  %d objects, CSV %.40q, error %v\nwant %d objects, CSV %.40q, error %v", s, len(objs), csv, err, len(wobjs), wcsv, werr)
		}
	})
}

// FuzzValidJSONValue: scan.ValidJSONValue never accepts what encoding/json
// refuses, and ends where the value ends.
func FuzzValidJSONValue(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,"b",{"c":null}]} `, `[1,]`, `"\u00zz"`, `-01`, `1e`, `{"a":1}}`, "\"\x1f\"", strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, ok := scan.ValidJSONValue(b, 0)
		if ok && !json.Valid(b[:end]) {
			t.Fatalf("%.200q: accepted up to %d, which encoding/json refuses", b, end)
		}
		if ok && end < len(b) && json.Valid(b) {
			// A whole valid value cannot have a shorter valid prefix value
			// unless that prefix is followed by space only.
			if strings.TrimSpace(string(b[end:])) != "" {
				t.Fatalf("%.200q: ended at %d, inside the value", b, end)
			}
		}
		if !ok && json.Valid(b) && !strings.Contains(string(b), strings.Repeat("[", 9000)) && !strings.Contains(string(b), strings.Repeat("{", 9000)) {
			// Only values nested near the depth limit may be refused.
			if _, ok := scan.ValidJSONValue([]byte(strings.TrimLeft(string(b), " \t\r\n")), 0); !ok {
				t.Fatalf("%.200q: refused, but encoding/json accepts it", b)
			}
		}
	})
}
