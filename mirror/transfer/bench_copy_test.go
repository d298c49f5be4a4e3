package transfer

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

func benchEnv(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkCopy copies many images sharing base layers between two embedded
// registries on 127.0.0.1. Size: AIRLOCK_BENCH_IMAGES (default 40 images in 8
// repositories, 3 shared base layers from a pool of 4 bases, 2 unique layers each)
// and AIRLOCK_BENCH_LAYER_KB (default 1024), about 100 MB of unique blobs.
// Each iteration copies into fresh destination repositories.
func BenchmarkCopy(b *testing.B) {
	images := benchEnv("AIRLOCK_BENCH_IMAGES", 40)
	layerKB := benchEnv("AIRLOCK_BENCH_LAYER_KB", 1024)
	// Filesystem storage: the in-memory driver's own copying would dominate.
	src := registrytest.Start(b, registrytest.WithFilesystem())
	dst := registrytest.Start(b, registrytest.WithFilesystem())
	var jobs []Job
	var uniqueBytes int64
	for i := 0; i < images; i++ {
		repo := fmt.Sprintf("%s/bench/app%d", src.Host(), i%8)
		spec := fakeimage.Spec{Seed: uint64(i + 1), BaseSeed: uint64(i % 4), BaseLayers: 3, Layers: 2, LayerSize: layerKB << 10, OCI: i%2 == 0}
		p, err := imagetest.Push(context.Background(), fmt.Sprintf("%s:v%d", repo, i), spec)
		if err != nil {
			b.Fatal(err)
		}
		jobs = append(jobs, Job{Source: repo, Digest: p.Digest, Tags: []string{fmt.Sprintf("v%d", i)}})
	}
	// Sizes of unique blobs, from the source.
	reg := registry.New(registry.Options{})
	seen := map[string]bool{}
	for _, j := range jobs {
		m, err := reg.Manifest(context.Background(), j.Source, j.Digest.String())
		if err != nil {
			b.Fatal(err)
		}
		refs, _ := oci.Parse(m)
		for _, bl := range refs.Blobs {
			if !seen[bl.Digest.String()] {
				seen[bl.Digest.String()] = true
				uniqueBytes += bl.Size
			}
		}
	}
	b.ResetTimer()
	var sent, blobs int64
	for n := 0; n < b.N; n++ {
		run := make([]Job, len(jobs))
		for i, j := range jobs {
			j.Dest = fmt.Sprintf("%s/run%d/app%d", dst.Host(), n, i%8)
			run[i] = j
		}
		rep, err := Copy(context.Background(), registry.New(registry.Options{}), registry.New(registry.Options{}), run, Options{})
		if err != nil {
			b.Fatal(err)
		}
		sent += rep.BytesSent
		blobs += rep.BlobsSent
	}
	b.StopTimer()
	secs := b.Elapsed().Seconds()
	b.ReportMetric(float64(uniqueBytes)*float64(b.N)/1e6/secs, "MB/s")
	b.ReportMetric(float64(blobs)/float64(b.N), "blobs/op")
	b.ReportMetric(float64(sent)/float64(b.N)/float64(uniqueBytes), "sent/unique")
	b.ReportMetric(float64(uniqueBytes)/1e6, "uniqueMB")
}
