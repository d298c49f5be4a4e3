package pipeline

import (
	"fmt"
	"os"
	"strings"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/kube"
)

// KubeJobOptions are airlock kube job's inputs: kube.JobOptions, with the
// configuration and the plan as files.
type KubeJobOptions struct {
	kube.JobOptions
	ConfigPath, PlanFile string
}

// KubeJob reads the configuration and the plan, checks that the plan was made
// for the destination and can be split into the shards, and returns the
// manifests (kube.Job), headed by how the plan splits.
func KubeJob(o KubeJobOptions) ([]byte, error) {
	if o.ConfigPath == "" {
		return nil, fmt.Errorf("no ImageSetConfiguration given: use -c imageset.yaml (the one --plan-only used)")
	}
	if _, err := imageset.LoadFile(o.ConfigPath); err != nil {
		return nil, err
	}
	cfg, err := os.ReadFile(o.ConfigPath)
	if err != nil {
		return nil, err
	}
	plan, part, err := PartitionFile(o.PlanFile, o.Shards)
	if err != nil {
		return nil, err
	}
	dest := strings.TrimPrefix(o.Destination, "docker://")
	if strings.TrimSuffix(plan.Destination, "/") != strings.TrimSuffix(dest, "/") {
		return nil, fmt.Errorf("plan %s was made for docker://%s, not %s: make the plan again for this destination", o.PlanFile, plan.Destination, o.Destination)
	}
	raw, err := os.ReadFile(o.PlanFile)
	if err != nil {
		return nil, err
	}
	o.Config, o.Plan = cfg, raw
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
