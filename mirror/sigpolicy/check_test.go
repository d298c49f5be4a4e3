//go:build containers_image_openpgp

package sigpolicy_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/mirror/sigpolicy"
)

// source is a registry on 127.0.0.1 with images signed in every way a policy
// can ask for, and some that are not.
type source struct {
	host                                                   string
	key, otherKey                                          signtest.Key
	gpg                                                    signtest.GPGKey
	lookaside                                              string
	signed, index, unsigned, tampered, gpgSigned, otherSig imagetest.Pushed
}

func newSource(t *testing.T) *source {
	t.Helper()
	reg := registrytest.Start(t)
	s := &source{host: reg.Host(), key: signtest.NewKey(t), otherKey: signtest.NewKey(t), gpg: signtest.NewGPGKey(t), lookaside: t.TempDir()}
	h := s.host
	s.signed = imagetest.MustPush(t, h+"/apps/signed:1.0", fakeimage.Spec{Seed: 21, Layers: 1})
	s.index = imagetest.MustPush(t, h+"/apps/multi:1.0", fakeimage.Spec{Seed: 22, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	s.unsigned = imagetest.MustPush(t, h+"/apps/unsigned:1.0", fakeimage.Spec{Seed: 23, Layers: 1})
	s.tampered = imagetest.MustPush(t, h+"/apps/tampered:1.0", fakeimage.Spec{Seed: 24, Layers: 1})
	s.gpgSigned = imagetest.MustPush(t, h+"/apps/gpg:1.0", fakeimage.Spec{Seed: 25, Layers: 1})
	s.otherSig = imagetest.MustPush(t, h+"/apps/other:1.0", fakeimage.Spec{Seed: 26, Layers: 1})
	signtest.Sign(t, s.key, h+"/apps/signed", s.signed.Digest)
	for _, d := range s.index.Manifests {
		signtest.Sign(t, s.key, h+"/apps/multi", d)
	}
	// The tampered image carries the signed image's signature.
	signtest.CopyManifest(t, h+"/apps/signed:sha256-"+s.signed.Digest.Encoded()+".sig", h+"/apps/tampered:sha256-"+s.tampered.Digest.Encoded()+".sig")
	signtest.Sign(t, s.otherKey, h+"/apps/other", s.otherSig.Digest)
	signtest.SignGPG(t, s.gpg, s.lookaside, h+"/apps/gpg", s.gpgSigned.Digest)
	return s
}

func writeJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// policy is a containers-policy.json: default for everything, scopes for
// the docker transport.
func policy(t *testing.T, def []any, scopes map[string]any) string {
	doc := map[string]any{"default": def}
	if scopes != nil {
		doc["transports"] = map[string]any{"docker": scopes}
	}
	return writeJSON(t, doc)
}

func sigstoreKey(path string) map[string]any {
	return map[string]any{"type": "sigstoreSigned", "keyPath": path, "signedIdentity": map[string]any{"type": "matchRepository"}}
}

var reject = []any{map[string]any{"type": "reject"}}

func TestCheck(t *testing.T) {
	s := newSource(t)
	pem, err := os.ReadFile(s.key.Public)
	if err != nil {
		t.Fatal(err)
	}
	regD := t.TempDir()
	if err := os.WriteFile(filepath.Join(regD, "lookaside.yaml"), []byte("default-docker:\n  lookaside: file://"+s.lookaside+"\n  use-sigstore-attachments: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noAttachments := t.TempDir()           // a registries.d that does not say use-sigstore-attachments
	type want map[*imagetest.Pushed]string // "" accepted, else a part of the reason
	cases := []struct {
		name    string
		policy  string
		regD    string
		want    want
		keyFrom string // the ClusterKey policy file's key, "" none
	}{
		{"sigstore keyPath", policy(t, reject, map[string]any{s.host: []any{sigstoreKey(s.key.Public)}}), "", want{
			&s.signed: "", &s.index: "", &s.unsigned: "A signature was required, but no signature exists",
			&s.tampered: "does not match", &s.otherSig: "cryptographic signature verification failed", &s.gpgSigned: "no signature exists",
		}, s.key.Public},
		{"sigstore keyData, repository scope", policy(t, reject, map[string]any{
			s.host + "/apps/signed":   []any{map[string]any{"type": "sigstoreSigned", "keyData": base64.StdEncoding.EncodeToString(pem), "signedIdentity": map[string]any{"type": "matchRepository"}}},
			s.host + "/apps/unsigned": []any{map[string]any{"type": "insecureAcceptAnything"}},
		}), "", want{&s.signed: "", &s.unsigned: "", &s.index: "is rejected by policy", &s.tampered: "is rejected by policy"}, s.key.Public},
		{"reject", policy(t, reject, nil), "", want{&s.signed: "is rejected by policy", &s.unsigned: "is rejected by policy"}, ""},
		{"insecureAcceptAnything", policy(t, []any{map[string]any{"type": "insecureAcceptAnything"}}, nil), "", want{&s.signed: "", &s.unsigned: "", &s.tampered: ""}, ""},
		{"signedBy GPG in a lookaside", policy(t, reject, map[string]any{s.host: []any{map[string]any{"type": "signedBy", "keyType": "GPGKeys", "keyPath": s.gpg.Public}}}), regD, want{
			&s.gpgSigned: "", &s.signed: "no signature exists", &s.unsigned: "no signature exists",
		}, ""},
		{"two keys, either accepted", policy(t, reject, map[string]any{s.host: []any{map[string]any{"type": "sigstoreSigned", "keyPaths": []string{s.key.Public, s.otherKey.Public}, "signedIdentity": map[string]any{"type": "matchRepository"}}}}), "", want{
			&s.signed: "", &s.otherSig: "", &s.unsigned: "no signature exists",
		}, ""},
		{"attachments off in --registries.d", policy(t, reject, map[string]any{s.host: []any{sigstoreKey(s.key.Public)}}), noAttachments, want{
			&s.signed: "use-sigstore-attachments: true",
		}, s.key.Public},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk, err := sigpolicy.Open(sigpolicy.Options{Policy: c.policy, RegistriesDir: c.regD}, sigpolicy.Source{DefaultRegistriesDir: filepath.Join(t.TempDir(), "registries.d")})
			if err != nil {
				t.Fatal(err)
			}
			for im, w := range c.want {
				repo, _, _ := strings.Cut(im.Ref, ":1.0")
				err := chk.Verifier()(context.Background(), repo, im.Digest)
				switch {
				case w == "" && err != nil:
					t.Errorf("%s refused: %v", im.Ref, err)
				case w != "" && err == nil:
					t.Errorf("%s accepted, want refused (%s)", im.Ref, w)
				case w != "" && !strings.Contains(err.Error(), w):
					t.Errorf("%s refused with %q, want a reason with %q", im.Ref, err, w)
				case w != "" && (!strings.Contains(err.Error(), repo+"@"+im.Digest.String()) || !strings.Contains(err.Error(), c.policy)):
					t.Errorf("%s: the reason %q names neither the image nor the policy file", im.Ref, err)
				}
			}
			key, from := chk.ClusterKey()
			switch {
			case c.keyFrom == "" && key != nil:
				t.Errorf("ClusterKey %q from %s, want none", key, from)
			case c.keyFrom != "":
				want, _ := os.ReadFile(c.keyFrom)
				if string(key) != string(want) || !strings.Contains(from, c.policy) {
					t.Errorf("ClusterKey %q from %q, want %s's key from the policy", key, from, c.keyFrom)
				}
			}
		})
	}
}

// TestCheckThroughMirror: the policy reads an image where airlock reads it,
// through registries.conf: the source is down, its mirror holds the image and
// its signature, and the image is judged (accepted) from the mirror.
func TestCheckThroughMirror(t *testing.T) {
	s := newSource(t)
	down := registrytest.ClosedAddr(t)
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte("[[registry]]\nprefix = \""+down+"\"\nlocation = \""+down+"\"\n[[registry.mirror]]\nlocation = \""+s.host+"\"\ninsecure = true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The test's signature names the mirror's repository (where signtest
	// pushed it): the policy asks for exactly that identity.
	p := policy(t, reject, map[string]any{down: []any{map[string]any{"type": "sigstoreSigned", "keyPath": s.key.Public,
		"signedIdentity": map[string]any{"type": "exactRepository", "dockerRepository": s.host + "/apps/signed"}}}})
	for _, rc := range []struct {
		conf   string
		accept bool
	}{{conf, true}, {"", false}} {
		chk, err := sigpolicy.Open(sigpolicy.Options{Policy: p}, sigpolicy.Source{DefaultRegistriesDir: filepath.Join(t.TempDir(), "registries.d"), RegistriesConf: rc.conf})
		if err != nil {
			t.Fatal(err)
		}
		err = chk.Verifier()(context.Background(), down+"/apps/signed", s.signed.Digest)
		if (err == nil) != rc.accept {
			t.Errorf("registries.conf %q: %v, want accepted %v", rc.conf, err, rc.accept)
		}
	}
}
