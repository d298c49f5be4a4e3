package registry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// writeConf writes a registries.conf into a fresh folder and returns its path.
func writeConf(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sourceClient is a source client reading through the registries.conf at path.
func sourceClient(t *testing.T, path string) *Client {
	t.Helper()
	conf, err := LoadRegistriesConf(path)
	if err != nil {
		t.Fatalf("LoadRegistriesConf: %v", err)
	}
	return New(Options{Sources: conf, Retry: retry.Retries(0)})
}

// Every source read goes where registries.conf says: mirrors in order before
// the location, digest-only mirrors for digests only, rewritten locations; a
// blocked entry fails the image naming the file and the entry. The image is
// always asked for by its source name, and what comes back is what was asked.
func TestRegistriesConfSources(t *testing.T) {
	holder := registrytest.Start(t) // the only registry holding the image, as mirror/ns/app
	empty := registrytest.Start(t)  // a mirror without it
	dead, dead2 := registrytest.ClosedAddr(t), registrytest.ClosedAddr(t)
	p := imagetest.MustPush(t, holder.Host()+"/mirror/ns/app:v1", fakeimage.Spec{Seed: 7, Layers: 2})
	up := registrytest.Start(t) // a live source holding the same image as ns/app
	imagetest.MustPush(t, up.Host()+"/ns/app:v1", fakeimage.Spec{Seed: 7, Layers: 2})
	// A mirror that alters every manifest it serves.
	flip := registrytest.NewFaultProxy(t, holder.Host(), registrytest.FaultPlan{
		Match: func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/manifests/") },
		Rate:  1, Kinds: []registrytest.Fault{registrytest.FlipByte},
	})
	mirror := func(host string) string { return "[[registry.mirror]]\nlocation = \"" + host + "/mirror\"\n" }
	cases := []struct {
		name, repo, conf string
		byTag, byDigest  string // "" = served; else a part of the error
		blocked          bool
	}{
		{name: "mirror serves, source down", repo: dead + "/ns/app",
			conf: "[[registry]]\nlocation = \"" + dead + "\"\n" + mirror(holder.Host())},
		{name: "mirrors in order, first down", repo: dead + "/ns/app",
			conf: "[[registry]]\nlocation = \"" + dead + "\"\n" + mirror(dead2) + mirror(holder.Host())},
		{name: "first mirror lacks the image", repo: dead + "/ns/app",
			conf: "[[registry]]\nlocation = \"" + dead + "\"\n" + mirror(empty.Host()) + mirror(holder.Host())},
		{name: "mirror-by-digest-only ignored for a tag", repo: dead + "/ns/app",
			conf:  "[[registry]]\nlocation = \"" + dead + "\"\nmirror-by-digest-only = true\n" + mirror(holder.Host()),
			byTag: "connection refused"},
		{name: "pull-from-mirror digest-only ignored for a tag", repo: dead + "/ns/app",
			conf:  "[[registry]]\nlocation = \"" + dead + "\"\n" + mirror(holder.Host()) + "pull-from-mirror = \"digest-only\"\n",
			byTag: "connection refused"},
		{name: "tag-only mirror for tags only", repo: "registry.invalid/ns/app",
			conf: "[[registry]]\nprefix = \"registry.invalid/ns\"\nlocation = \"" + holder.Host() + "/mirror/ns\"\n" +
				"[[registry.mirror]]\nlocation = \"" + empty.Host() + "/ns\"\npull-from-mirror = \"tag-only\"\n[[registry.mirror]]\nlocation = \"" + dead2 + "/ns\"\n"},
		{name: "prefix and location rewrite", repo: "registry.invalid/team/app",
			conf: "[[registry]]\nprefix = \"registry.invalid/team\"\nlocation = \"" + holder.Host() + "/mirror/ns\"\n"},
		{name: "blocked", repo: dead + "/ns/app", blocked: true,
			conf:  "[[registry]]\nprefix = \"" + dead + "/ns\"\nlocation = \"" + dead + "/ns\"\nblocked = true\n",
			byTag: "blocked = true", byDigest: "blocked = true"},
		{name: "mirror alters the manifest: the source serves", repo: up.Host() + "/ns/app",
			conf: "[[registry]]\nlocation = \"" + up.Host() + "\"\n" + mirror(flip.Host())},
		{name: "mirror alters the manifest, source down", repo: dead + "/ns/app",
			conf:  "[[registry]]\nlocation = \"" + dead + "\"\n" + mirror(flip.Host()),
			byTag: "the registry said", byDigest: "digest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeConf(t, tc.conf)
			c := sourceClient(t, path)
			ctx := context.Background()
			// The probe (a run's preflight) asks every place first; what it
			// learns must not change where reads go.
			if err := c.Probe(ctx, tc.repo, false); err != nil {
				t.Fatalf("probe: %v", err)
			}
			for _, ref := range []struct{ ref, want string }{{"v1", tc.byTag}, {p.Digest.String(), tc.byDigest}} {
				m, err := c.Manifest(ctx, tc.repo, ref.ref)
				if ref.want != "" {
					if err == nil || !strings.Contains(err.Error(), ref.want) {
						t.Fatalf("manifest %s: err = %v, want one containing %q", ref.ref, err, ref.want)
					}
					if tc.blocked && (!errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `prefix = "`+dead+`/ns"`)) {
						t.Fatalf("blocked: err = %v, want ErrBlocked naming %s and the entry", err, path)
					}
					if strings.Contains(tc.name, "alters") && ref.ref != "v1" && !strings.Contains(err.Error(), oci.ErrDigestMismatch.Error()) {
						t.Fatalf("err = %v, want a digest mismatch", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("manifest %s: %v", ref.ref, err)
				}
				if m.Digest != p.Digest {
					t.Fatalf("manifest %s: digest %s, want %s", ref.ref, m.Digest, p.Digest)
				}
			}
			if tc.byDigest != "" {
				return
			}
			rc, err := c.Blob(ctx, tc.repo, endpoint.Descriptor{Digest: p.Blobs[0]})
			if err != nil {
				t.Fatalf("blob: %v", err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err != nil || digest.FromBytes(b) != p.Blobs[0] {
				t.Fatalf("blob: %v, digest %s, want %s", err, digest.FromBytes(b), p.Blobs[0])
			}
		})
	}
}

// insecure = true reaches a TLS registry whose certificate nobody vouches for
// (and would allow plain HTTP to its host); without it the certificate is refused.
func TestRegistriesConfInsecure(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithTLS())
	p := imagetest.MustPush(t, reg.Host()+"/ns/app:v1", fakeimage.Spec{Seed: 3, Layers: 1}, remote.WithTransport(&http.Transport{TLSClientConfig: reg.TLSConfig()}))
	for _, tc := range []struct {
		name, conf, want string
	}{
		{"insecure", "[[registry]]\nlocation = \"" + reg.Host() + "\"\ninsecure = true\n", ""},
		{"mirror insecure", "[[registry]]\nlocation = \"registry.invalid\"\n[[registry.mirror]]\nlocation = \"" + reg.Host() + "\"\ninsecure = true\n", ""},
		{"secure", "[[registry]]\nlocation = \"" + reg.Host() + "\"\n", "certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sourceClient(t, writeConf(t, tc.conf))
			repo := reg.Host() + "/ns/app"
			if strings.HasPrefix(tc.name, "mirror") {
				repo = "registry.invalid/ns/app"
			}
			m, err := c.Manifest(context.Background(), repo, p.Digest.String())
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil || m.Digest != p.Digest {
				t.Fatalf("manifest: %v (%s)", err, m.Digest)
			}
			if !c.allowHTTP(reg.Host()) {
				t.Errorf("plain HTTP not allowed to an insecure host")
			}
		})
	}
}

// A registries.conf that cannot be read is named, with its line for a TOML
// error; $CONTAINERS_REGISTRIES_CONF is read when no file is given.
func TestLoadRegistriesConf(t *testing.T) {
	bad := writeConf(t, "[[registry]]\nlocation = \"quay.io\"\nblocked = yes\n")
	if _, err := LoadRegistriesConf(bad); !errors.Is(err, ErrRegistriesConf) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("TOML error: %v, want ErrRegistriesConf naming %s line 3", err, bad)
	}
	missing := filepath.Join(t.TempDir(), "nope.conf")
	if _, err := LoadRegistriesConf(missing); err == nil || !strings.Contains(err.Error(), "--registries-conf "+missing) {
		t.Errorf("missing file: %v", err)
	}
	wildcard := writeConf(t, "[[registry]]\nprefix = \"*.example.com/ns\"\n")
	if _, err := LoadRegistriesConf(wildcard); err == nil || !strings.Contains(err.Error(), wildcard) {
		t.Errorf("bad entry: %v, want the file named", err)
	}
	env := writeConf(t, "[[registry]]\nlocation = \"quay.io/blocked\"\nblocked = true\n")
	t.Setenv("CONTAINERS_REGISTRIES_CONF", env)
	c, err := LoadRegistriesConf("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.sources("quay.io/blocked/app", "v1"); !errors.Is(err, ErrBlocked) || !strings.Contains(err.Error(), env) {
		t.Errorf("$CONTAINERS_REGISTRIES_CONF not read: %v", err)
	}
	if s, err := c.sources("quay.io/other/app", "v1"); err != nil || len(s) != 1 || s[0].repo != "quay.io/other/app" {
		t.Errorf("an image no entry names: %v, %v", s, err)
	}
}

