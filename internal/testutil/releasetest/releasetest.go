// Package releasetest builds synthetic OpenShift releases for tests: a
// payload image whose release-manifests/ list many component images (pushed
// beside it), signed with a throwaway OpenPGP key into a signature store
// served on 127.0.0.1, and the graph of a channel holding releases (served
// by cincinnatitest).
//
// Test support only: the binary never links it (internal/depcheck).
package releasetest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
)

// Spec says what release to build.
type Spec struct {
	// Version is the release's version ("4.15.1").
	Version string
	// Previous are the versions that update to it (release-metadata).
	Previous []string
	// Components is the number of component images (default 160).
	Components int
	// Changed is how many components differ from the first z-stream's
	// (the others are the same images: two z-streams share most
	// components). 0: every component is the base one.
	Changed int
	// LayerSize is each component layer's size (default 4096).
	LayerSize int
	// KubeVirt adds a KubeVirt image to the boot images: x86_64's, and for
	// a multi payload one for each of x86_64 and s390x among Platforms.
	KubeVirt bool
	// Platforms ("linux/amd64", "linux/arm64") make a multi payload: an
	// index of one payload per platform, at <version>-multi, whose
	// components are indexes of those platforms.
	Platforms []string
}

// Release is a release pushed to a registry.
type Release struct {
	Version string
	// Ref is the payload by tag ("HOST/ocp/release:4.15.1-x86_64"); Repo its
	// repository, Digest its digest.
	Ref, Repo string
	Digest    digest.Digest
	// Components are the component images by digest, by name.
	Components map[string]string
	// KubeVirt is the KubeVirt image by digest ("" without).
	KubeVirt string
	// KubeVirts are the KubeVirt images of a multi payload by digest, by
	// the boot images' architecture name (x86_64, s390x).
	KubeVirts map[string]string
	// UniqueBytes are the bytes of every distinct blob of the release
	// (payload and components).
	UniqueBytes int64
	// Blobs are those blobs' digests with their sizes.
	Blobs map[digest.Digest]int64
}

// PayloadRef is the payload by digest.
func (r Release) PayloadRef() string { return r.Repo + "@" + r.Digest.String() }

// Push builds s and pushes its components to host/ocp/art-dev and its
// payload to host/ocp/release:<version>-x86_64; opts (credentials, a
// transport trusting the registry's CA) are given to every request.
func Push(t testing.TB, host string, s Spec, opts ...remote.Option) Release {
	t.Helper()
	if s.Components == 0 {
		s.Components = 160
	}
	if s.LayerSize == 0 {
		s.LayerSize = 4096
	}
	out := Release{Version: s.Version, Repo: host + "/ocp/release", Components: map[string]string{}, Blobs: map[digest.Digest]int64{}}
	out.Ref = out.Repo + ":" + s.Version + "-x86_64"
	if len(s.Platforms) > 0 {
		out.Ref = out.Repo + ":" + s.Version + "-multi"
	}
	changed := fnvSeed(s.Version)
	var tags []map[string]any
	for i := range s.Components {
		n := fmt.Sprintf("component-%03d", i)
		seed := uint64(1000 + i)
		if i < s.Changed {
			seed += changed
		}
		p := imagetest.MustPush(t, fmt.Sprintf("%s/ocp/art-dev:%s-%d", host, n, seed), fakeimage.Spec{Seed: seed, BaseSeed: 7, BaseLayers: 1, Layers: 1, LayerSize: s.LayerSize, Platforms: s.Platforms}, opts...)
		ref := host + "/ocp/art-dev@" + p.Digest.String()
		out.Components[n] = ref
		out.add(t, host+"/ocp/art-dev", p.Digest, opts)
		tags = append(tags, map[string]any{"name": n, "from": map[string]string{"kind": "DockerImage", "name": ref}})
	}
	files := map[string][]byte{}
	files["release-manifests/image-references"] = mustJSON(t, map[string]any{
		"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
		"metadata": map[string]any{"name": s.Version}, "spec": map[string]any{"tags": tags},
	})
	files["release-manifests/release-metadata"] = mustJSON(t, map[string]any{"kind": "cincinnati-metadata-v0", "version": s.Version, "previous": s.Previous})
	if s.KubeVirt {
		archs := map[string]any{}
		kv := func(arch string, seed uint64) string {
			p := imagetest.MustPush(t, host+"/ocp/art-dev:kubevirt-"+s.Version+"-"+arch, fakeimage.Spec{Seed: seed, Layers: 1, LayerSize: s.LayerSize}, opts...)
			ref := host + "/ocp/art-dev@" + p.Digest.String()
			out.add(t, host+"/ocp/art-dev", p.Digest, opts)
			archs[arch] = map[string]any{"images": map[string]any{"kubevirt": map[string]string{"digest-ref": ref}}}
			return ref
		}
		if len(s.Platforms) == 0 {
			out.KubeVirt = kv("x86_64", 99)
		} else {
			out.KubeVirts = map[string]string{}
			for _, pl := range s.Platforms {
				switch pl {
				case "linux/amd64":
					out.KubeVirts["x86_64"] = kv("x86_64", 99)
				case "linux/s390x":
					out.KubeVirts["s390x"] = kv("s390x", 98)
				}
			}
		}
		stream := mustJSON(t, map[string]any{"architectures": archs})
		files["release-manifests/0000_50_installer_coreos-bootimages.yaml"] = mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]string{"stream": string(stream)}})
	}
	r, err := name.ParseReference(out.Ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	var d v1.Hash
	if len(s.Platforms) == 0 {
		img := payloadImage(t, files, "linux/amd64")
		if err := remote.Write(r, img, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ = img.Digest()
	} else {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, pl := range s.Platforms {
			p, err := v1.ParsePlatform(pl)
			if err != nil {
				t.Fatal(err)
			}
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: payloadImage(t, files, pl), Descriptor: v1.Descriptor{Platform: p}})
		}
		if err := remote.WriteIndex(r, idx, opts...); err != nil {
			t.Fatal(err)
		}
		d, _ = idx.Digest()
	}
	out.Digest = digest.Digest(d.String())
	out.add(t, out.Repo, out.Digest, opts)
	return out
}

// add records the blobs of the image d of repo.
func (r *Release) add(t testing.TB, repo string, d digest.Digest, opts []remote.Option) {
	t.Helper()
	ref, err := name.ParseReference(repo+"@"+d.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range im.Manifests {
			r.add(t, repo, digest.Digest(c.Digest.String()), opts)
		}
		return
	}
	img, err := desc.Image()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, desc := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		k := digest.Digest(desc.Digest.String())
		if _, ok := r.Blobs[k]; !ok {
			r.Blobs[k] = desc.Size
			r.UniqueBytes += desc.Size
		}
	}
}

// payloadImage is a payload for platform: a base layer, a layer with files
// and a layer naming the platform, fixed times (the same files give the
// same digest).
func payloadImage(t testing.TB, files map[string][]byte, platform string) v1.Image {
	t.Helper()
	base := tarLayer(t, map[string][]byte{"usr/bin/cluster-version-operator": []byte("cvo")})
	manifests := tarLayer(t, files)
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, manifests)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	// The base layer differs per platform, as a real payload's binaries do.
	if img, err = mutate.AppendLayers(img, tarLayer(t, map[string][]byte{"usr/share/arch": []byte(platform)})); err != nil {
		t.Fatal(err)
	}
	cfg.Config.Labels = map[string]string{"io.openshift.release": "true"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func tarLayer(t testing.TB, files map[string][]byte) v1.Layer {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(files[n])
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fnvSeed(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() % 1_000_000
}
