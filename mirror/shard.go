package mirror

import (
	"errors"
	"fmt"
	"sort"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/opencontainers/go-digest"
)

// PlanBlob is one blob (config or layer, children of indexes included) an image
// of the plan references, recorded by --plan-only so that the plan can be split
// into shards without reading a manifest again.
type PlanBlob struct {
	Digest digest.Digest `json:"digest"`
	Size   int64         `json:"size"`
}

// ErrNoBlobs is returned (wrapped) by Partition for a plan that records no blob
// lists: only a plan written by --plan-only can be sharded.
var ErrNoBlobs = errors.New("the plan records no blobs per image")

// Shard is one part of a partitioned plan.
type Shard struct {
	// Index is the shard number, 0…N-1.
	Index int `json:"index"`
	// Images are indexes into the plan's Images, in plan order except that
	// images sending blobs other shards wait for come first.
	Images []int `json:"images"`
	// Bytes is what this shard sends: the size of the distinct blobs it owns.
	Bytes int64 `json:"bytes"`
	// Elsewhere are blobs this shard's images use that another shard owns
	// (sends), with the destination repository the owner puts each in. The
	// copy engine waits for them there and mounts them instead of sending them
	// again (transfer.Options.Elsewhere).
	Elsewhere endpoint.HeldElsewhere `json:"elsewhere,omitempty"`
}

// Jobs returns the copy jobs of the shard's images.
func (s Shard) Jobs(p *Plan) []transfer.Job {
	jobs := make([]transfer.Job, 0, len(s.Images))
	for _, i := range s.Images {
		jobs = append(jobs, p.Images[i].Job())
	}
	return jobs
}

// Partition is a plan split into N shards.
type Partition struct {
	Shards []Shard `json:"shards"`
	// UniqueBytes is the size of the distinct blobs of every sharded image.
	UniqueBytes int64 `json:"uniqueBytes"`
	// Split counts the groups of images sharing blobs (connected by shared
	// blobs) that were larger than one shard's share and so were spread over
	// several shards, each shared blob owned (sent) by one of them.
	Split int `json:"split"`
}

// Shardable reports whether the image goes to a shard: every plannable image
// but the catalogs, which --finish pushes once every image they name is there.
func Shardable(im PlanImage) bool {
	return im.Error == "" && im.Digest != "" && im.Kind != KindCatalog
}

