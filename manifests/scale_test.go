package manifests

import (
	"fmt"
	"strings"
	"testing"
)

// etcdObjectLimit is the largest object etcd stores (its default request
// size limit, 1.5 MiB): no cluster resource may be larger.
const etcdObjectLimit = 1536 * 1024

// scaleImages is n images shaped like a large operator mirror: a few
// registries, a namespace per 50 images, long repository paths, two images of
// three pinned by digest (operators), the rest by tag.
func scaleImages(n int) []Image {
	regs := []string{"registry.redhat.io", "quay.io", "registry.connect.redhat.com", "ghcr.io", "docker.io"}
	out := make([]Image, 0, n)
	for i := range n {
		repo := fmt.Sprintf("%s/vendor-namespace-%04d/operator-component-with-a-long-name-%05d", regs[i%len(regs)], i/50, i)
		src := repo + ":v1.2." + fmt.Sprint(i%7)
		kind := KindGeneric
		if i%3 != 2 {
			src, kind = repo+"@"+dg(repo), KindOperator
		}
		out = append(out, mirrored(src, kind))
	}
	return out
}

// A 20,000-image plan with one rule per repository (--max-nested-paths)
// and a signature key: every object is split under the object limit, far
// under etcd's, named -0, -1, … in order, and every repository has its rule.
func TestTwentyThousandImagesFitEtcd(t *testing.T) {
	const n = 20000
	images := scaleImages(n)
	s, err := Build(images, nil, Options{RepositoryScope: true, SignatureKey: []byte(testKey)})
	if err != nil {
		t.Fatal(err)
	}
	largest, rules := map[string]int{}, 0
	numbers := map[string]map[string]bool{} // object numbers by prefix
	for _, f := range s.Files() {
		if len(f.Data) > etcdObjectLimit || (f.Kind != "" && len(f.Data) > DefaultMaxObjectBytes) {
			t.Errorf("%s: %d bytes, over the %d-byte object limit (etcd's: %d)", f.Name, len(f.Data), DefaultMaxObjectBytes, etcdObjectLimit)
		}
		largest[f.Kind] = max(largest[f.Kind], len(f.Data))
		if f.Kind == "ImageDigestMirrorSet" || f.Kind == "ImageTagMirrorSet" {
			rules += f.Rules
		}
		if i := strings.LastIndexByte(f.ObjectName, '-'); f.Rules > 0 && i > 0 {
			p := f.Kind + " " + f.ObjectName[:i]
			if numbers[p] == nil {
				numbers[p] = map[string]bool{}
			}
			numbers[p][f.ObjectName[i+1:]] = true
		}
	}
	for p, nums := range numbers {
		for k := range len(nums) {
			if !nums[fmt.Sprint(k)] {
				t.Errorf("%s: objects numbered %v, want 0 to %d", p, nums, len(nums)-1)
				break
			}
		}
	}
	if rules != n {
		t.Errorf("%d mirror rules for %d repositories, want one each", rules, n)
	}
	if len(s.ImageDigestMirrorSets) < 2 || len(s.ImageTagMirrorSets) < 2 {
		t.Errorf("%d IDMS, %d ITMS objects: the plan should need several of each", len(s.ImageDigestMirrorSets), len(s.ImageTagMirrorSets))
	}
	t.Logf("%d IDMS, %d ITMS, %d ClusterImagePolicy objects; largest by kind %v", len(s.ImageDigestMirrorSets), len(s.ImageTagMirrorSets), len(s.ClusterImagePolicies), largest)
}

// BenchmarkBuildScale builds the cluster resources of 1,000, 5,000 and
// 20,000 images: time and allocations should grow linearly.
func BenchmarkBuildScale(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		images := scaleImages(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Build(images, nil, Options{RepositoryScope: true, SignatureKey: []byte(testKey)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
