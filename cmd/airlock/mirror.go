package main

import (
	"errors"
	"fmt"
	"github.com/airlock-mirror/airlock/internal/humanize"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

func init() { register(newMirrorCmd) }

func newMirrorCmd() *cobra.Command {
	o := pipeline.Options{SrcTLSVerify: true, DestTLSVerify: true}
	cmd := &cobra.Command{
		Use:   "mirror -c imageset.yaml (file://DIR | docker://REGISTRY[:PORT]/NAMESPACE)",
		Short: "Mirror what an ImageSetConfiguration names: mirror-to-mirror, mirror-to-disk, disk-to-mirror",
		Long: `Mirror the catalogs and images an ImageSetConfiguration names.

  airlock mirror -c imageset.yaml --workspace file://DIR docker://REGISTRY/NS   # mirror-to-mirror
  airlock mirror -c imageset.yaml file://DIR                                   # mirror-to-disk (archive)
  airlock mirror -c imageset.yaml --from file://DIR docker://REGISTRY/NS       # disk-to-mirror

Every catalog is fetched once (its tag pinned to a digest), pruned to what the
configuration asks for, and rebuilt as a new catalog image. Every image is resolved
to a digest, copied with each blob sent once, and verified. The working files, plan
(plan.json, mapping.txt), results (results.json) and cluster resources
(cluster-resources/) go to DIR/working-dir. Running the same command again after an
interruption copies only what is missing. --dry-run plans only and writes
dry-run/mapping.txt and dry-run/missing.txt with the bytes that would be sent.

Exit status: 0 when everything was mirrored, 1 on an error, 2 when some images
failed (they are listed in working-dir/results.json), 130 when interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := logger()
			if err != nil {
				return err
			}
			o.Destination = args[0]
			o.Logger = log
			stop := attachProgress(&o, cmd.ErrOrStderr(), log)
			res, err := pipeline.Mirror(cmd.Context(), o)
			stop()
			if res != nil && res.Plan != nil {
				printSummary(cmd.ErrOrStderr(), res)
			}
			if err != nil {
				if cmd.Context().Err() != nil {
					return &exitError{code: 130, msg: "interrupted: run the same command again to finish; nothing already copied is copied again"}
				}
				if errors.Is(err, pipeline.ErrIncomplete) {
					return &exitError{code: 2, msg: err.Error()}
				}
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "ImageSetConfiguration file (required)")
	f.StringVar(&o.Workspace, "workspace", "", "file://DIR for mirror-to-mirror working files")
	f.StringVar(&o.From, "from", "", "file://DIR holding an archive (disk-to-mirror)")
	f.BoolVar(&o.DryRun, "dry-run", false, "plan only: write mapping.txt, missing.txt and the bytes to send")
	f.IntVar(&o.MaxNestedPaths, "max-nested-paths", 0, "flatten destination paths deeper than N components (0: no limit); forces repository-scoped mirror sets")
	f.StringVar(&o.AuthFile, "authfile", "", "registry credentials file (default: $REGISTRY_AUTH_FILE, containers auth.json, ~/.docker/config.json)")
	f.BoolVar(&o.SrcTLSVerify, "src-tls-verify", true, "verify TLS certificates of source registries (false also allows plain HTTP)")
	f.BoolVar(&o.DestTLSVerify, "dest-tls-verify", true, "verify TLS certificates of the destination registry (false also allows plain HTTP)")
	f.IntVar(&o.ParallelImages, "parallel-images", 4, "images copied at once")
	f.IntVar(&o.ParallelLayers, "parallel-layers", 5, "blobs of one image copied at once")
	f.IntVar(&o.RetryTimes, "retry-times", 5, "retries of a failed request, with exponential backoff")
	f.StringVar(&o.SinceArchive, "since-archive", "", "mirror-to-disk: ship only blobs the archive in this directory did not carry")
	f.BoolVar(&o.Full, "full", false, "mirror-to-disk: ignore earlier archives and ship every blob")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// attachProgress draws progress bars on a terminal and logs periodic lines
// otherwise. It returns a function that stops it.
func attachProgress(o *pipeline.Options, w io.Writer, log *slog.Logger) func() {
	f, isFile := w.(*os.File)
	tty := isFile && term.IsTerminal(int(f.Fd()))
	var mu sync.Mutex
	var last mirror.ProgressEvent
	var bar *progressbar.ProgressBar
	o.Stage = func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if tty && bar == nil {
			fmt.Fprintf(w, "airlock: %s\n", s)
		}
	}
	o.Progress = func(ev mirror.ProgressEvent) {
		mu.Lock()
		defer mu.Unlock()
		last = ev
		if !tty {
			return
		}
		if bar == nil {
			bar = progressbar.NewOptions64(ev.BytesTotal,
				progressbar.OptionSetWriter(w), progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond),
				progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
		}
		bar.ChangeMax64(ev.BytesTotal)
		bar.Describe(fmt.Sprintf("images %d/%d", ev.ImagesDone, ev.ImagesTotal))
		_ = bar.Set64(ev.BytesDone)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if !tty {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(10 * time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					mu.Lock()
					ev := last
					mu.Unlock()
					if ev.ImagesTotal > 0 {
						log.Info("progress", "images", fmt.Sprintf("%d/%d", ev.ImagesDone, ev.ImagesTotal), "failed", ev.ImagesFailed, "bytes", humanize.Bytes(ev.BytesDone), "of", humanize.Bytes(ev.BytesTotal))
					}
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
		mu.Lock()
		if bar != nil {
			_ = bar.Finish()
		}
		mu.Unlock()
	}
}

func printSummary(w io.Writer, r *pipeline.Result) {
	fmt.Fprintf(w, "\n%s summary\n", r.Workflow)
	ok := 0
	for _, im := range r.Images {
		if im.Status != mirror.StatusFailed && im.Status != "not run" {
			ok++
		}
	}
	fmt.Fprintf(w, "  images:    %d planned, %d ok, %d failed, %d blocked\n", len(r.Images), ok, r.Failed, len(r.Blocked))
	for _, c := range r.Catalogs {
		state := "rebuilt"
		if !c.Rebuilt {
			state = "untouched"
		}
		fmt.Fprintf(w, "  catalog:   %s -> %s:%s (%s, %s)\n", c.Catalog, c.DestRepo, c.Tag, state, shortDigest(c.Digest.String()))
	}
	if r.DryRun != nil {
		fmt.Fprintf(w, "  dry run:   %d of %d images missing at the destination, %d of %d blobs, %s to send (of %s)\n",
			len(r.DryRun.Missing), r.DryRun.Images, r.DryRun.MissingBlobs, r.DryRun.Blobs, humanize.Bytes(r.DryRun.BytesToSend), humanize.Bytes(r.DryRun.Bytes))
		fmt.Fprintf(w, "  files:     %s/dry-run/mapping.txt, missing.txt\n", r.WorkingDir)
	} else if r.Workflow == mirror.MirrorToDisk {
		fmt.Fprintf(w, "  blobs:     %d downloaded (%s), %d already staged or shipped by an earlier archive; %s\n",
			r.BlobsSent, humanize.Bytes(r.BytesSent), r.BlobsSkipped+r.BlobsMounted, r.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(w, "  blobs:     %d sent, %d mounted, %d already present; %s sent in %s\n",
			r.BlobsSent, r.BlobsMounted, r.BlobsSkipped, humanize.Bytes(r.BytesSent), r.Duration.Round(time.Millisecond))
	}
	if r.Archive != nil {
		kind := "full"
		if r.Archive.Incremental {
			kind = fmt.Sprintf("incremental: relies on %d blobs earlier archives shipped, which the mirror registry must hold; --full writes a complete archive", r.Archive.ReliesOn)
		}
		fmt.Fprintf(w, "  archive:   %s: %d chunk(s), %d blobs, %s (%s)\n", r.Archive.Dir, len(r.Archive.Chunks), r.Archive.Blobs, humanize.Bytes(r.Archive.Bytes), kind)
	}
	if len(r.ClusterResources) > 0 {
		fmt.Fprintf(w, "  cluster resources (oc apply -f %s/cluster-resources/):\n", r.WorkingDir)
		for _, f := range r.ClusterResources {
			fmt.Fprintf(w, "    %s\n", f)
		}
	}
	if r.Failed > 0 {
		fmt.Fprintf(w, "  failed:\n")
		n := 0
		for _, im := range r.Images {
			if im.Status == mirror.StatusFailed || im.Status == "not run" {
				if n++; n > 20 {
					fmt.Fprintf(w, "    … and %d more in %s/results.json\n", r.Failed-20, r.WorkingDir)
					break
				}
				fmt.Fprintf(w, "    %s: %s\n", im.Source, im.Error)
			}
		}
	}
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