// PartitionPlan splits the plan's shardable images into n shards by blob
// affinity, balanced by bytes, the same way for the same plan and n:
//
//   - images that share a blob are one group (union-find over blob digests), so
//     that each blob is sent by one shard;
//   - groups, largest first, go whole to the shard with the fewest bytes;
//   - a group larger than one shard's share (total/n, plus 10%), typically every image on
//     one common base layer, is spread image by image over the least loaded
//     shards instead: each of its blobs is owned by the first shard given an
//     image that uses it, and the other shards wait for the blob at the owner's
//     repository and mount it (Shard.Elsewhere).
func PartitionPlan(p *Plan, n int) (*Partition, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard count %d: must be at least 1", n)
	}
	var idx []int
	recorded := false
	for i, im := range p.Images {
		if !Shardable(im) {
			continue
		}
		idx = append(idx, i)
		if len(im.Blobs) > 0 {
			recorded = true
		}
	}
	if len(idx) > 0 && !recorded {
		return nil, fmt.Errorf("%w: make it with airlock mirror --plan-only", ErrNoBlobs)
	}

	// Union-find over images; blobs join the images that use them.
	parent := make([]int, len(idx))
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	size := map[digest.Digest]int64{}
	firstUser := map[digest.Digest]int{}
	for k, i := range idx {
		for _, b := range p.Images[i].Blobs {
			size[b.Digest] = b.Size
			if f, ok := firstUser[b.Digest]; ok {
				if a, c := find(f), find(k); a != c {
					if a < c {
						parent[c] = a
					} else {
						parent[a] = c
					}
				}
			} else {
				firstUser[b.Digest] = k
			}
		}
	}
	type group struct {
		members []int // positions in idx, ascending
		bytes   int64
	}
	byRoot := map[int]*group{}
	var groups []*group
	for k := range idx {
		r := find(k)
		g := byRoot[r]
		if g == nil {
			g = &group{}
			byRoot[r] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, k)
	}
	part := &Partition{Shards: make([]Shard, n)}
	for _, s := range size {
		part.UniqueBytes += s
	}
	for _, g := range groups {
		seen := map[digest.Digest]bool{}
		for _, k := range g.members {
			for _, b := range p.Images[idx[k]].Blobs {
				if !seen[b.Digest] {
					seen[b.Digest] = true
					g.bytes += b.Size
				}
			}
		}
	}
	// Largest groups first; equal sizes in plan order (members[0] is the
	// group's first image in plan order).
	sort.SliceStable(groups, func(i, j int) bool {
		if groups[i].bytes != groups[j].bytes {
			return groups[i].bytes > groups[j].bytes
		}
		return groups[i].members[0] < groups[j].members[0]
	})
	for i := range part.Shards {
		part.Shards[i].Index = i
	}
	least := func() int {
		best := 0
		for i := 1; i < n; i++ {
			if part.Shards[i].Bytes < part.Shards[best].Bytes {
				best = i
			}
		}
		return best
	}
	share := part.UniqueBytes / int64(n)
	owner := map[digest.Digest]int{}        // shard sending the blob
	ownerRepo := map[digest.Digest]string{} // where the owner puts it
	for _, g := range groups {
		if n == 1 || g.bytes <= share+share/10 || len(g.members) == 1 {
			s := least()
			for _, k := range g.members {
				part.Shards[s].Images = append(part.Shards[s].Images, idx[k])
			}
			part.Shards[s].Bytes += g.bytes
			continue
		}
		part.Split++
		// Biggest images first, each to the least loaded shard; an image costs
		// the bytes of its blobs no shard owns yet.
		members := append([]int(nil), g.members...)
		own := func(k int) int64 {
			var b int64
			seen := map[digest.Digest]bool{}
			for _, bl := range p.Images[idx[k]].Blobs {
				if !seen[bl.Digest] {
					seen[bl.Digest] = true
					b += bl.Size
				}
			}
			return b
		}
		sort.SliceStable(members, func(i, j int) bool { return own(members[i]) > own(members[j]) })
		for _, k := range members {
			s := least()
			im := p.Images[idx[k]]
			part.Shards[s].Images = append(part.Shards[s].Images, idx[k])
			for _, b := range im.Blobs {
				if _, ok := owner[b.Digest]; ok {
					continue
				}
				owner[b.Digest], ownerRepo[b.Digest] = s, im.DestRepo
				part.Shards[s].Bytes += b.Size
			}
		}
	}
	for si := range part.Shards {
		sh := &part.Shards[si]
		sort.Ints(sh.Images)
		for _, i := range sh.Images {
			for _, b := range p.Images[i].Blobs {
				if o, ok := owner[b.Digest]; ok && o != si {
					if sh.Elsewhere == nil {
						sh.Elsewhere = endpoint.HeldElsewhere{}
					}
					sh.Elsewhere[b.Digest] = ownerRepo[b.Digest]
				}
			}
		}
	}
	// Images that send blobs other shards wait for go first in their shard, so
	// that the waits are short and never circular.
	awaited := map[digest.Digest]bool{}
	for _, sh := range part.Shards {
		for d := range sh.Elsewhere {
			awaited[d] = true
		}
	}
	for si := range part.Shards {
		sh := &part.Shards[si]
		first := func(i int) bool {
			for _, b := range p.Images[i].Blobs {
				if awaited[b.Digest] && owner[b.Digest] == si {
					return true
				}
			}
			return false
		}
		sort.SliceStable(sh.Images, func(a, b int) bool { return first(sh.Images[a]) && !first(sh.Images[b]) })
	}
	return part, nil
}
