package endpoint

import "github.com/opencontainers/go-digest"

// HeldElsewhere are blobs that another worker of the same run holds or puts
// in place (another shard of a sharded plan, another part of a sharded
// archive), by digest: the repository it puts each one in, or "" where that
// does not matter (a part of an archive). The plan's partition says which
// (mirror.Shard.Elsewhere); the copy engine waits for such a blob there and
// mounts it instead of sending it (transfer.Options.Elsewhere); an archive
// writer counts it present and does not write it
// (archive.WriterOptions.Elsewhere).
type HeldElsewhere map[digest.Digest]string

// Has reports whether d is held elsewhere.
func (h HeldElsewhere) Has(d digest.Digest) bool {
	_, ok := h[d]
	return ok
}
