package archive

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/airlock-mirror/airlock/internal/humanize"
)

// Description summarises an archive for `airlock archive describe`.
type Description struct {
	Dir           string `json:"dir"`
	ArchiveID     string `json:"archiveID"`
	FormatVersion int    `json:"formatVersion"`
	// Batch is the archive's number in its target's sequence; BuildsOn the
	// earlier batches that must be loaded before it.
	Batch     int             `json:"batch,omitempty"`
	BuildsOn  []BatchRef      `json:"buildsOn,omitempty"`
	ChunkSize int64           `json:"chunkSize"`
	Images    []ImageRecord   `json:"images"`
	Catalogs  []CatalogRecord `json:"catalogs"`
	Tags      int             `json:"tags"`
	Blobs     int             `json:"blobs"`
	BlobBytes int64           `json:"blobBytes"`
	Chunks    []ChunkRecord   `json:"chunks"`
	// Incremental is true when the archive relies on blobs earlier archives shipped.
	Incremental   bool   `json:"incremental"`
	ReliesOn      int    `json:"reliesOn"`
	ReliesOnBytes int64  `json:"reliesOnBytes"`
	Bases         []Base `json:"bases,omitempty"`
}

// Base is an earlier archive this one relies on.
type Base struct {
	ArchiveID string `json:"archiveID"`
	Archive   string `json:"archive,omitempty"`
	Blobs     int    `json:"blobs"`
}

// Describe opens the archive in dir (checking its structure, not blob contents) and
// summarises it.
func Describe(dir string) (*Description, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m := r.ArchiveManifest()
	d := &Description{Dir: dir, ArchiveID: m.ArchiveID, FormatVersion: m.FormatVersion, ChunkSize: m.ChunkSize,
		Images: m.Images, Catalogs: m.Catalogs, Tags: len(m.Tags), Blobs: len(m.Blobs), BlobBytes: m.TotalBlobBytes(),
		Chunks: m.Chunks, Incremental: len(m.ReliesOn) > 0, ReliesOn: len(m.ReliesOn),
		Batch: m.Batch, BuildsOn: m.BuildsOn}
	bases := map[string]*Base{}
	for _, b := range m.ReliesOn {
		d.ReliesOnBytes += b.Size
		k := b.Origin.ArchiveID
		if bases[k] == nil {
			bases[k] = &Base{ArchiveID: k, Archive: b.Origin.Archive}
		}
		bases[k].Blobs++
	}
	for _, b := range bases {
		d.Bases = append(d.Bases, *b)
	}
	sort.Slice(d.Bases, func(i, j int) bool { return d.Bases[i].ArchiveID < d.Bases[j].ArchiveID })
	return d, nil
}

// WriteText writes the description for people.
func (d *Description) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Archive:\t%s (format %d) in %s\n", d.ArchiveID, d.FormatVersion, d.Dir)
	fmt.Fprintf(tw, "Chunks:\t%d (at most %s each)\n", len(d.Chunks), humanize.Bytes(d.ChunkSize))
	fmt.Fprintf(tw, "Blobs:\t%d, %s\n", d.Blobs, humanize.Bytes(d.BlobBytes))
	fmt.Fprintf(tw, "Manifest references:\t%d\n", d.Tags)
	if d.Batch > 0 {
		var on []string
		for _, b := range d.BuildsOn {
			on = append(on, b.String())
		}
		if len(on) == 0 {
			on = []string{"nothing (the first batch, or --full)"}
		}
		fmt.Fprintf(tw, "Batch:\t%d; load after %s\n", d.Batch, strings.Join(on, ", "))
	}
	if d.Incremental {
		fmt.Fprintf(tw, "Incremental:\trelies on %d blobs (%s) shipped by earlier archives\n", d.ReliesOn, humanize.Bytes(d.ReliesOnBytes))
		for _, b := range d.Bases {
			fmt.Fprintf(tw, "  base:\t%s %s (%d blobs)\n", b.ArchiveID, b.Archive, b.Blobs)
		}
	} else {
		fmt.Fprintf(tw, "Incremental:\tno (full archive)\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.Catalogs) > 0 {
		fmt.Fprintf(w, "\nCatalogs:\n")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  SOURCE\tDESTINATION\tDIGEST\tPACKAGES\n")
		for _, c := range d.Catalogs {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\n", c.Source, c.Destination, c.Digest, len(c.Packages))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nImages (%d):\n", len(d.Images))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  SOURCE\tDESTINATION\tDIGEST\n")
	for _, im := range d.Images {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", im.Source, im.Destination, im.Digest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nChunk files:\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range d.Chunks {
		fmt.Fprintf(tw, "  %s\t%d blobs\t%s\tsha256:%s\n", c.Name, c.Blobs, humanize.Bytes(c.PayloadSize), c.PayloadSHA256)
	}
	return tw.Flush()
}
