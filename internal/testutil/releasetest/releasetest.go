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
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"sort"
	"strings"
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
	// PushTo is the registry the images are pushed to when it is not the
	// host they are named at (a proxy in front of it); default that host.
	PushTo string
	// Remote are options of every request (credentials, a transport
	// trusting the registry's CA).
	Remote []remote.Option
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
// payload to host/ocp/release:<version>-x86_64; it fails t on error.
func Push(t testing.TB, host string, s Spec) Release {
	t.Helper()
	r, err := Build(context.Background(), host, s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Build is Push returning its error, for benchmarks: the release names its
// images at host and is pushed to s.PushTo (default host).
func Build(ctx context.Context, host string, s Spec) (Release, error) {
	if s.Components == 0 {
		s.Components = 160
	}
	if s.LayerSize == 0 {
		s.LayerSize = 4096
	}
	to := s.PushTo
	if to == "" {
		to = host
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
		p, err := imagetest.Push(ctx, fmt.Sprintf("%s/ocp/art-dev:%s-%d", to, n, seed),
			fakeimage.Spec{Seed: seed, BaseSeed: 7, BaseLayers: 1, Layers: 1, LayerSize: s.LayerSize, Platforms: s.Platforms}, s.Remote...)
		if err != nil {
			return out, fmt.Errorf("releasetest: push %s: %w", n, err)
		}
		out.Components[n] = host + "/ocp/art-dev@" + p.Digest.String()
		if err := out.add(ctx, to+"/ocp/art-dev", p.Digest, s.Remote); err != nil {
			return out, err
		}
		tags = append(tags, map[string]any{"name": n, "from": map[string]string{"kind": "DockerImage", "name": out.Components[n]}})
	}
	files := map[string][]byte{}
	files["release-manifests/image-references"] = mustJSON(map[string]any{
		"kind": "ImageStream", "apiVersion": "image.openshift.io/v1",
		"metadata": map[string]any{"name": s.Version}, "spec": map[string]any{"tags": tags},
	})
	files["release-manifests/release-metadata"] = mustJSON(map[string]any{"kind": "cincinnati-metadata-v0", "version": s.Version, "previous": s.Previous})
	if s.KubeVirt {
		archs := map[string]any{}
		kv := func(arch string, seed uint64) (string, error) {
			p, err := imagetest.Push(ctx, to+"/ocp/art-dev:kubevirt-"+s.Version+"-"+arch, fakeimage.Spec{Seed: seed, Layers: 1, LayerSize: s.LayerSize}, s.Remote...)
			if err != nil {
				return "", fmt.Errorf("releasetest: push the KubeVirt image: %w", err)
			}
			ref := host + "/ocp/art-dev@" + p.Digest.String()
			archs[arch] = map[string]any{"images": map[string]any{"kubevirt": map[string]string{"digest-ref": ref}}}
			return ref, out.add(ctx, to+"/ocp/art-dev", p.Digest, s.Remote)
		}
		var err error
		if len(s.Platforms) == 0 {
			out.KubeVirt, err = kv("x86_64", 99)
		} else {
			out.KubeVirts = map[string]string{}
			for _, pl := range s.Platforms {
				a, seed := map[string]string{"linux/amd64": "x86_64", "linux/s390x": "s390x"}[pl], uint64(99)
				if a == "" {
					continue // the boot images have KubeVirt images for these two only
				}
				if a == "s390x" {
					seed = 98
				}
				if out.KubeVirts[a], err = kv(a, seed); err != nil {
					break
				}
			}
		}
		if err != nil {
			return out, err
		}
		stream := mustJSON(map[string]any{"architectures": archs})
		files["release-manifests/0000_50_installer_coreos-bootimages.yaml"] = mustJSON(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]string{"stream": string(stream)}})
	}
	r, err := name.ParseReference(to+strings.TrimPrefix(out.Ref, host), name.Insecure)
	if err != nil {
		return out, err
	}
	var d v1.Hash
	if len(s.Platforms) == 0 {
		img, err := payloadImage(files, "linux/amd64")
		if err != nil {
			return out, err
		}
		if err := remote.Write(r, img, append(s.Remote, remote.WithContext(ctx))...); err != nil {
			return out, fmt.Errorf("releasetest: push the payload: %w", err)
		}
		d, _ = img.Digest()
	} else {
		idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		for _, pl := range s.Platforms {
			p, err := v1.ParsePlatform(pl)
			if err != nil {
				return out, err
			}
			img, err := payloadImage(files, pl)
			if err != nil {
				return out, err
			}
			idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: p}})
		}
		if err := remote.WriteIndex(r, idx, append(s.Remote, remote.WithContext(ctx))...); err != nil {
			return out, fmt.Errorf("releasetest: push the payload: %w", err)
		}
		d, _ = idx.Digest()
	}
	out.Digest = digest.Digest(d.String())
	return out, out.add(ctx, to+"/ocp/release", out.Digest, s.Remote)
}

// add records the blobs of the image d of repo.
func (r *Release) add(ctx context.Context, repo string, d digest.Digest, opts []remote.Option) error {
	ref, err := name.ParseReference(repo+"@"+d.String(), name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Get(ref, append(opts, remote.WithContext(ctx))...)
	if err != nil {
		return fmt.Errorf("releasetest: %w", err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return err
		}
		for _, c := range im.Manifests {
			if err := r.add(ctx, repo, digest.Digest(c.Digest.String()), opts); err != nil {
				return err
			}
		}
		return nil
	}
	img, err := desc.Image()
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	for _, desc := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		k := digest.Digest(desc.Digest.String())
		if _, ok := r.Blobs[k]; !ok {
			r.Blobs[k] = desc.Size
			r.UniqueBytes += desc.Size
		}
	}
	return nil
}

// payloadImage is a payload for platform: a base layer, a layer with files
// and a layer naming the platform, fixed times (the same files give the
// same digest).
func payloadImage(files map[string][]byte, platform string) (v1.Image, error) {
	base, err := tarLayer(map[string][]byte{"usr/bin/cluster-version-operator": []byte("cvo")})
	if err != nil {
		return nil, err
	}
	manifests, err := tarLayer(files)
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, manifests)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	p, err := v1.ParsePlatform(platform)
	if err != nil {
		return nil, err
	}
	cfg.OS, cfg.Architecture = p.OS, p.Architecture
	// The base layer differs per platform, as a real payload's binaries do.
	arch, err := tarLayer(map[string][]byte{"usr/share/arch": []byte(platform)})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.AppendLayers(img, arch); err != nil {
		return nil, err
	}
	cfg.Config.Labels = map[string]string{"io.openshift.release": "true"}
	return mutate.ConfigFile(img, cfg)
}

func tarLayer(files map[string][]byte) (v1.Layer, error) {
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(types.OCILayer))
}

// mustJSON marshals maps of strings and slices, which cannot fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func fnvSeed(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64() % 1_000_000
}
