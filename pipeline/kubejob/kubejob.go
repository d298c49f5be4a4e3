// Package kubejob is what `airlock kube` does: Job turns a plan made with
// --plan-only and its configuration into an Indexed Job (kube.Job) whose pods each
// copy one shard, after checking that the plan was made for the destination; Image
// builds a minimal image holding the airlock binary and pushes it through the copy
// engine, for a cluster that reaches only the mirror registry. It must not know
// FBC fields or the stages of a mirror run: it reads the plan file through
// mirror (mirror.PartitionFile).
package kubejob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/kube"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// JobOptions are airlock kube job's inputs: kube.JobOptions, with the
// configuration and the plan as files.
type JobOptions struct {
	kube.JobOptions
	ConfigPath, PlanFile string
	// RegistriesConfPath is --registries-conf: the registries.conf the pods
	// read the sources through ("": $CONTAINERS_REGISTRIES_CONF when set, else
	// none; this machine's system files are not carried).
	RegistriesConfPath string
}

// Validate checks the options of airlock kube job before any file is read:
// the configuration and the plan are given, and the manifests can be made
// (kube.JobOptions.Validate).
func (o *JobOptions) Validate() error {
	if o.ConfigPath == "" {
		return errors.New("no ImageSetConfiguration given: use -c imageset.yaml (the one --plan-only used)")
	}
	if o.PlanFile == "" {
		return errors.New("no plan given: use --plan FILE (written by airlock mirror --plan-only)")
	}
	return o.JobOptions.Validate()
}

