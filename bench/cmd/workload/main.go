// Command workload generates the benchmarks' copy workload and pushes it to a
// registry (plain HTTP), optionally with a file-based catalog image naming
// every tag, so that `airlock mirror` can mirror it:
//
//	go run ./bench/cmd/workload -preset quick -registry 127.0.0.1:5000 -catalog
//	go run ./bench/cmd/workload -preset reference -registry 127.0.0.1:5000
//	go run ./bench/cmd/workload -images 40 -indexes 4 -repos 6 -unique-mb 200 -registry 127.0.0.1:5000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/airlock-mirror/airlock/bench/workload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "workload:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		preset   = flag.String("preset", "quick", "reference (130 tags, 0.91 GB), quick (26 tags, 64 MB), tiny, catalog (500 images in 100 packages, 1.5 GB: use -catalog) or catalog-quick (1/10); other flags override it")
		registry = flag.String("registry", "", "push to this registry HOST:PORT (plain HTTP); empty: print the workload only")
		catalog  = flag.Bool("catalog", false, "also push a bundle image and a catalog image naming every tag (pinned by digest)")
		parallel = flag.Int("parallel", 8, "concurrent requests")
		o        workload.Options
		baseMB   float64
		uniqMB   float64
	)
	flag.StringVar(&o.Namespace, "namespace", "", "repository path prefix")
	flag.IntVar(&o.Repos, "repos", 0, "repositories")
	flag.IntVar(&o.Images, "images", 0, "single-platform image tags")
	flag.IntVar(&o.Indexes, "indexes", 0, "two-platform index tags")
	flag.IntVar(&o.BaseLayers, "base-layers", 0, "shared base layers")
	flag.Float64Var(&baseMB, "base-mb", 0, "size of each base layer in MB")
	flag.IntVar(&o.UniqueLayers, "unique-layers", 0, "unique layers per image manifest")
	flag.Float64Var(&uniqMB, "unique-mb", 0, "total MB of unique layers")
	flag.Uint64Var(&o.Seed, "seed", 0, "random seed")
	flag.BoolVar(&o.TagRefs, "tag-refs", false, "the catalog names its images by tag instead of pinning them by digest")
	flag.Parse()
	opts, err := workload.Preset(*preset)
	if err != nil {
		return err
	}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "namespace":
			opts.Namespace = o.Namespace
		case "repos":
			opts.Repos = o.Repos
		case "images":
			opts.Images = o.Images
		case "indexes":
			opts.Indexes = o.Indexes
		case "base-layers":
			opts.BaseLayers = o.BaseLayers
		case "base-mb":
			opts.BaseLayerSize = int64(baseMB * 1e6)
		case "unique-layers":
			opts.UniqueLayers = o.UniqueLayers
		case "unique-mb":
			opts.UniqueBytes = int64(uniqMB * 1e6)
		case "seed":
			opts.Seed = o.Seed
		case "tag-refs":
			opts.TagRefs = o.TagRefs
		}
	})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	w, err := workload.New(opts)
	if err != nil {
		return err
	}
	if *catalog {
		reg := *registry
		if reg == "" {
			reg = "localhost:5000"
		}
		ref, err := w.AddCatalog(reg)
		if err != nil {
			return err
		}
		fmt.Println("catalog", ref)
	}
	s := w.Stats()
	fmt.Printf("%d tags (%d indexes) in %d repositories: %d manifests, %d blobs, %.1f MB\n",
		s.Tags, s.Indexes, s.Repos, s.Manifests, s.Blobs, float64(s.BlobBytes)/1e6)
	if *registry == "" {
		return nil
	}
	st, err := w.Push(ctx, workload.PushOptions{Registry: *registry, Parallel: *parallel, SkipExisting: true})
	if err != nil {
		return err
	}
	fmt.Printf("pushed to %s: %d blobs (%.1f MB), %d mounted, %d already there, %d manifests, %d requests\n",
		*registry, st.Blobs, float64(st.Bytes)/1e6, st.Mounts, st.Skipped, st.Manifests, st.Requests)
	return nil
}
