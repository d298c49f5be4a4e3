package mirror

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/opencontainers/go-digest"
)

func blob(name string, size int64) PlanBlob {
	return PlanBlob{Digest: digest.FromString(name), Size: size}
}

// shardPlan builds a plan whose image i uses the named blobs.
func shardPlan(images ...[]PlanBlob) *Plan {
	p := &Plan{Workflow: MirrorToMirror, Destination: "reg/ns"}
	p.Images = append(p.Images, PlanImage{Source: "cat", Kind: KindCatalog, Digest: digest.FromString("cat"), DestRepo: "reg/ns/cat"})
	for i, b := range images {
		p.Images = append(p.Images, PlanImage{
			Source: fmt.Sprintf("src/img%02d:1", i), Kind: KindOperator, Digest: digest.FromString(fmt.Sprint("m", i)),
			DestRepo: fmt.Sprintf("reg/ns/img%02d", i), Tags: []string{"1"}, SourceRepo: fmt.Sprintf("src/img%02d", i), Blobs: b,
		})
	}
	p.Images = append(p.Images, PlanImage{Source: "src/broken:1", Kind: KindGeneric, Error: "no such image"})
	return p
}

// checkPartition checks the invariants every partition keeps: every shardable
// image in exactly one shard, each blob owned (sent) by exactly one shard, the
// shards' bytes adding up to the unique bytes, Elsewhere naming only blobs of
// the shard's images that another shard sends, into a repository of one of
// that shard's images.
func checkPartition(t *testing.T, p *Plan, part *Partition, n int) {
	t.Helper()
	if len(part.Shards) != n {
		t.Fatalf("%d shards, want %d", len(part.Shards), n)
	}
	in := map[int]int{}
	var sum int64
	for s, sh := range part.Shards {
		if sh.Index != s {
			t.Errorf("shard %d has index %d", s, sh.Index)
		}
		sum += sh.Bytes
		for _, i := range sh.Images {
			if _, dup := in[i]; dup {
				t.Errorf("image %d in shards %d and %d", i, in[i], s)
			}
			in[i] = s
		}
	}
	for i, im := range p.Images {
		if _, ok := in[i]; ok != Shardable(im) {
			t.Errorf("image %s (shardable %v) in a shard: %v", im.Source, Shardable(im), ok)
		}
	}
	if sum != part.UniqueBytes {
		t.Errorf("shards send %d bytes, the plan has %d unique", sum, part.UniqueBytes)
	}
	for s, sh := range part.Shards {
		uses := map[digest.Digest]bool{}
		for _, i := range sh.Images {
			for _, b := range p.Images[i].Blobs {
				uses[b.Digest] = true
			}
		}
		for d, repo := range sh.Elsewhere {
			if !uses[d] {
				t.Errorf("shard %d waits for %s, which none of its images uses", s, d)
			}
			owner := -1
			for _, i := range p.Images {
				if i.DestRepo == repo {
					owner = in[indexOf(p, repo)]
				}
			}
			if owner == s || owner < 0 {
				t.Errorf("shard %d waits for %s in %s, a repository of shard %d", s, d, repo, owner)
			}
		}
	}
}

func indexOf(p *Plan, repo string) int {
	for i, im := range p.Images {
		if im.DestRepo == repo {
			return i
		}
	}
	return -1
}

