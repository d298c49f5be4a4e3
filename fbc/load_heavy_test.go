package fbc

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// refBundleObject is opm's check of an olm.bundle.object value, written the
// plain way: encoding/json into {data []byte}, then apimachinery's yaml.ToJSON.
func refBundleObject(raw []byte) error {
	var o bundleObjectValue
	if err := json.Unmarshal(raw, &o); err != nil {
		return &BundleObjectError{err: err}
	}
	if !isJSONBuffer(o.Data) {
		if _, err := yaml.YAMLToJSON(o.Data); err != nil {
			return &BundleObjectError{convert: true, err: err}
		}
	}
	return nil
}

func errText(err error) string {
	var boe *BundleObjectError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &boe):
		return boe.Message(0)
	default:
		return "other: " + err.Error()
	}
}

// FuzzBundleObjectCheck checks the fast path of heavyChecker.bundleObject
// against the plain encoding/json decoding, message included.
func FuzzBundleObjectCheck(f *testing.F) {
	for _, s := range []string{
		`{"data":"e30="}`, `{"data":"a2luZDogW3VuY2xvc2Vk"}`, `{"data":"%%%not base64"}`,
		`{"data":null}`, `{}`, `null`, `{"data":5}`, `"e30="`, `{"DATA":"e30=","data":"%"}`,
		`{"data":"e3\n0\r\n="}`, `{"data":"e3\\/0="}`, `{"data":"\u00e9"}`, `{"data":"YTogYgo=","x":[1,{"y":"z"}]}`,
		`{"data":"CQl7fQ=="}`, `{"data":"wqB7fQ=="}`, `{"data":"YTpbMSwy"}`, `{"data":"\xff\xfe"}`,
	} {
		f.Add([]byte(s))
	}
	// Values longer than the prefix the fast path decodes.
	for _, d := range []string{
		strings.Repeat(" ", 47) + "{x", strings.Repeat(" ", 48) + "{x", strings.Repeat("\t", 46) + "\u00a0{", strings.Repeat(" ", 47) + "\u00a0{",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + strings.Repeat("x", 80) + "\n", "a: [" + strings.Repeat("1,", 50),
	} {
		raw, _ := json.Marshal(map[string][]byte{"data": []byte(d)})
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var hc heavyChecker
		got := errText(hc.check(PropertyBundleObject, raw, true))
		again := errText(hc.check(PropertyBundleObject, raw, true)) // buffer reuse
		slow := errText(hc.check(PropertyBundleObject, raw, false))
		want := errText(refBundleObject(raw))
		if got != want || again != want || slow != want {
			t.Fatalf("value %q:\nfast  %s\nagain %s\nslow  %s\nwant  %s", raw, got, again, slow, want)
		}
	})
}

// TestHeavyCheckerScratch checks that a huge value does not stay in the
// checker's scratch buffer.
func TestHeavyCheckerScratch(t *testing.T) {
	data := make([]byte, scan.MaxKeptScratch+1024)
	for i := range data {
		data[i] = ' '
	}
	data[len(data)-2] = '{'
	data[len(data)-1] = '}'
	raw, _ := json.Marshal(map[string][]byte{"data": data})
	var hc heavyChecker
	if err := hc.check(PropertyBundleObject, raw, true); err != nil {
		t.Fatal(err)
	}
	if hc.buf != nil {
		t.Fatalf("scratch buffer of %d bytes kept", cap(hc.buf))
	}
	if err := hc.check(PropertyBundleObject, []byte(`{"data":"YTogYgo="}`), true); err != nil || cap(hc.buf) == 0 {
		t.Fatalf("small value: err %v, buffer %d", err, cap(hc.buf))
	}
}

// FuzzB64Plain checks b64Plain against the standard library: for data without
// line breaks (which the standard library skips) it must say exactly whether
// base64.StdEncoding decodes it.
func FuzzB64Plain(f *testing.F) {
	for _, s := range []string{"", "e30=", "e30", "YQ==", "YQ=a", "Y===", "====", "ab+/", "ab-_", "AAAAAAAAAAAA", "AAAAAAAAAAA=", "AAAAAAA\xffAAAA", "QUJD:EFG"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		if bytes.ContainsAny(s, "\r\n") {
			return
		}
		_, err := base64.StdEncoding.DecodeString(string(s))
		if got := b64Plain(s); got != (err == nil) {
			t.Fatalf("b64Plain(%q) = %v, standard library: %v", s, got, err)
		}
	})
}