// Short names are refused with the fully-qualified name to write: the alias,
// the unqualified-search-registries, else docker.io's.
func TestQualified(t *testing.T) {
	plain := writeConf(t, "")
	alias := writeConf(t, "[aliases]\n\"ubi8/ubi\" = \"registry.access.redhat.com/ubi8/ubi\"\n")
	search := writeConf(t, "unqualified-search-registries = [\"registry.fedoraproject.org\", \"quay.io\"]\n")
	const dg = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		conf, name, want string // want "" = accepted
	}{
		{plain, "busybox", "docker.io/library/busybox;"},
		{plain, "busybox:1.36", "docker.io/library/busybox:1.36;"},
		{plain, "docker://ubi8/ubi@" + dg, "docker.io/ubi8/ubi@" + dg},
		{alias, "ubi8/ubi:8.9", "registry.access.redhat.com/ubi8/ubi:8.9 (the alias in " + alias + ")"},
		{search, "fedora:40", "registry.fedoraproject.org/fedora:40 or quay.io/fedora:40 (the unqualified-search-registries of " + search + ")"},
		{plain, "quay.io/ns/app:v1", ""},
		{plain, "docker.io/library/busybox", ""},
		{plain, "localhost/app:v1", ""},
		{plain, "127.0.0.1:5000/app:v1", ""},
		{plain, "oci:///x", ""},
	} {
		c, err := LoadRegistriesConf(tc.conf)
		if err != nil {
			t.Fatal(err)
		}
		err = c.Qualified(tc.name)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrShortName) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrShortName suggesting %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkSources is the cost registries.conf adds to each source read: the
// places of a repository with a mirror entry, by digest.
func BenchmarkSources(b *testing.B) {
	p := filepath.Join(b.TempDir(), "registries.conf")
	if err := os.WriteFile(p, []byte("[[registry]]\nlocation = \"quay.io\"\n[[registry.mirror]]\nlocation = \"mirror.example/quay\"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	c, err := LoadRegistriesConf(p)
	if err != nil {
		b.Fatal(err)
	}
	d := digest.FromString("x").String()
	b.ReportAllocs()
	for b.Loop() {
		if s, err := c.sources("quay.io/ns/app", d); err != nil || len(s) != 2 {
			b.Fatal(s, err)
		}
	}
}
