package signature

import (
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

const validDoc = `{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"sha256:0da6316466d60a3a4535d5fed3589feb0391989982fba59d47d4c729912d6363"},"identity":{"docker-reference":"quay.io/openshift-release-dev/ocp-release:4.15.0-x86_64"}},"optional":{"creator":"Red Hat OpenShift Signing Authority 0.0.1","timestamp":1700000000,"anything":[1]}}`

func TestParsePayload(t *testing.T) {
	p, err := ParsePayload([]byte(validDoc))
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != ocp4150Digest || p.Reference != ocpRelease+":4.15.0-x86_64" || p.Timestamp.Unix() != 1700000000 || p.Creator == "" {
		t.Errorf("payload = %+v", p)
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", ``, "missing"},
		{"array", `[]`, "not a JSON object"},
		{"trailing", validDoc + `{}`, "data after"},
		{"no critical", `{"optional":{}}`, "no critical"},
		{"unknown top field", `{"critical":{},"extra":1}`, `unexpected field "extra"`},
		{"case-folded field", strings.Replace(validDoc, `"type"`, `"Type"`, 1), `unexpected field "Type"`},
		{"duplicate type", strings.Replace(validDoc, `"type":"atomic container signature"`, `"type":"atomic container signature","type":"x"`, 1), "twice"},
		{"wrong type", strings.Replace(validDoc, "atomic container signature", "x", 1), "critical.type"},
		{"type not a string", strings.Replace(validDoc, `"atomic container signature"`, `1`, 1), "critical"},
		{"bad digest", strings.Replace(validDoc, "sha256:0da6", "sha256:zz", 1), "docker-manifest-digest"},
		{"no identity", `{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"` + ocp4150Digest.String() + `"}}}`, "critical.identity"},
		{"extra identity field", strings.Replace(validDoc, `"identity":{`, `"identity":{"x":1,`, 1), "critical.identity"},
		{"creator not a string", strings.Replace(validDoc, `"creator":"Red Hat OpenShift Signing Authority 0.0.1"`, `"creator":1`, 1), "optional.creator"},
		{"timestamp not an integer", strings.Replace(validDoc, `1700000000`, `"yesterday"`, 1), "optional.timestamp"},
	} {
		if _, err := ParsePayload([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParsePayload = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzParsePayload: the document parser never panics, and what it accepts
// names a valid digest.
func FuzzParsePayload(f *testing.F) {
	f.Add([]byte(validDoc))
	f.Add([]byte(`{"critical":{}}`))
	f.Add([]byte(`{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"sha256:` + strings.Repeat("a", 64) + `"},"identity":{"docker-reference":""}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePayload(b)
		if err == nil && p.Digest.Validate() != nil {
			t.Fatalf("accepted an invalid digest %q", p.Digest)
		}
	})
}

// FuzzVerify: any bytes offered as a signature are refused with a reason or
// verified; a verified one signs exactly the payload. Seeds: a throwaway key's
// valid signature, Red Hat's genuine one, cut and altered copies.
func FuzzVerify(f *testing.F) {
	k := signtest.NewReleaseKey(f, "rsa")
	keys, err := ParseKeys(k.Armored)
	if err != nil {
		f.Fatal(err)
	}
	d := digest.FromString("payload")
	good := k.SignRelease(f, "example.com/r:1", d)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add([]byte("-----BEGIN PGP MESSAGE-----\n\n-----END PGP MESSAGE-----\n"))
	f.Fuzz(func(t *testing.T, sig []byte) {
		v, err := Verify([][]byte{sig}, d, "example.com/r", keys)
		if err != nil {
			if _, ok := err.(*Refusal); !ok {
				t.Fatalf("not a *Refusal: %T %v", err, err)
			}
			return
		}
		if v.Payload.Digest != d {
			t.Fatalf("verified a signature of %s for %s", v.Payload.Digest, d)
		}
	})
}
