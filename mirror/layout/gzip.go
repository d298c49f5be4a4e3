package layout

import (
	"io"
	"time"

	"github.com/klauspost/pgzip"
)

// Compression of the rebuilt layer: gzip (what every cluster's runtime reads)
// made of independent blocks compressed in parallel, pgzip-style, each primed
// with the 32 KiB before it. Block boundaries fall every layerBlock bytes of the
// tar whatever the concurrency, so the layer (and the catalog digest) depends
// only on the catalog, never on the machine.
const (
	layerBlock = 1 << 20
	layerLevel = 6
)

// NewLayerGzip returns airlock's one gzip writer for the layers it builds:
// block-parallel (up to blocks blocks at once) and deterministic. No name, no
// comment, time 0, OS "unknown": nothing of the machine or the moment goes into
// the header, and the bytes do not depend on blocks.
func NewLayerGzip(w io.Writer, blocks int) (*pgzip.Writer, error) {
	zw, err := pgzip.NewWriterLevel(w, layerLevel)
	if err != nil {
		return nil, err
	}
	if err := zw.SetConcurrency(layerBlock, max(blocks, 1)); err != nil {
		return nil, err
	}
	zw.ModTime, zw.OS = time.Unix(0, 0), 255
	return zw, nil
}
