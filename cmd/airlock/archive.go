package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/airlock-mirror/airlock/mirror/archive"
)

func init() {
	registerUnder("archive", newArchiveVerifyCmd)
	registerUnder("archive", newArchiveDescribeCmd)
}

func newArchiveVerifyCmd() *cobra.Command {
	var asJSON bool
	var key string
	cmd := &cobra.Command{
		Use:   "verify DIR|CHUNK",
		Short: "Verify a mirror-to-disk archive, or one chunk of it, byte for byte",
		Long: `Verify reads every chunk of the archive in DIR and checks the tar structure
(only regular files, canonical headers, no links, no paths outside the chunk), every
blob's SHA-256 digest and size, each chunk's SHA-256 as recorded in its own index and
in the archive manifest, that every chunk is present and belongs to this archive,
and that every image in the archive is complete (its blobs are in the archive, or
recorded as shipped by an earlier archive), and that the archive ID the manifest
records is the one its content makes: compare the ID it prints with the one
mirror-to-disk printed on the source side.

Given a mirror-to-disk target (its batch-0001, batch-0002 … folders) it verifies
every finished batch, in order, one line each, and notes an unfinished batch or an
earlier batch the target does not hold.

Given a single chunk file (airlock_000042.tar) it verifies that chunk on its own,
using the index the chunk carries: useful right after copying one chunk.

With --key PUB it also requires the archive's signature (airlock-archive.sig,
written by mirror-to-disk --sign-key) by that public key, over the archive
manifest the chunks hold: an unsigned archive, one signed by another key, or one
changed since it was signed is refused.

Every problem names the chunk file and the blob. Exit status: 0 when everything
verifies, 1 otherwise.`,
		Example: `  airlock archive verify /media/usb/mirror
  airlock archive verify /media/usb/mirror/airlock_000003.tar
  airlock archive verify /media/usb/mirror --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := os.Stat(args[0])
			if err != nil {
				return fmt.Errorf("archive %s: %w", args[0], err)
			}
			var report any
			var notes []string
			if info.IsDir() {
				var tr *archive.TargetReport
				if tr, err = archive.VerifyTarget(cmd.Context(), args[0]); err == nil {
					report, notes = tr.Archives[0].Report, tr.Notes
					if len(tr.Archives) > 1 {
						report = tr
					}
				}
				for i := 0; err == nil && key != "" && i < len(tr.Archives); i++ {
					_, err = archive.VerifySignature(tr.Archives[i].Dir, key)
				}
			} else if key != "" {
				return fmt.Errorf("--key checks the signature of a whole archive: give the archive folder, not the chunk %s", args[0])
			} else {
				report, err = archive.VerifyChunk(cmd.Context(), args[0])
			}
			if err != nil {
				return &exitError{code: 1, msg: fmt.Sprintf("verify %s failed:\n%v", args[0], err)}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(report)
			}
			switch r := report.(type) {
			case *archive.VerifyReport:
				writeVerified(out, "", r)
			case *archive.TargetReport:
				for _, b := range r.Archives {
					writeVerified(out, archive.BatchName(b.Batch)+": ", b.Report)
				}
			case *archive.ChunkReport:
				fmt.Fprintf(out, "chunk %s (number %d of archive %s): OK: %d blobs (%d bytes)\n", r.Name, r.Chunk, r.ArchiveID, r.Blobs, r.BlobBytes)
			}
			for _, n := range notes {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verification report as JSON")
	cmd.Flags().StringVar(&key, "key", "", "also require the archive's signature (airlock-archive.sig) by this public key (PEM: cosign.pub, or openssl pkey -pubout)")
	return cmd
}

// writeVerified prints one verified archive on one line.
func writeVerified(out io.Writer, prefix string, r *archive.VerifyReport) {
	fmt.Fprintf(out, "%sarchive %s: OK: %d chunks, %d blobs (%d bytes), %d images, %d manifest references", prefix, r.ArchiveID, len(r.Chunks), r.Blobs, r.BlobBytes, r.Images, r.Tags)
	if r.ReliesOn > 0 {
		fmt.Fprintf(out, "; relies on %d blobs shipped by earlier archives", r.ReliesOn)
	}
	fmt.Fprintln(out)
}

func newArchiveDescribeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "describe DIR",
		Short: "Show what a mirror-to-disk archive holds",
		Long: `Describe reads the archive manifest in DIR and prints the images (source,
destination, digest), the pruned catalogs, the number of blobs and bytes, the chunk
files with their SHA-256, and for an incremental archive the earlier archives it
relies on. It checks the archive's structure (every chunk present, from this
archive, with a valid index) but does not read blob contents: use verify for that.`,
		Example: `  airlock archive describe /media/usb/mirror
  airlock archive describe /media/usb/mirror --json | jq '.images[].destination'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := archive.ResolveArchiveDir(args[0])
			if err != nil {
				return err
			}
			d, err := archive.Describe(dir)
			if err != nil {
				return fmt.Errorf("describe %s: %w", args[0], err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			return d.WriteText(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the description as JSON")
	return cmd
}