// Job reads the configuration and the plan, checks that the plan was made
// for the destination and can be split into the shards, and returns the
// manifests (kube.Job), headed by how the plan splits. It calls Validate first.
func Job(o JobOptions) ([]byte, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	isc, err := imageset.LoadFile(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	for _, op := range isc.Mirror.Operators {
		if op.TargetCatalogSourceTemplate != "" {
			// Only the configuration and the plan go into the ConfigMap.
			return nil, fmt.Errorf("catalog %s (%s line %d): targetCatalogSourceTemplate %s is a file the pods cannot read (the Job carries only the configuration and the plan): run --finish outside the cluster, or drop the template", op.Catalog, o.ConfigPath, op.Line, op.TargetCatalogSourceTemplate)
		}
	}
	cfg, err := os.ReadFile(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	plan, part, err := mirror.PartitionFile(o.PlanFile, o.Shards)
	if err != nil {
		return nil, err
	}
	if made := location.Docker(plan.Destination); made != o.Destination {
		return nil, fmt.Errorf("plan %s was made for %s, not %s: make the plan again for this destination", o.PlanFile, made, o.Destination)
	}
	raw, err := os.ReadFile(o.PlanFile)
	if err != nil {
		return nil, err
	}
	// Compact: the ConfigMap holds at most 1 MiB.
	var plain bytes.Buffer
	if err := json.Compact(&plain, raw); err != nil {
		return nil, fmt.Errorf("plan %s: %w", o.PlanFile, err)
	}
	o.Config, o.Plan = cfg, append(plain.Bytes(), '\n')
	if o.RegistriesConf, err = registriesConf(o.RegistriesConfPath); err != nil {
		return nil, err
	}
	var c strings.Builder
	fmt.Fprintf(&c, "airlock mirror, sharded: %d shards of plan %s into %s\n", o.Shards, o.PlanFile, o.Destination)
	fmt.Fprintf(&c, "distinct blobs: %s; groups spread over shards: %d\n", humanize.Bytes(part.UniqueBytes), part.Split)
	for _, sh := range part.Shards {
		fmt.Fprintf(&c, "  shard %d: %d images, sends %s\n", sh.Index, len(sh.Images), humanize.Bytes(sh.Bytes))
	}
	c.WriteString("\n")
	o.Comment = c.String()
	return kube.Job(o.JobOptions)
}

// registriesConf is the registries.conf named by path or the environment,
// checked as airlock mirror reads it (nil when neither names one).
func registriesConf(path string) ([]byte, error) {
	conf, err := registry.LoadRegistriesConf(path)
	if err != nil {
		return nil, err
	}
	if conf.Path() == "" {
		return nil, nil
	}
	return os.ReadFile(conf.Path())
}

// ImageOptions are airlock kube image's inputs. The zero value is the safe
// one: the registry's certificate is verified and plain HTTP refused unless
// Insecure says otherwise. Destination and Binary are required; Image calls
// Validate first.
type ImageOptions struct {
	// Destination is docker://REGISTRY/REPOSITORY[:TAG] (TAG defaults to Version).
	Destination location.Location
	// Binary is the airlock executable to put in the image (a static Linux
	// build; the CLI passes its own).
	Binary  string
	Version string
	// Arch is the binary's architecture (default: this machine's).
	Arch       string
	AuthFile   string
	RetryTimes int
	// Insecure is --dest-tls-verify=false: the registry's certificate is not
	// verified and plain HTTP is allowed.
	Insecure bool
	Logger   *slog.Logger
}

// Validate checks the options of airlock kube image before anything is built.
func (o *ImageOptions) Validate() error {
	if !o.Destination.Is(location.SchemeDocker) {
		return &location.Error{Flag: "destination", Input: o.Destination.String(), Want: location.WantImage}
	}
	if o.Binary == "" {
		return errors.New("no binary: give --binary FILE, the airlock executable to put in the image")
	}
	return nil
}

// ImageResult is what airlock kube image pushed.
type ImageResult struct {
	// Reference is REGISTRY/REPOSITORY@DIGEST, for the Job's --image.
	Reference string
	Tag       string
	Size      int64
	BytesSent int64
}

// Image builds a minimal image holding the airlock binary (no container
// engine needed, layout.BuildBinaryImage) and pushes it through the copy
// engine, so that the Job can run in a cluster that reaches only the mirror
// registry. It calls Validate first.
func Image(ctx context.Context, o ImageOptions) (*ImageResult, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	ref, err := oci.ParseReference(o.Destination.Path)
	if err != nil {
		return nil, err
	}
	if ref.Digest != "" {
		return nil, fmt.Errorf("destination %s: give a tag, not a digest (the digest is the image's)", o.Destination)
	}
	tag := ref.Tag
	if ref.DefaultedTag {
		tag = o.Version
	}
	if tag == "" {
		tag = "latest"
	}
	tmp, err := os.MkdirTemp("", "airlock-kube-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	img, err := layout.BuildBinaryImage(tmp, layout.BinaryImageOptions{
		Binary: o.Binary, Entrypoint: "/airlock", Tag: tag, Arch: o.Arch,
		Labels: map[string]string{
			"org.opencontainers.image.title":   "airlock",
			"org.opencontainers.image.version": o.Version,
			"org.opencontainers.image.source":  "https://github.com/airlock-mirror/airlock",
		},
	})
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	policy := retry.Retries(o.RetryTimes)
	dst := registry.New(registry.Options{AuthFile: o.AuthFile, SkipTLSVerify: o.Insecure, TLSFlag: "--dest-tls-verify=false", Retry: policy, Logger: log})
	if err := dst.Probe(ctx, ref.Repository(), true); err != nil {
		return nil, fmt.Errorf("destination registry: %w", err)
	}
	job := transfer.Job{Source: mirror.LayoutRepoPrefix + img.LayoutDir, Digest: img.Digest, Dest: ref.Repository(), Tags: []string{tag}}
	rep, err := transfer.Copy(ctx, &mirror.SourceMux{Default: dst}, dst, []transfer.Job{job}, transfer.Options{Retry: policy, Logger: log})
	if err != nil {
		return nil, err
	}
	return &ImageResult{Reference: ref.Repository() + "@" + img.Digest.String(), Tag: tag, Size: img.Size, BytesSent: rep.BytesSent}, nil
}
