package signature

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

// The genuine Red Hat signature of 4.15.0 (testdata/ocmirror/SOURCES.md).
const (
	ocp4150Digest = digest.Digest("sha256:0da6316466d60a3a4535d5fed3589feb0391989982fba59d47d4c729912d6363")
	ocp4152Digest = digest.Digest("sha256:8e5ebf5d648eeab2d440036ce0f94ab73743aed85f9f5a4725a6aefad8f842e9")
	ocpRelease    = "quay.io/openshift-release-dev/ocp-release"
)

func genuine(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/ocmirror/signature-1")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerifyGenuineRedHatSignature(t *testing.T) {
	sig := genuine(t)
	v, err := Verify([][]byte{sig}, ocp4150Digest, ocpRelease, DefaultKeys())
	if err != nil {
		t.Fatalf("Red Hat's signature of 4.15.0 is refused: %v", err)
	}
	if v.Index != 1 || v.Payload.Reference != ocpRelease+":4.15.0-x86_64" || v.Signer != "567E347AD0044ADE55BA8A5F199E2F91FD431D51" {
		t.Errorf("verified = %+v", v)
	}
	if v.Payload.Creator != "Red Hat OpenShift Signing Authority 0.0.1" {
		t.Errorf("creator = %q", v.Payload.Creator)
	}

	tampered := append([]byte(nil), sig...)
	tampered[len(tampered)/2] ^= 0x01
	other := signtest.NewReleaseKey(t, "rsa")
	otherKeys, err := ParseKeys(other.Armored)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sigs   [][]byte
		digest digest.Digest
		repo   string
		keys   Keyring
		want   string
	}{
		// The measured oc-mirror case: 4.15.0's signature served at another
		// release's location.
		{"another digest", [][]byte{sig}, ocp4152Digest, ocpRelease, DefaultKeys(), "not the payload's digest " + ocp4152Digest.String()},
		{"another repository", [][]byte{sig}, ocp4150Digest, "quay.io/openshift-release-dev/ocp-v4.0-art-dev", DefaultKeys(), "not the payload's repository quay.io/openshift-release-dev/ocp-v4.0-art-dev"},
		{"another registry", [][]byte{sig}, ocp4150Digest, "mirror.example.com/openshift-release-dev/ocp-release", DefaultKeys(), "not the payload's repository"},
		{"truncated", [][]byte{sig[:len(sig)-40]}, ocp4150Digest, ocpRelease, DefaultKeys(), "signature-1:"},
		{"cut in half", [][]byte{sig[:len(sig)/2]}, ocp4150Digest, ocpRelease, DefaultKeys(), "signature-1:"},
		{"one bit flipped", [][]byte{tampered}, ocp4150Digest, ocpRelease, DefaultKeys(), "signature-1:"},
		{"another key", [][]byte{sig}, ocp4150Digest, ocpRelease, otherKeys, "signed by key 199E2F91FD431D51, which is not among the given keys"},
		{"no key", [][]byte{sig}, ocp4150Digest, ocpRelease, Keyring{}, "no verification key is configured"},
		{"no signature", nil, ocp4150Digest, ocpRelease, DefaultKeys(), "no signature was found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(tc.sigs, tc.digest, tc.repo, tc.keys)
			var ref *Refusal
			if !errors.As(err, &ref) {
				t.Fatalf("Verify = %v, want a *Refusal", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestVerifyThrowawayKeys(t *testing.T) {
	d1 := digest.FromString("4.15.1 payload")
	d2 := digest.FromString("4.15.2 payload")
	const repo = "quay.io/openshift-release-dev/ocp-release"
	for _, algo := range []string{"rsa", "ed25519"} {
		k := signtest.NewReleaseKey(t, algo)
		keys, err := ParseKeys(k.Armored)
		if err != nil {
			t.Fatalf("%s: %v", algo, err)
		}
		good := k.SignRelease(t, repo+":4.15.2-x86_64", d2)
		for _, tc := range []struct {
			name      string
			sigs      [][]byte
			d         digest.Digest
			repo      string
			wantIndex int
			want      string // for a refusal
		}{
			{"valid", [][]byte{good}, d2, repo, 1, ""},
			{"payload named with a tag", [][]byte{good}, d2, repo + ":4.15.2-x86_64", 1, ""},
			{"identity by digest", [][]byte{k.SignRelease(t, repo+"@"+d2.String(), d2)}, d2, repo, 1, ""},
			{"4.15.1's signature at 4.15.2's location", [][]byte{k.SignRelease(t, repo+":4.15.1-x86_64", d1)}, d2, repo, 0, "it signs " + d1.String()},
			{"a bad one then a good one", [][]byte{k.SignRelease(t, repo+":x", d1), good}, d2, repo, 2, ""},
			{"every reason kept", [][]byte{k.SignRelease(t, repo+":x", d1), k.SignRelease(t, "quay.io/evil/ocp-release:4.15.2", d2), []byte("junk")}, d2, repo, 0,
				"signature-1: it signs " + d1.String() + ", not the payload's digest " + d2.String() + "; signature-2: it signs repository quay.io/evil/ocp-release"},
			{"wrong type", [][]byte{k.SignMessage(t, []byte(strings.Replace(string(signtest.SimpleSigning(repo, d2)), "atomic container signature", "cosign container image signature", 1)))}, d2, repo, 0, "critical.type"},
			{"unknown critical field", [][]byte{k.SignMessage(t, []byte(`{"critical":{"type":"atomic container signature","image":{"docker-manifest-digest":"`+d2.String()+`"},"identity":{"docker-reference":"`+repo+`"},"extra":1}}`))}, d2, repo, 0, `unexpected field "extra"`},
			{"not JSON", [][]byte{k.SignMessage(t, []byte("4.15.2 is fine"))}, d2, repo, 0, "not a JSON object"},
		} {
			t.Run(algo+"/"+tc.name, func(t *testing.T) {
				v, err := Verify(tc.sigs, tc.d, tc.repo, keys)
				if tc.want != "" {
					if err == nil || !strings.Contains(err.Error(), tc.want) {
						t.Fatalf("Verify = %v, want a refusal saying %q", err, tc.want)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if v.Index != tc.wantIndex || v.Digest != tc.d || len(v.Signatures) != 1 {
					t.Errorf("verified = index %d digest %s, %d signatures", v.Index, v.Digest, len(v.Signatures))
				}
			})
		}
		// The default keys do not know the throwaway key.
		if _, err := Verify([][]byte{good}, d2, repo, DefaultKeys()); err == nil || !strings.Contains(err.Error(), "not among Red Hat's release keys") {
			t.Errorf("%s: the built-in keys accept a throwaway key's signature: %v", algo, err)
		}
	}
}

func TestVerifyKeepsEveryValidSignature(t *testing.T) {
	d := digest.FromString("payload")
	a, b := signtest.NewReleaseKey(t, "rsa"), signtest.NewReleaseKey(t, "ed25519")
	keys, err := ParseKeys(append(append([]byte(nil), a.Armored...), b.Armored...))
	if err != nil {
		t.Fatal(err)
	}
	sigs := [][]byte{a.SignRelease(t, "example.com/r:1", d), []byte("junk"), b.SignRelease(t, "example.com/r:1", d)}
	v, err := Verify(sigs, d, "example.com/r", keys)
	if err != nil {
		t.Fatal(err)
	}
	if v.Index != 1 || len(v.Signatures) != 2 || string(v.Signatures[1]) != string(sigs[2]) {
		t.Errorf("verified index %d, %d signatures kept", v.Index, len(v.Signatures))
	}
}

// BenchmarkVerifyGenuine: one Red Hat signature (RSA 4096) checked against
// the built-in keys.
func BenchmarkVerifyGenuine(b *testing.B) {
	sig, err := os.ReadFile("testdata/ocmirror/signature-1")
	if err != nil {
		b.Fatal(err)
	}
	keys := DefaultKeys()
	for b.Loop() {
		if _, err := Verify([][]byte{sig}, ocp4150Digest, ocpRelease, keys); err != nil {
			b.Fatal(err)
		}
	}
}