func TestPartitionPlan(t *testing.T) {
	base, other := blob("base", 100), blob("other", 80)
	tests := []struct {
		name   string
		plan   *Plan
		n      int
		groups [][]int // images (plan indexes) that must share a shard
		split  int
	}{
		{
			name:   "one shard takes all",
			plan:   shardPlan([]PlanBlob{base, blob("a", 10)}, []PlanBlob{blob("b", 10)}),
			n:      1,
			groups: [][]int{{1, 2}},
		},
		{
			name: "images sharing a layer stay together",
			plan: shardPlan(
				[]PlanBlob{base, blob("a", 10)}, []PlanBlob{other, blob("b", 10)},
				[]PlanBlob{base, blob("c", 10)}, []PlanBlob{other, blob("d", 10)},
			),
			n:      2,
			groups: [][]int{{1, 3}, {2, 4}},
		},
		{
			name: "a group bigger than a shard's share is spread",
			plan: shardPlan([]PlanBlob{base}, []PlanBlob{base, blob("x", 5)}),
			n:    4, split: 1,
		},
		{
			name: "one giant group is spread, shared blobs owned once",
			plan: shardPlan(
				[]PlanBlob{base, blob("a", 50)}, []PlanBlob{base, blob("b", 50)},
				[]PlanBlob{base, blob("c", 50)}, []PlanBlob{base, blob("d", 50)},
			),
			n:     2,
			split: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			part, err := PartitionPlan(tc.plan, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			checkPartition(t, tc.plan, part, tc.n)
			if part.Split != tc.split {
				t.Errorf("split %d groups, want %d", part.Split, tc.split)
			}
			where := map[int]int{}
			for s, sh := range part.Shards {
				for _, i := range sh.Images {
					where[i] = s
				}
			}
			for _, g := range tc.groups {
				for _, i := range g[1:] {
					if where[i] != where[g[0]] {
						t.Errorf("images %d and %d share blobs but went to shards %d and %d", g[0], i, where[g[0]], where[i])
					}
				}
			}
			again, _ := PartitionPlan(tc.plan, tc.n)
			if !reflect.DeepEqual(part, again) {
				t.Errorf("not deterministic:\n%+v\n%+v", part, again)
			}
		})
	}
}

func TestPartitionPlanGiantGroupWaits(t *testing.T) {
	base := blob("base", 100)
	p := shardPlan(
		[]PlanBlob{base, blob("a", 50)}, []PlanBlob{base, blob("b", 50)},
		[]PlanBlob{base, blob("c", 50)}, []PlanBlob{base, blob("d", 50)},
	)
	part, err := PartitionPlan(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	for _, sh := range part.Shards {
		if len(sh.Images) == 0 {
			t.Errorf("shard %d is empty: the giant group was not spread", sh.Index)
		}
		if repo, ok := sh.Elsewhere[base.Digest]; ok {
			waits++
			if repo == "" {
				t.Error("no repository to wait in")
			}
		}
	}
	if waits != 1 {
		t.Errorf("%d shards wait for the shared base layer, want 1 (the other sends it)", waits)
	}
}

// TestPartitionPlanBalance spreads a reference-like workload (many groups of
// images on shared bases, of uneven sizes) and checks the shards' bytes are
// within 10% of each other.
func TestPartitionPlanBalance(t *testing.T) {
	var images [][]PlanBlob
	for g := range 40 {
		b := blob(fmt.Sprint("base", g), int64(1000+97*(g%7)))
		for i := range 1 + g%4 {
			images = append(images, []PlanBlob{b, blob(fmt.Sprint("own", g, "-", i), int64(300+31*((g+i)%11)))})
		}
	}
	p := shardPlan(images...)
	for _, n := range []int{2, 3, 4, 8} {
		part, err := PartitionPlan(p, n)
		if err != nil {
			t.Fatal(err)
		}
		checkPartition(t, p, part, n)
		bytes := make([]int64, n)
		for i, sh := range part.Shards {
			bytes[i] = sh.Bytes
		}
		sort.Slice(bytes, func(i, j int) bool { return bytes[i] < bytes[j] })
		if float64(bytes[n-1]) > 1.10*float64(bytes[0]) {
			t.Errorf("n=%d: shard bytes %v spread more than 10%%", n, bytes)
		}
	}
}

func TestPartitionPlanNeedsBlobs(t *testing.T) {
	p := shardPlan(nil, nil)
	if _, err := PartitionPlan(p, 2); !errors.Is(err, ErrNoBlobs) {
		t.Errorf("got %v, want ErrNoBlobs", err)
	}
	if _, err := PartitionPlan(p, 0); err == nil {
		t.Error("0 shards accepted")
	}
	empty := &Plan{}
	if part, err := PartitionPlan(empty, 3); err != nil || len(part.Shards) != 3 {
		t.Errorf("empty plan: %v %+v", err, part)
	}
}
